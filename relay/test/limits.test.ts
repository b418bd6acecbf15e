// The relay's token buckets against its own clock stepping: a wall clock set back by an hour
// (an NTP correction on the relay's machine) must not starve a room for an hour.
import { afterEach, expect, it, vi } from "vitest";

import { Bucket } from "../src/limits";

afterEach(() => {
  vi.restoreAllMocks();
});

it("a relay clock stepped back an hour neither drains nor overfills a bucket", () => {
  let now = 1_800_000_000_000;
  vi.spyOn(Date, "now").mockImplementation(() => now);
  const b = new Bucket(10, 5);
  for (let i = 0; i < 10; i++) expect(b.take()).toBe(true);
  expect(b.take()).toBe(false);
  now -= 3_600_000;
  // Refills from the new reading on: one second later, 5 tokens.
  expect(b.take()).toBe(false);
  now += 1000;
  for (let i = 0; i < 5; i++) expect(b.take()).toBe(true);
  expect(b.take()).toBe(false);
  // And a clock stepped forward an hour refills to the burst, never beyond.
  now += 3_600_000;
  for (let i = 0; i < 10; i++) expect(b.take()).toBe(true);
  expect(b.take()).toBe(false);
});
