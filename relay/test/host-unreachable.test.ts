// A relay that is unreachable (issue 12, bad input): the host keeps working locally and retries
// with growing, bounded backoff, which `nucleic doctor` shows. Down at the daemon's start, then
// up: the daemon connects by itself. Killed mid-run (SIGKILL: no close frame): the retry state
// and the growing, capped backoff show in doctor while the local CLI keeps working, and a paired
// device gets back in once the relay is back. The backoff's bound is shortened from 30 s to 2 s
// (NUCLEIC_RELAY_MAX_BACKOFF_MS, crates/cli/src/tuning.rs); its first step (0.5 s) is the real one.
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";

import { afterEach, expect, it } from "vitest";

import { Daemon, Device, sleep, until } from "./daemon";
import { Relay } from "./support";

const MAX_BACKOFF_MS = 2000;
const env = { NUCLEIC_RELAY_MAX_BACKOFF_MS: String(MAX_BACKOFF_MS) };

let relay: Relay | null = null;
let daemon: Daemon | null = null;
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
  await relay?.stop().catch(() => {});
  relay = null;
});

/** A loopback port nothing listens on (yet). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

interface Retry {
  attempt: number;
  retryInMs: number;
  lastError: string;
}

/** The retries the daemon schedules, as its status file shows them (polled: under load an
 * attempt can slip by unseen), until one at least `last` was seen. */
async function retries(d: Daemon, last: number, ms: number): Promise<Retry[]> {
  const seen = new Map<number, Retry>();
  await until(`attempt ${last} in the relay status`, ms, () => {
    const s = d.relayStatus();
    if (s?.state === "retrying" && s.retryInMs !== undefined) {
      seen.set(s.attempts, { attempt: s.attempts, retryInMs: s.retryInMs, lastError: s.lastError ?? "" });
    }
    return s?.state === "retrying" && s.attempts >= last;
  });
  return [...seen.values()].sort((a, b) => a.attempt - b.attempt);
}

/** The growth the host promises: attempt n waits 0.5 s · 2^(n-1) with ±20 % jitter, never past
 * the bound. Seen early and late attempts both, so growth and cap both show. */
function expectBackoff(r: Retry[], last: number): void {
  expect(r[0].attempt).toBeLessThanOrEqual(2);
  expect(r[r.length - 1].attempt).toBeGreaterThanOrEqual(last);
  expect(r.length).toBeGreaterThanOrEqual(3);
  for (const { attempt, retryInMs } of r) {
    const expected = Math.min(500 * 2 ** (attempt - 1), MAX_BACKOFF_MS);
    expect(retryInMs, `attempt ${attempt}`).toBeGreaterThanOrEqual(0.8 * expected - 1);
    expect(retryInMs, `attempt ${attempt}`).toBeLessThanOrEqual(Math.min(1.2 * expected, MAX_BACKOFF_MS) + 1);
  }
}

/** `nucleic doctor`'s relay line. */
function doctorRelay(d: Daemon): string {
  const line = d.doctor().split("\n").find((l) => l.startsWith("relay "));
  if (!line) throw new Error("doctor printed no relay line");
  return line;
}

/** The local CLI works: a project, and a simulated session that runs to its end. */
function workLocally(d: Daemon, prompt: string): string {
  const projects = d.cli("project", "list");
  const project = projects.trim() ? projects.split(/\s+/)[0] : d.cli("project", "add", d.repo).trim();
  const session = d.cli("session", "new", "--project", project, "--agent", "sim", prompt).split(/\s+/)[0];
  expect(session).toMatch(/^[0-9a-f-]{36}$/);
  return session;
}

it("a relay down at the start: the host works locally, backs off, and connects by itself once it is up", async () => {
  const port = await freePort();
  daemon = await Daemon.start(`ws://127.0.0.1:${port}`, { tcp: false, connected: false, env });
  const r = await retries(daemon, 4, 15_000);
  expectBackoff(r, 4);
  expect(r[r.length - 1].lastError).toMatch(/cannot reach the relay at ws:\/\/127\.0\.0\.1:\d+/);
  // Doctor shows it, from the status file (the daemon is not asked).
  expect(doctorRelay(daemon)).toMatch(/^relay\s+ws:\/\/127\.0\.0\.1:\d+ — host [0-9a-f]{64} — UNREACHABLE \(attempt \d+, next in \d+\.\d s\): cannot reach the relay/);
  // Meanwhile the host works for the local CLI (over its Unix socket: it has no TCP port).
  const session = workLocally(daemon, "say made while the relay was down");
  await until("the local session's turn", 20_000, () => /awaiting-input/.test(daemon!.cli("session", "list")));

  relay = await Relay.start({ port });
  const t0 = Date.now();
  await until("the host at the relay by itself", MAX_BACKOFF_MS + 8000, () => daemon!.relayState() === "connected");
  console.log(`the host connected ${Date.now() - t0} ms after the relay came up (bound ${MAX_BACKOFF_MS} ms + dial)`);
  expect(daemon.relayStatus()!.attempts).toBe(0);
  expect(doctorRelay(daemon)).toMatch(/— connected, 0 device channel\(s\) open$/);
  // And serves a device through it: the session made offline is there.
  const { device, secret } = Device.fromLink(JSON.parse(daemon.cli("pair", "--json")).link);
  await device.open({ mode: "pair", secret });
  const listed = await device.ok({ type: "listSessions" });
  expect(listed.sessions.map((s: { sessionID: string }) => s.sessionID)).toContain(session);
}, 60_000);

it("a relay killed mid-run: doctor shows the retries, the backoff grows to its bound, the CLI keeps working, the device comes back", async () => {
  relay = await Relay.start();
  const port = relay.port;
  daemon = await Daemon.start(relay.url(""), { tcp: false, env });
  const { device, secret } = Device.fromLink(JSON.parse(daemon.cli("pair", "--json")).link);
  await device.open({ mode: "pair", secret });
  expect(doctorRelay(daemon)).toMatch(/— connected, 1 device channel\(s\) open$/);

  await relay.kill();
  await device.wait("close when the relay dies", 5000, () => device.closed);
  // Seven attempts: 0.5, 1, 2 (bound), 2, 2, 2, 2 s with jitter — the bound holds.
  const r = await retries(daemon, 7, 30_000);
  expectBackoff(r, 7);
  const line = doctorRelay(daemon);
  expect(line).toMatch(/UNREACHABLE \(attempt \d+, next in \d+\.\d s\): cannot reach the relay/);
  const shown = Number(/attempt (\d+)/.exec(line)![1]);
  expect(shown).toBeGreaterThanOrEqual(7);
  expect(Number(/next in (\d+\.\d) s/.exec(line)![1])).toBeLessThanOrEqual(MAX_BACKOFF_MS / 1000);

  // The host keeps working locally while the relay is gone.
  const session = workLocally(daemon, "say made while the relay was dead");
  await until("the local session's turn", 20_000, () => /awaiting-input/.test(daemon!.cli("session", "list")));
  expect(daemon.relayState()).not.toBe("connected");

  relay = await Relay.start({ port });
  await until("the host back at the relay by itself", MAX_BACKOFF_MS + 8000, () => daemon!.relayState() === "connected");
  for (let i = 0; ; i++) {
    try {
      await device.open({ mode: "connect" });
      break;
    } catch (e) {
      if (i > 20) throw e;
      await sleep(250);
    }
  }
  const listed = await device.ok({ type: "listSessions" });
  expect(listed.sessions.map((s: { sessionID: string }) => s.sessionID)).toContain(session);
}, 90_000);
