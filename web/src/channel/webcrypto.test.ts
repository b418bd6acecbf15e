// @vitest-environment node
// The non-extractable WebCrypto device key works as the Noise static key (against @noble's).
import { describe, expect, it } from "vitest";

import { Handshake, prologue } from "./channel";
import { generateKeyPair, staticKey } from "./noise";
import { generateDeviceKey } from "./webcrypto";

describe("a non-extractable device key", () => {
  it("cannot be exported, and pairs and reconnects with a host", async () => {
    const device = await generateDeviceKey();
    expect(device.privateKey.extractable).toBe(false);
    await expect(crypto.subtle.exportKey("raw", device.privateKey)).rejects.toThrow();
    const host = generateKeyPair();
    const secret = crypto.getRandomValues(new Uint8Array(32));
    const p = prologue("h");
    const d = Handshake.pairInitiator(device.key, secret, host.publicKey, p);
    const h = Handshake.pairResponder(staticKey(host), secret, p);
    await h.readMessage(await d.writeMessage());
    await d.readMessage(await h.writeMessage());
    await h.readMessage(await d.writeMessage());
    expect(Buffer.from(h.remoteStatic()!).equals(Buffer.from(device.publicKey))).toBe(true);

    const d2 = Handshake.connectInitiator(device.key, host.publicKey, p);
    const h2 = Handshake.connectResponder(staticKey(host), p);
    await h2.readMessage(await d2.writeMessage());
    h2.acceptRemote();
    await d2.readMessage(await h2.writeMessage());
    const [dt, ht] = [d2.intoTransport(), h2.intoTransport()];
    expect(new TextDecoder().decode(ht.open(dt.seal(new TextEncoder().encode("hi"))[0])!)).toBe("hi");
  });

  it("refuses a low-order remote key", async () => {
    const device = await generateDeviceKey();
    await expect(Promise.resolve(device.key.dh(new Uint8Array(32)))).rejects.toThrow(/low-order/);
  });
});
