// The second reference device, examples/device_client.py (Python with `noiseprotocol`, written
// from docs/channel.md alone), against the real daemon and the relay under workerd: it checks
// the published vectors, pairs by `nucleic pair` links, is refused a reused link and a wrong
// secret, is closed 4401 when revoked and refused after, drives a session of the simulated agent
// across a dropped connection and an IK reconnect with no gap (answering the host's pings), and
// sees its replayed handshake and frames closed. Then the host's
// record and the relay's say the same: two devices paired, nothing readable crossed the relay.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, NUCLEIC } from "./daemon";
import { Relay } from "./support";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The venv's python of scripts/install-device-client.sh (run by scripts/test.sh before the
 *  relay's tests, which run without a network). */
const PYTHON =
  process.env.NUCLEIC_DEVICE_PYTHON ??
  path.join(process.env.NUCLEIC_DEVICE_CLIENT_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "nucleic/device-client"), "noiseprotocol-0.3.1/bin/python");

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

function run(args: string[], env: Record<string, string>, ms: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the device client did not finish within ${ms} ms:\n${out}`));
    }, ms);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

it("the Python device client pairs, works a session across a reconnect, and every refusal holds", async () => {
  expect(existsSync(PYTHON), `${PYTHON} is missing: run scripts/install-device-client.sh`).toBe(true);
  // Pings every 200 ms and a 1.5 s idle deadline: a device that did not answer pings would be
  // closed mid-session (1008), so its pongs are checked by effect.
  daemon = await Daemon.start(relay.url(""), { env: { NUCLEIC_PING_INTERVAL_MS: "200", NUCLEIC_IDLE_TIMEOUT_MS: "1500" } });
  const pair = `'${NUCLEIC}' pair --json --name MARKER-python`;
  const r = await run(["examples/device_client.py", daemon.repo], { NUCLEIC_HOME: daemon.home, NUCLEIC_PAIR_COMMAND: pair, NUCLEIC_CLIENT_DEADLINE: "90", NUCLEIC_CLIENT_LINGER_S: "3" }, 120_000);
  console.log(r.out);
  expect(r.code, r.out).toBe(0);
  expect(r.out).toContain("the published vectors match");
  expect(r.out).toContain("a reused link: refused with 4000");
  expect(r.out).toContain("a wrong pre-shared key: refused with 4000");
  const summary = JSON.parse(r.out.trim().split("\n").pop()!);
  expect(summary.replayedFrames).toBeGreaterThan(2);
  expect(summary.pongs).toBeGreaterThan(0);

  // The host recorded the two devices that paired, not the refused ones.
  const listed = daemon.cli("device", "list").split("\n").filter((l) => l.includes("MARKER-python"));
  expect(listed.length).toBe(2);
  // The session's transcript holds every seq the client saw.
  const transcript = readFileSync(path.join(daemon.home, "sessions", summary.sessionID, "transcript.jsonl"), "utf8");
  const seqs = transcript.trim().split("\n").map((l) => JSON.parse(l).seq as number);
  expect(seqs).toContain(summary.lastSeq);

  // The relay forwarded ciphertext only.
  const frames = await relay.frames(summary.hostID);
  expect(frames.length).toBeGreaterThan(20);
  const crossed = Buffer.concat(frames.map((f) => Buffer.from(f.base64, "base64")));
  for (const needle of ["MARKER", "listSessions", "approvalRequested", "hello", daemon.repo]) {
    expect(crossed.includes(Buffer.from(needle)), needle).toBe(false);
  }
}, 150_000);
