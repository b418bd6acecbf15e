import { describe, expect, it } from "vitest";

import { decode, encodeClose, encodeText } from "./framing";
import { parsePairingLink, toBase64Url } from "./link";

const key = new Uint8Array(32).fill(1);
const secret = new Uint8Array(32).fill(2);
const good = `#pair&r=ws%3A%2F%2F127.0.0.1%3A8787&h=${"ab".repeat(32)}&k=${toBase64Url(key)}&s=${toBase64Url(secret)}&n=my%20phone`;

describe("pairing links", () => {
  it("parses what `nucleic pair` prints", () => {
    const l = parsePairingLink(good)!;
    expect(l.relay).toBe("ws://127.0.0.1:8787");
    expect(l.hostID).toBe("ab".repeat(32));
    expect(l.hostKey).toEqual(key);
    expect(l.secret).toEqual(secret);
    expect(l.name).toBe("my phone");
    expect(l.lan).toEqual([]);
    const withLan = parsePairingLink(`${good}&l=ws%3A%2F%2F192.168.1.5%3A7879&l=javascript%3Aalert(1)&l=ws%3A%2F%2Fbox.tail.ts.net`)!;
    expect(withLan.lan).toEqual(["ws://192.168.1.5:7879", "ws://box.tail.ts.net"]);
    expect(l.hostName).toBeUndefined();
    expect(parsePairingLink(`${good}&m=studio%20box`)!.hostName).toBe("studio box");
    expect(parsePairingLink(`${good}&m=a%1B%5B31mb%0A${"x".repeat(100)}`)!.hostName).toBe(`a[31mb${"x".repeat(58)}`);
  });

  it("refuses malformed links", () => {
    expect(parsePairingLink("#/s/abc")).toBeNull();
    expect(parsePairingLink(good.replace("ws%3A", "http%3A"))).toBeNull();
    expect(parsePairingLink(good.replace("h=abab", "h=zzab"))).toBeNull();
    expect(parsePairingLink(good.replace(toBase64Url(secret), toBase64Url(secret.subarray(1))))).toBeNull();
    expect(parsePairingLink(good.replace(toBase64Url(key), "!!"))).toBeNull();
  });
});

describe("channel framing", () => {
  it("matches the host's framing (crates/server/src/remote/framing.rs)", () => {
    expect(Array.from(encodeText("{}"))).toEqual([0, 123, 125]);
    expect(Array.from(encodeClose(4401, "r"))).toEqual([1, 0x11, 0x31, 114]);
    expect(decode(encodeText('{"a":1}'))).toEqual({ kind: "text", text: '{"a":1}' });
    expect(decode(encodeClose(4401, "revoked"))).toEqual({ kind: "close", code: 4401, reason: "revoked" });
    expect(decode(Uint8Array.of(2))).toEqual({ kind: "ping" });
    expect(decode(Uint8Array.of(0, 0xff))).toBeNull();
    expect(decode(Uint8Array.of(9))).toBeNull();
    expect(decode(Uint8Array.of(2, 0))).toBeNull();
    expect(decode(new Uint8Array(0))).toBeNull();
  });
});
