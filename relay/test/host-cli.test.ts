// A terminal as a paired device, through the relay: the real `nucleic remote pair LINK` (the
// Rust device side, nucleic-client) pairs with a real `nucleic serve --relay` under workerd, and
// `nucleic --remote HOST …` runs ordinary commands there — a project added, a session started,
// its approval answered, its diff read. The relay's record of every frame holds none of it.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, NUCLEIC, sleep } from "./daemon";
import { Relay } from "./support";

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

/** `nucleic <args>` as the device (its own home), within 30 s. */
function device(home: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NUCLEIC, args, { env: { ...process.env, NUCLEIC_HOME: home }, encoding: "utf8", timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function ok(home: string, ...args: string[]): string {
  const r = device(home, ...args);
  if (r.status !== 0) throw new Error(`nucleic ${args.join(" ")}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

async function poll<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(200);
  }
}

it("a terminal pairs through the relay and works a session there with --remote; the relay sees ciphertext only", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  const pairing = JSON.parse(daemon.cli("pair", "--json", "--name", "MARKER-terminal"));
  const home = path.join(mkdtempSync(path.join(tmpdir(), "nucleic-device-")), "home");
  const paired = ok(home, "remote", "pair", pairing.link);
  const short = pairing.hostID.slice(0, 12);
  expect(paired).toContain(`--remote ${short}`);
  expect(daemon.cli("device", "list")).toContain("MARKER-terminal");

  const project = ok(home, "--remote", short, "project", "add", daemon.repo).trim();
  const session = ok(home, "--remote", short, "session", "new", "--project", project, "--agent", "sim", "write MARKER-notes.txt containing MARKER-content")
    .split(/\s+/)[0];
  await poll("the approval", 20_000, () => (JSON.parse(ok(home, "--remote", short, "session", "show", session)).pendingApprovals === 1 ? true : undefined));
  ok(home, "--remote", short, "session", "approve", session);
  const diff = await poll("the write in the diff", 20_000, () => {
    const d = ok(home, "--remote", short, "session", "diff", session, "--patch");
    return d.includes("+MARKER-content") ? d : undefined;
  });
  expect(diff).toContain("MARKER-notes.txt");

  const needles = ["MARKER-notes", "MARKER-content", "MARKER-repo", "MARKER-terminal", "write MARKER", daemon.token()].map((m) => Buffer.from(m));
  needles.push(Buffer.from(new URL(pairing.link).hash.match(/[&]s=([^&]+)/)![1]));
  const frames = await relay.frames(pairing.hostID);
  expect(frames.length).toBeGreaterThan(20);
  for (const f of frames) {
    const b = Buffer.from(f.base64, "base64");
    for (const n of needles) expect(b.indexOf(n)).toBe(-1);
  }

  // Revoked on the host: the next command through the relay is refused.
  const id = daemon.cli("device", "list").split("\n").find((l) => l.includes("MARKER-terminal"))!.split(/\s+/)[0];
  daemon.cli("device", "revoke", id);
  const refused = device(home, "--remote", short, "session", "list");
  expect(refused.status).toBe(2);
  expect(refused.stderr).toContain("refused this device");
}, 120_000);

it("a terminal's attach through the relay rides out a relay restart: it reconnects (IK) and follows the turn to its end", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  const pairing = JSON.parse(daemon.cli("pair", "--json", "--name", "MARKER-attach"));
  const home = path.join(mkdtempSync(path.join(tmpdir(), "nucleic-device-")), "home");
  ok(home, "remote", "pair", pairing.link);
  const short = pairing.hostID.slice(0, 12);
  const project = ok(home, "--remote", short, "project", "add", daemon.repo).trim();
  const session = ok(home, "--remote", short, "session", "new", "--project", project, "--agent", "sim", "stream 24 and say MARKER-end").split(/\s+/)[0];
  const attach = spawn(NUCLEIC, ["--remote", short, "session", "attach", session, "--until-idle"], {
    env: { ...process.env, NUCLEIC_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  attach.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  attach.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => attach.on("exit", (code) => resolve(code)));
  await poll("some streaming", 20_000, () => (out.length > 40 ? true : undefined));
  expect(out, "the restart comes mid-turn").not.toContain("turn done");
  await relay.restart();
  const code = await Promise.race([exited, sleep(60_000).then(() => "timeout" as const)]);
  if (code === "timeout") attach.kill("SIGKILL");
  expect(code, `attach: ${err}`).toBe(0);
  expect(out).toContain("turn done");
}, 120_000);
