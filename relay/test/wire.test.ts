// The relay's host check against the Rust host's answer (crates/channel/src/relay.rs): the
// committed fixture is RelayKey::from_bytes(&[7; 32]).answer(&[1; 32]), asserted byte for byte by
// the Rust test, verified here by the relay's own function.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";

import { DATA, OPEN, parseHostFrame, streamFrame, verifyHostAuth } from "../src/wire";

const hex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const fixture = JSON.parse(readFileSync(new URL("../../crates/channel/testdata/relay-auth.json", import.meta.url), "utf8"));

it("accepts the Rust host's answer, and nothing altered", async () => {
  const auth = hex(fixture.auth);
  expect(await verifyHostAuth(fixture.room, hex(fixture.nonce), auth)).toBe(true);
  expect(await verifyHostAuth(fixture.room, new Uint8Array(32).fill(2), auth)).toBe(false);
  expect(await verifyHostAuth(fixture.room.replace(/^./, "0") === fixture.room ? fixture.room.replace(/^./, "1") : fixture.room.replace(/^./, "0"), hex(fixture.nonce), auth)).toBe(false);
  const tampered = auth.slice();
  tampered[tampered.length - 1] ^= 1;
  expect(await verifyHostAuth(fixture.room, hex(fixture.nonce), tampered)).toBe(false);
  expect(await verifyHostAuth(fixture.room, hex(fixture.nonce), auth.subarray(0, 40))).toBe(false);
});

// The relay frames of the channel's published vectors (docs/channel-vectors.json, printed in
// docs/channel.md): OPEN, DATA carrying the pairing first frame, and the host's CLOSE, stream 42.
const vectors = JSON.parse(readFileSync(new URL("../../docs/channel-vectors.json", import.meta.url), "utf8"));

it("makes and reads the relay frames of the channel's vectors", () => {
  const toHex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  const [open, data, close] = vectors.relay.map((r: { bytes: string }) => r.bytes);
  expect(toHex(streamFrame(OPEN, 42))).toBe(open);
  expect(toHex(streamFrame(DATA, 42, hex(vectors.pairing.firstFrame)))).toBe(data);
  const parsed = parseHostFrame(hex(data));
  expect(parsed).toEqual({ type: "data", stream: 42, payload: hex(vectors.pairing.firstFrame) });
  expect(parseHostFrame(hex(close))).toEqual({ type: "close", stream: 42 });
});
