#!/usr/bin/env node
// Runs the browser suite inside a loopback-only network namespace (`unshare --net`, then
// `ip link set lo up`), so neither the host, the agents nor Chromium can reach anything but
// 127.0.0.1. Needs root (CI runs as root), util-linux and iproute2.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const web = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);

if (!process.env.NUCLEIC_E2E_ISOLATED) {
  const inner = `ip link set lo up && exec node e2e/run.mjs ${args.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")}`;
  const r = spawnSync("unshare", ["--net", "--", "sh", "-c", inner], {
    cwd: web,
    stdio: "inherit",
    env: { ...process.env, NUCLEIC_E2E_ISOLATED: "1" },
  });
  if (r.error) {
    console.error(`e2e: could not enter a loopback-only namespace (unshare --net): ${r.error.message}`);
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}

const vitest = path.join(web, "node_modules", "vitest", "vitest.mjs");
// `--bench` runs the performance figures (e2e/perf.bench.ts) instead of the tests.
const bench = args.includes("--bench");
const rest = args.filter((a) => a !== "--bench");
const config = bench ? "vitest.bench.config.ts" : "vitest.e2e.config.ts";
const r = spawnSync(process.execPath, [vitest, "run", "--config", config, ...rest], {
  cwd: web,
  stdio: "inherit",
});
process.exit(r.status ?? 1);
