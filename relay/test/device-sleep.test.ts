// A phone that sleeps mid-session (issue 12, bad input), then comes back and catches up. The
// sleep is simulated as a suspended app: its socket falls silent — no close frame, no FIN, the
// kernel still acknowledging what arrives — while the session goes on. The host notices by its
// keepalive (an in-channel ping every interval, an idle deadline for an answer), closes the
// device's channel and has the relay close its socket, freeing both. The device then reconnects
// with a fresh IK handshake and resumes from its seq cursor with no gap and no duplicate.
//
// Timers are shortened: the host pings every 1 s and gives up after 3 s of silence instead of
// 20 s and 60 s (NUCLEIC_PING_INTERVAL_MS / NUCLEIC_IDLE_TIMEOUT_MS, crates/cli/src/tuning.rs),
// and the phone sleeps ~7 s instead of an hour: past the idle deadline nothing else happens to
// a sleeping device (its stream is gone; the session's events wait in the transcript).
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, Device, sleep, until } from "./daemon";
import { Relay } from "./support";

const PING_MS = 1000;
const IDLE_MS = 3000;

let relay: Relay;
let daemon: Daemon | null = null;
beforeAll(async () => {
  relay = await Relay.start();
});
afterAll(async () => {
  await relay?.stop();
});
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
});

function lastSeq(d: Daemon, session: string): number {
  return JSON.parse(d.cli("session", "show", session)).lastSeq;
}

it("a device silent mid-session is freed by the host's idle deadline, then reconnects with IK and catches up exactly", async () => {
  daemon = await Daemon.start(relay.url(""), {
    env: { NUCLEIC_PING_INTERVAL_MS: String(PING_MS), NUCLEIC_IDLE_TIMEOUT_MS: String(IDLE_MS) },
  });
  const { device, secret } = Device.fromLink(JSON.parse(daemon.cli("pair", "--json")).link);
  await device.open({ mode: "pair", secret });
  const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo } });
  const created = await device.ok({
    type: "intent",
    intent: { kind: "newSession", projectID: project.result.projectID, prompt: "stream 60 and say hi", backend: "simulated", permissionMode: "default" },
  });
  const session: string = created.result.sessionID;
  await device.ok({ type: "subscribe", sessionID: session, fromSeq: 1, verbosity: "full" });
  await device.wait("some streaming", 20_000, () => device.seqs(session).length > 10);
  // Awake, the device answers the host's pings: it outlives several idle deadlines.
  await sleep(IDLE_MS + PING_MS);
  expect(device.closed).toBeNull();
  expect(daemon.relayStatus()!.devices).toBe(1);
  const before = device.socket!.handshakeHash!;

  device.sleep();
  const asleep = performance.now();
  const seqAtSleep = lastSeq(daemon, session);
  // The host's idle deadline frees the silent device's channel (doctor's count drops to 0) …
  await until("the host to free the silent device", IDLE_MS + PING_MS + 5000, () => daemon!.relayStatus()?.devices === 0);
  const freedAfter = performance.now() - asleep;
  console.log(`the host freed the silent device ${freedAfter.toFixed(0)} ms after it fell silent (idle deadline ${IDLE_MS} ms)`);
  // … by that deadline: not before the device's last frame was IDLE_MS old (it spoke at most a
  // ping interval before falling silent).
  expect(freedAfter).toBeGreaterThanOrEqual(IDLE_MS - PING_MS - 100);
  // The host's own relay connection is untouched, and the session goes on.
  expect(daemon.relayState()).toBe("connected");
  await sleep(3000);
  expect(device.closed).toBeNull(); // the page saw nothing: it is asleep
  expect(lastSeq(daemon, session)).toBeGreaterThan(seqAtSleep + 10);

  // Awake: the socket delivers what it buffered, then the host's close inside the channel and
  // the relay's close of the socket (both sent while the device slept).
  device.awake();
  await device.wait("close after waking", 5000, () => device.closed);
  expect(device.closed!.code).toBe(1008);
  expect(device.closed!.reason).toMatch(/^idle: nothing received for 3 s/);
  await until("the relay's close of the socket", 5000, () => device.rawClose);
  expect(device.rawClose).toBe(4000);

  // Back: a fresh IK handshake (new ephemeral keys, new handshake hash), then resume from the
  // cursor.
  const cursor = Math.max(...device.seqs(session));
  await device.open({ mode: "connect" });
  expect(Buffer.from(device.socket!.handshakeHash!).equals(Buffer.from(before))).toBe(false);
  await until("the host to count the device again", 5000, () => daemon!.relayStatus()?.devices === 1);
  await device.ok({ type: "subscribe", sessionID: session, fromSeq: cursor + 1, verbosity: "full" });
  await device.wait("turnCompleted", 60_000, () => device.events.get(session)?.find((e) => e.kind.type === "turnCompleted"));
  const seqs = device.seqs(session);
  expect(seqs.length).toBeGreaterThan(cursor);
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
}, 120_000);

it("a device whose socket never hears the close (a NAT forgot the connection) gives up on the silence itself and catches up", async () => {
  daemon = await Daemon.start(relay.url(""), {
    env: { NUCLEIC_PING_INTERVAL_MS: String(PING_MS), NUCLEIC_IDLE_TIMEOUT_MS: String(IDLE_MS) },
  });
  const { device, secret } = Device.fromLink(JSON.parse(daemon.cli("pair", "--json")).link);
  // The cockpit waits 50 s for anything from a host that pings every 20 s; here 4 s for 1 s.
  device.silenceMs = 4000;
  await device.open({ mode: "pair", secret });
  const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo } });
  const created = await device.ok({
    type: "intent",
    intent: { kind: "newSession", projectID: project.result.projectID, prompt: "stream 60 and say hi", backend: "simulated", permissionMode: "default" },
  });
  const session: string = created.result.sessionID;
  await device.ok({ type: "subscribe", sessionID: session, fromSeq: 1, verbosity: "full" });
  await device.wait("some streaming", 20_000, () => device.seqs(session).length > 10);
  // Awake and answering pings, the watchdog never fires.
  await sleep(5000);
  expect(device.closed).toBeNull();

  // Asleep, and the socket stays dead after waking: nothing it buffered ever reaches the page.
  const dead = device.raw!;
  device.sleep();
  const asleep = performance.now();
  await device.wait("close by the device's own silence deadline", 10_000, () => device.closed);
  const gaveUp = performance.now() - asleep;
  expect(device.closed!.code).toBe(4408);
  expect(device.closed!.reason).toBe("nothing from the host for 4 s");
  // The last frame it heard was at most a ping interval before it fell silent.
  expect(gaveUp).toBeGreaterThanOrEqual(4000 - PING_MS - 100);
  expect(gaveUp).toBeLessThan(4000 + 2000);
  dead.terminate();

  const cursor = Math.max(...device.seqs(session));
  await device.open({ mode: "connect" });
  await device.ok({ type: "subscribe", sessionID: session, fromSeq: cursor + 1, verbosity: "full" });
  await device.wait("turnCompleted", 60_000, () => device.events.get(session)?.find((e) => e.kind.type === "turnCompleted"));
  const seqs = device.seqs(session);
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
}, 120_000);
