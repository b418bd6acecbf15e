// The relay's host check against the Rust host's answer (crates/channel/src/relay.rs): the
// committed fixture is RelayKey::from_bytes(&[7; 32]).answer(&[1; 32]), asserted byte for byte by
// the Rust test, verified here by the relay's own function.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";

import { verifyHostAuth } from "../src/wire";

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
