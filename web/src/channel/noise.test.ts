// @vitest-environment node
// The browser's Noise against the published test vectors (the subset committed in
// crates/channel/testdata, from cacophony and snow) and against itself under attack.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

import { HandshakeState, keyPairFromPrivate, staticKey, type CipherState } from "./noise";
import { Handshake, MAX_FRAME, prologue } from "./channel";
import { generateKeyPair } from "./noise";

interface Vector {
  source: string;
  protocol_name: string;
  init_prologue: string;
  resp_prologue: string;
  init_ephemeral: string;
  resp_ephemeral: string;
  init_static?: string;
  resp_static?: string;
  init_remote_static?: string;
  init_psks?: string[];
  resp_psks?: string[];
  handshake_hash?: string;
  messages: { payload: string; ciphertext: string }[];
}

const hex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const vectors: Vector[] = JSON.parse(
  readFileSync(new URL("../../../crates/channel/testdata/noise-vectors.json", import.meta.url), "utf8"),
).vectors;

describe("Noise test vectors", () => {
  it("covers the protocols Nucleic uses", () => {
    const names = new Set(vectors.map((v) => v.protocol_name));
    expect(names).toContain("Noise_XXpsk3_25519_ChaChaPoly_SHA256");
    expect(names).toContain("Noise_IK_25519_ChaChaPoly_SHA256");
  });

  for (const v of vectors) {
    it(`${v.source}: ${v.protocol_name}`, async () => {
      const keys = (k?: string) => (k ? staticKey(keyPairFromPrivate(hex(k))) : undefined);
      const init = new HandshakeState({
        protocol: v.protocol_name,
        initiator: true,
        prologue: hex(v.init_prologue),
        s: keys(v.init_static),
        rs: v.init_remote_static ? hex(v.init_remote_static) : undefined,
        psk: v.init_psks?.[0] ? hex(v.init_psks[0]) : undefined,
        fixedEphemeral: hex(v.init_ephemeral),
      });
      const resp = new HandshakeState({
        protocol: v.protocol_name,
        initiator: false,
        prologue: hex(v.resp_prologue),
        s: keys(v.resp_static),
        psk: v.resp_psks?.[0] ? hex(v.resp_psks[0]) : undefined,
        fixedEphemeral: hex(v.resp_ephemeral),
      });
      let transport: { i2r: CipherState; r2i: CipherState } | null = null;
      for (const [i, m] of v.messages.entries()) {
        const fromInitiator = i % 2 === 0;
        const payload = hex(m.payload);
        if (!transport && init.isFinished()) {
          if (v.handshake_hash) expect(toHex(init.handshakeHash())).toBe(v.handshake_hash);
          expect(toHex(resp.handshakeHash())).toBe(toHex(init.handshakeHash()));
          const [i2r, r2i] = init.split();
          const [ri2r, rr2i] = resp.split();
          // Both sides derive the same keys: check by decrypting below with the other side's.
          transport = { i2r, r2i: rr2i };
          void ri2r;
          void r2i;
        }
        let ct: Uint8Array;
        if (!transport) {
          const [w, r] = fromInitiator ? [init, resp] : [resp, init];
          ct = await w.writeMessage(payload);
          expect(toHex(await r.readMessage(ct))).toBe(m.payload);
        } else {
          const c = fromInitiator ? transport.i2r : transport.r2i;
          ct = c.encryptWithAd(new Uint8Array(0), payload);
        }
        expect(toHex(ct), `message ${i}`).toBe(m.ciphertext);
      }
    });
  }
});

async function pair() {
  const device = generateKeyPair();
  const host = generateKeyPair();
  const secret = crypto.getRandomValues(new Uint8Array(32));
  const p = prologue("host-under-test");
  const d = Handshake.pairInitiator(staticKey(device), secret, host.publicKey, p);
  const h = Handshake.pairResponder(staticKey(host), secret, p);
  await h.readMessage(await d.writeMessage());
  await d.readMessage(await h.writeMessage());
  await h.readMessage(await d.writeMessage());
  return { device, host, d: d.intoTransport(), h: h.intoTransport() };
}

describe("the channel", () => {
  it("pairs, exchanges both static keys and carries messages both ways", async () => {
    const { device, host, d, h } = await pair();
    expect(toHex(h.remoteStatic)).toBe(toHex(device.publicKey));
    expect(toHex(d.remoteStatic)).toBe(toHex(host.publicKey));
    const msg = new TextEncoder().encode("hello");
    expect(h.open(d.seal(msg)[0])).toEqual(msg);
    expect(d.open(h.seal(msg)[0])).toEqual(msg);
  });

  it("refuses a wrong pairing secret and a host that is not the link's", async () => {
    const device = generateKeyPair();
    const host = generateKeyPair();
    const p = prologue("h");
    const d = Handshake.pairInitiator(staticKey(device), new Uint8Array(32).fill(1), host.publicKey, p);
    const h = Handshake.pairResponder(staticKey(host), new Uint8Array(32).fill(2), p);
    await h.readMessage(await d.writeMessage());
    await d.readMessage(await h.writeMessage());
    await expect(h.readMessage(await d.writeMessage())).rejects.toThrow(/decryption failed/);

    const impostor = generateKeyPair();
    const d2 = Handshake.pairInitiator(staticKey(device), new Uint8Array(32), host.publicKey, p);
    const h2 = Handshake.pairResponder(staticKey(impostor), new Uint8Array(32), p);
    await h2.readMessage(await d2.writeMessage());
    await expect(d2.readMessage(await h2.writeMessage())).rejects.toThrow(/not the one in the pairing link/);
  });

  it("reconnects with IK only once the host accepts the device", async () => {
    const device = generateKeyPair();
    const host = generateKeyPair();
    const p = prologue("h");
    const d = Handshake.connectInitiator(staticKey(device), host.publicKey, p);
    const h = Handshake.connectResponder(staticKey(host), p);
    await h.readMessage(await d.writeMessage());
    expect(toHex(h.remoteStatic()!)).toBe(toHex(device.publicKey));
    await expect(h.writeMessage()).rejects.toThrow(/not accepted/);
    const h2 = Handshake.connectResponder(staticKey(host), p);
    const d2 = Handshake.connectInitiator(staticKey(device), host.publicKey, p);
    await h2.readMessage(await d2.writeMessage());
    h2.acceptRemote();
    await d2.readMessage(await h2.writeMessage());
    const [dt, ht] = [d2.intoTransport(), h2.intoTransport()];
    expect(new TextDecoder().decode(ht.open(dt.seal(new TextEncoder().encode("seq 41"))[0])!)).toBe("seq 41");
  });

  it("refuses a replayed or reordered frame, and nothing after", async () => {
    const { d, h } = await pair();
    const one = d.seal(Uint8Array.of(1))[0];
    const two = d.seal(Uint8Array.of(2))[0];
    expect(h.open(one)).toEqual(Uint8Array.of(1));
    expect(() => h.open(one)).toThrow(/decryption failed/);
    expect(() => h.open(two)).toThrow(/failed earlier/);
    const again = await pair();
    const a = again.d.seal(Uint8Array.of(1))[0];
    const b = again.d.seal(Uint8Array.of(2))[0];
    expect(() => again.h.open(b)).toThrow();
    expect(() => again.h.open(a)).toThrow();
  });

  it("frames large messages and caps them", async () => {
    const { d, h } = await pair();
    const big = Uint8Array.from({ length: 200_000 }, (_, i) => i % 251);
    const frames = d.seal(big);
    expect(frames.length).toBe(4);
    expect(frames.every((f) => f.length <= MAX_FRAME)).toBe(true);
    let got: Uint8Array | null = null;
    for (const f of frames) got = h.open(f);
    expect(got !== null && Buffer.from(got).equals(Buffer.from(big))).toBe(true);
    expect(() => h.open(new Uint8Array(MAX_FRAME + 1))).toThrow(/cap/);
  });
});
