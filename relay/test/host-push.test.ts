// Push to a device that paired through the relay: the device registers its Web Push
// subscription inside its Noise channel (the same `getPush` / `setPush` as on the host's own
// origin), and the host — listening on no TCP port, reaching devices only through the relay —
// then pushes to the push service directly. The mock push service (crates/testkit, bin
// mock-push) checks the VAPID signature and decrypts with the subscription's keys: the payload
// is the session's id alone. The relay's record of the channel holds neither the subscription's
// endpoint nor its keys.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, Device, NUCLEIC, until } from "./daemon";
import { Relay } from "./support";

const MOCK_PUSH = process.env.NUCLEIC_MOCK_PUSH ?? path.join(path.dirname(NUCLEIC), "mock-push");

interface Subscription {
  endpoint: string;
  p256dh: string;
  auth: string;
}
interface Received {
  subscription: number;
  plaintext: string | null;
  problem: string | null;
  vapidSubject: string | null;
}

/** The mock push service: its subscriptions, and every message it received, as it prints them. */
class MockPush {
  readonly received: Received[] = [];
  private constructor(
    readonly child: ChildProcess,
    readonly subscriptions: Subscription[],
  ) {}

  static start(count: number): Promise<MockPush> {
    if (!existsSync(MOCK_PUSH)) throw new Error(`${MOCK_PUSH} is missing: cargo build -p nucleic-testkit --bins first`);
    const child = spawn(MOCK_PUSH, ["--subscriptions", String(count)], { stdio: ["ignore", "pipe", "inherit"] });
    return new Promise((resolve, reject) => {
      let buf = "";
      let mock: MockPush | null = null;
      const timer = setTimeout(() => reject(new Error("mock-push printed no subscriptions in 10 s")), 10_000);
      child.stdout!.on("data", (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split("\n");
        buf = lines.pop() ?? "";
        for (const line of lines.filter((l) => l.trim())) {
          const v = JSON.parse(line);
          if (v.subscriptions) {
            clearTimeout(timer);
            mock = new MockPush(child, v.subscriptions);
            resolve(mock);
          } else if (v.received) mock?.received.push(v.received);
        }
      });
      child.on("exit", (code) => reject(new Error(`mock-push exited (${code}) before printing its subscriptions`)));
    });
  }

  stop(): void {
    this.child.kill("SIGTERM");
  }
}

let relay: Relay;
let daemon: Daemon | null = null;
let push: MockPush | null = null;
beforeAll(async () => {
  relay = await Relay.start();
});
afterAll(async () => {
  await relay?.stop();
});
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
  push?.stop();
  push = null;
});

it("a relay-paired device subscribes over its channel and the host pushes it a payload with the session id alone", async () => {
  push = await MockPush.start(1);
  const [sub] = push.subscriptions;
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  expect(daemon.listeningSockets()).toEqual([]);
  const { link, hostID } = JSON.parse(daemon.cli("pair", "--json", "--name", "MARKER-phone"));
  const { device, secret } = Device.fromLink(link);
  await device.open({ mode: "pair", secret });

  // The same requests as on the host's own origin, inside the Noise channel.
  const before = await device.ok({ type: "getPush" });
  expect(before.push.subscribed).toBe(false);
  expect(before.push.vapidPublicKey).toMatch(/^[A-Za-z0-9_-]{87}$/);
  const set = await device.ok({ type: "setPush", subscription: { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }, quietHours: null });
  expect(set.push.subscribed).toBe(true);

  const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo, name: "MARKER-project" } });
  const session = await device.ok({
    type: "intent",
    intent: {
      kind: "newSession",
      projectID: project.result.projectID,
      prompt: "write MARKER-notes.txt containing MARKER-content",
      backend: "simulated",
      permissionMode: "default",
      title: "MARKER-title",
    },
  });
  const sessionID: string = session.result.sessionID;

  // The session needs a person: the host pushes, straight to the push service.
  const got = await until("a push for the approval", 20_000, () => push!.received.find((r) => r.subscription === 0));
  expect(got.problem).toBeNull();
  expect(got.vapidSubject).toBe("mailto:push@nucleic.invalid");
  expect(JSON.parse(got.plaintext!)).toEqual({ s: sessionID, v: 1 });
  const worktree = JSON.parse(daemon.cli("session", "show", sessionID)).worktree?.path ?? "";
  for (const secretText of ["MARKER", "write ", "Write", "notes.txt", daemon.repo, ...(worktree ? [worktree] : [])])
    expect(got.plaintext).not.toContain(secretText);

  // Turning it off over the channel stops the pushes.
  await device.ok({ type: "setPush", subscription: null, quietHours: null });
  expect((await device.ok({ type: "getPush" })).push.subscribed).toBe(false);
  const count = push.received.length;
  await device.ok({ type: "subscribe", sessionID, fromSeq: 1, verbosity: "full" });
  const ask = await device.wait("approvalRequested", 20_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "approvalRequested"));
  await device.ok({ type: "decide", sessionID, requestID: ask.kind.requestID, decision: { type: "allow" } });
  await device.wait("turnCompleted", 20_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "turnCompleted"));
  await new Promise((r) => setTimeout(r, 1000));
  expect(push.received.length).toBe(count);

  // The relay carried the subscription sealed: neither its endpoint nor its keys in any frame.
  const needles = [sub.endpoint, sub.p256dh, sub.auth, new URL(sub.endpoint).host].map((n) => Buffer.from(n));
  const frames = await relay.frames(hostID);
  expect(frames.length).toBeGreaterThan(5);
  for (const f of frames) {
    const b = Buffer.from(f.base64, "base64");
    for (const n of needles) expect(b.indexOf(n)).toBe(-1);
  }
}, 90_000);
