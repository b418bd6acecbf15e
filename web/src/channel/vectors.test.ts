// @vitest-environment node
// The channel's published vectors (docs/channel-vectors.json, printed in docs/channel.md) against
// the web channel: the same keys, secret and ephemerals give the same handshake messages,
// handshake hashes and frames byte for byte, each opens on the other side, the framing inside a
// channel message encodes and decodes as the page says, and the vector's pairing link parses.
// The Rust channel checks the same file (crates/channel/tests/channel/spec_vectors.rs).
import { readFileSync } from "node:fs";
import { sha256 } from "@noble/hashes/sha2.js";
import { describe, expect, it } from "vitest";

import { Handshake, MODE_CONNECT, MODE_PAIR, PAIRING_PROTOCOL, CONNECT_PROTOCOL, type Transport, prologue } from "./channel";
import { keyPairFromPrivate, staticKey } from "./noise";
import { decode, encodeClose, encodeText } from "../remote/framing";
import { parsePairingLink, toBase64Url } from "../remote/link";

interface Frame {
  what: string;
  from: "device" | "host";
  nonce: number;
  message: string;
  plaintext: string;
  frame: string;
}
const v = JSON.parse(readFileSync(new URL("../../../docs/channel-vectors.json", import.meta.url), "utf8"));
const hex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const host = keyPairFromPrivate(hex(v.keys.hostStaticPrivate));
const device = keyPairFromPrivate(hex(v.keys.deviceStaticPrivate));
const p = prologue(v.hostID);

/** Seals each vector frame on its sender and opens it on the other side, in order. */
function frames(list: Frame[], d: Transport, h: Transport): void {
  for (const f of list) {
    const [from, to] = f.from === "device" ? [d, h] : [h, d];
    const sealed = from.seal(hex(f.message));
    expect(sealed.length, f.what).toBe(1);
    expect(toHex(sealed[0]), f.what).toBe(f.frame);
    expect(toHex(to.open(sealed[0])!), f.what).toBe(f.message);
    expect(f.plaintext, f.what).toBe(`00${f.message}`);
  }
}

describe("the channel's published vectors", () => {
  it("keys and prologue", () => {
    expect(toHex(host.publicKey)).toBe(v.keys.hostStaticPublic);
    expect(toHex(device.publicKey)).toBe(v.keys.deviceStaticPublic);
    expect(toHex(p)).toBe(v.prologue);
    expect(v.pairing.protocol).toBe(PAIRING_PROTOCOL);
    expect(v.reconnect.protocol).toBe(CONNECT_PROTOCOL);
  });

  it("pairing (XXpsk3): messages, handshake hash and frames", async () => {
    const secret = hex(v.keys.pairingSecret);
    const d = Handshake.forTestVectorsOnly("pairing", true, staticKey(device), { prologue: p, ephemeral: hex(v.keys.devicePairingEphemeral), secret, hostKey: host.publicKey });
    const h = Handshake.forTestVectorsOnly("pairing", false, staticKey(host), { prologue: p, ephemeral: hex(v.keys.hostPairingEphemeral), secret });
    const m1 = await d.writeMessage();
    expect(toHex(m1)).toBe(v.pairing.message1);
    expect(toHex(Uint8Array.of(MODE_PAIR, ...m1))).toBe(v.pairing.firstFrame);
    expect((await h.readMessage(m1)).length).toBe(0);
    const m2 = await h.writeMessage();
    expect(toHex(m2)).toBe(v.pairing.message2);
    await d.readMessage(m2);
    const m3 = await d.writeMessage();
    expect(toHex(m3)).toBe(v.pairing.message3);
    await h.readMessage(m3);
    const [td, th] = [d.intoTransport(), h.intoTransport()];
    expect(toHex(td.handshakeHash)).toBe(v.pairing.handshakeHash);
    expect(toHex(th.remoteStatic)).toBe(v.keys.deviceStaticPublic);
    frames(v.pairing.frames, td, th);
  });

  it("reconnect (IK): messages, handshake hash, frames and a message split in two", async () => {
    const d = Handshake.forTestVectorsOnly("connect", true, staticKey(device), { prologue: p, ephemeral: hex(v.keys.deviceReconnectEphemeral), hostKey: host.publicKey });
    const h = Handshake.forTestVectorsOnly("connect", false, staticKey(host), { prologue: p, ephemeral: hex(v.keys.hostReconnectEphemeral) });
    const k1 = await d.writeMessage();
    expect(toHex(k1)).toBe(v.reconnect.message1);
    expect(toHex(Uint8Array.of(MODE_CONNECT, ...k1))).toBe(v.reconnect.firstFrame);
    await h.readMessage(k1);
    expect(toHex(h.remoteStatic()!)).toBe(v.keys.deviceStaticPublic);
    h.acceptRemote();
    const k2 = await h.writeMessage();
    expect(toHex(k2)).toBe(v.reconnect.message2);
    await d.readMessage(k2);
    const [td, th] = [d.intoTransport(), h.intoTransport()];
    expect(toHex(th.handshakeHash)).toBe(v.reconnect.handshakeHash);
    frames(v.reconnect.frames, td, th);
    const big = new Uint8Array(v.reconnect.split.messageLength).fill(0x61);
    big[0] = 0x00;
    const parts = th.seal(big);
    expect(parts.map((f) => f.length)).toEqual(v.reconnect.split.frameLengths);
    expect(parts.map((f) => toHex(sha256(f)))).toEqual(v.reconnect.split.frameSha256);
    expect(td.open(parts[0])).toBeNull();
    expect(td.open(parts[1])!.length).toBe(big.length);
  });

  it("the framing inside channel messages", () => {
    const [hello, ping, pong, close] = v.pairing.frames as Frame[];
    const text = new TextDecoder().decode(hex(hello.message).subarray(1));
    expect(toHex(encodeText(text))).toBe(hello.message);
    expect(decode(hex(hello.message))).toEqual({ kind: "text", text });
    expect(decode(hex(ping.message))).toEqual({ kind: "ping" });
    expect(decode(hex(pong.message))).toEqual({ kind: "pong" });
    expect(decode(hex(close.message))).toEqual({ kind: "close", code: 4401, reason: "device revoked: pair again" });
    expect(toHex(encodeClose(4401, "device revoked: pair again"))).toBe(close.message);
    // A ping or pong with a body, and an unknown kind, are malformed.
    expect(decode(Uint8Array.of(0x02, 0))).toBeNull();
    expect(decode(Uint8Array.of(0x09))).toBeNull();
  });

  it("the pairing link parses to the vector's fields", () => {
    const url = new URL(v.link.url);
    expect(url.origin).toBe(v.link.app);
    const link = parsePairingLink(url.hash)!;
    expect(link).not.toBeNull();
    expect(link.relay).toBe(v.link.relay);
    expect(link.hostID).toBe(v.hostID);
    expect(toHex(link.hostKey)).toBe(v.keys.hostStaticPublic);
    expect(toHex(link.secret)).toBe(v.keys.pairingSecret);
    expect(toBase64Url(link.secret)).toBe(v.link.secret);
    expect(toBase64Url(link.hostKey)).toBe(v.link.hostKey);
    expect(link.name).toBe(v.link.name);
    expect(link.hostName).toBe(v.link.machine);
    expect(link.lan).toEqual([]);
  });
});
