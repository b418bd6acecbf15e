// relay/README.md's "Try it locally", as written: `npx wrangler dev --ip 127.0.0.1` in relay/ (the
// committed web/dist as the app shell), a real `nucleic serve --relay ws://127.0.0.1:<port>`, and a
// device pairing through it with the link `nucleic pair` prints. Only the port differs (a free one
// instead of 8787), and wrangler's state goes to a temporary folder.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";

import { Daemon, Device, until } from "./daemon";

const relayDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let wrangler: ChildProcess | null = null;
let daemon: Daemon | null = null;
let state = "";
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
  if (wrangler && wrangler.exitCode === null) {
    wrangler.kill("SIGTERM");
    await until("wrangler to stop", 10_000, () => wrangler!.exitCode !== null || wrangler!.signalCode !== null).catch(() => wrangler?.kill("SIGKILL"));
  }
  wrangler = null;
  if (state) rmSync(state, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

it("wrangler dev serves the relay and the app, and a host and a device meet through it", async () => {
  const port = await freePort();
  state = mkdtempSync(path.join(tmpdir(), "nucleic-wrangler-"));
  let out = "";
  wrangler = spawn(path.join(relayDir, "node_modules/.bin/wrangler"), ["dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", state], {
    cwd: relayDir,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", XDG_CONFIG_HOME: state },
    stdio: ["ignore", "pipe", "pipe"],
  });
  wrangler.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  wrangler.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const origin = `http://127.0.0.1:${port}`;
  let healthy = false;
  const deadline = Date.now() + 60_000;
  while (!healthy) {
    if (wrangler.exitCode !== null) throw new Error(`wrangler dev exited (${wrangler.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`wrangler dev did not answer /healthz within 60 s:\n${out}`);
    healthy = await fetch(`${origin}/healthz`).then((r) => r.ok, () => false);
    if (!healthy) await new Promise((r) => setTimeout(r, 250));
  }
  // The app shell from the committed web/dist, with the daemon's headers.
  const shell = await fetch(`${origin}/`);
  expect(shell.status).toBe(200);
  expect(await shell.text()).toContain("<html");
  expect(shell.headers.get("content-security-policy")).toContain(`ws://127.0.0.1:${port}`);

  daemon = await Daemon.start(`ws://127.0.0.1:${port}`);
  const { link } = JSON.parse(daemon.cli("pair", "--json"));
  expect(link.startsWith(`${origin}/#pair&`)).toBe(true);
  const { device, secret } = Device.fromLink(link);
  await device.open({ mode: "pair", secret });
  const r = await device.ok({ type: "listProjects" });
  expect(r.type).toBe("projects");
}, 120_000);
