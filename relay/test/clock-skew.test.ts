// Clock skew (issue 12, bad input). What depends on a clock, and whose:
// - the pairing link's expiry: the host's monotonic clock (crates/server/src/remote/pairing.rs,
//   `Instant`); the link carries no time and the device never judges it;
// - the handshakes and the channel: no clock at all (Noise has no timestamps; replay is refused
//   by nonces and fresh ephemeral keys), and the relay's challenge is a nonce, not a time;
// - timeouts (handshake, idle, backoff): durations on each side's own monotonic timers;
// - the relay's rate buckets and its host-authentication deadline: the relay's own clock
//   (relay/test/limits.test.ts covers it stepping back).
// So a device whose clock is hours off pairs, reconnects and works; and an expired link is
// refused by the host's clock even when the device's clock says it is minutes old. The device
// runs in this process: its clock is skewed by replacing `Date` here.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, Device, sleep } from "./daemon";
import { Relay } from "./support";

const HOUR = 3_600_000;

let relay: Relay;
let daemon: Daemon | null = null;
let restoreClock: (() => void) | null = null;
beforeAll(async () => {
  relay = await Relay.start();
});
afterAll(async () => {
  await relay?.stop();
});
afterEach(async () => {
  restoreClock?.();
  restoreClock = null;
  await daemon?.stop();
  daemon = null;
});

/** Sets this process's wall clock (`Date`) `ms` off; returns the undo. Timers are unaffected. */
function skewClock(ms: number): () => void {
  const RealDate = Date;
  class SkewedDate extends RealDate {
    constructor(...args: ConstructorParameters<DateConstructor> | []) {
      if (args.length === 0) super(RealDate.now() + ms);
      else super(...(args as [string | number | Date]));
    }
    static now(): number {
      return RealDate.now() + ms;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
  };
}

function link(d: Daemon, ...extra: string[]): string {
  return JSON.parse(d.cli("pair", "--json", ...extra)).link;
}

it("devices whose clocks are hours ahead or behind pair, reconnect and work a session", async () => {
  daemon = await Daemon.start(relay.url(""));
  const project = daemon.cli("project", "add", daemon.repo).trim();
  for (const [name, skew] of [
    ["ahead", 9 * HOUR],
    ["behind", -9 * HOUR],
  ] as const) {
    restoreClock = skewClock(skew);
    expect(Math.abs(Date.now() - performance.timeOrigin - performance.now() - skew)).toBeLessThan(1000);
    const { device, secret } = Device.fromLink(link(daemon, "--name", `clock-${name}`));
    await device.open({ mode: "pair", secret });
    const created = await device.ok({
      type: "intent",
      intent: { kind: "newSession", projectID: project, prompt: `stream 8 and say ${name}`, backend: "simulated", permissionMode: "default" },
    });
    const session: string = created.result.sessionID;
    await device.ok({ type: "subscribe", sessionID: session, fromSeq: 1, verbosity: "full" });
    await device.wait("some events", 20_000, () => device.seqs(session).length > 3);
    // A reconnect (IK) mid-stream under the same skew, resuming from the cursor.
    device.socket!.close();
    const cursor = Math.max(...device.seqs(session));
    await device.open({ mode: "connect" });
    await device.ok({ type: "subscribe", sessionID: session, fromSeq: cursor + 1, verbosity: "full" });
    const done = await device.wait("turnCompleted", 30_000, () => device.events.get(session)?.find((e) => e.kind.type === "turnCompleted"));
    const seqs = device.seqs(session);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    // Event times are the host's clock, not the device's: within seconds of the real time.
    restoreClock();
    restoreClock = null;
    expect(Math.abs(Date.parse(done.at) - Date.now())).toBeLessThan(60_000);
    expect(daemon.cli("device", "list")).toContain(`clock-${name}`);
  }
}, 90_000);

it("an expired link is refused by the host's clock, even when the device's clock calls it fresh", async () => {
  daemon = await Daemon.start(relay.url(""));
  // A 1 s link, tried after 1.5 s by a device whose clock runs an hour behind (by its clock the
  // link is not even issued yet, let alone expired): refused.
  const expired = link(daemon, "--ttl-secs", "1");
  restoreClock = skewClock(-HOUR);
  const late = Device.fromLink(expired);
  await sleep(1500);
  await expect(late.device.open({ mode: "pair", secret: late.secret })).rejects.toThrow(/4401/);
  restoreClock();
  // A fresh link tried by a device whose clock is a day ahead (by its clock long expired):
  // accepted, since the host's clock says it is fresh.
  restoreClock = skewClock(24 * HOUR);
  const fresh = Device.fromLink(link(daemon, "--ttl-secs", "60"));
  await fresh.device.open({ mode: "pair", secret: fresh.secret });
  const r = await fresh.device.ok({ type: "listProjects" });
  expect(r.type).toBe("projects");
  expect(daemon.cli("device", "list").split("\n").filter((l) => l.includes("paired device")).length).toBe(1);
}, 60_000);
