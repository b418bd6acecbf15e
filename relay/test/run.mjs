#!/usr/bin/env node
// Runs the relay's tests inside a loopback-only network namespace (`unshare --net`, then
// `ip link set lo up`), as web/e2e/run.mjs does: the relay (workerd, from npm) and its clients
// can reach nothing but 127.0.0.1. Needs root, util-linux and iproute2.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const relay = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);

if (!process.env.NUCLEIC_RELAY_ISOLATED) {
  const inner = `ip link set lo up && exec node test/run.mjs ${args.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")}`;
  const r = spawnSync("unshare", ["--net", "--", "sh", "-c", inner], {
    cwd: relay,
    stdio: "inherit",
    env: { ...process.env, NUCLEIC_RELAY_ISOLATED: "1" },
  });
  if (r.error) {
    console.error(`relay tests: could not enter a loopback-only namespace (unshare --net): ${r.error.message}`);
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}

const vitest = path.join(relay, "node_modules", "vitest", "vitest.mjs");
const r = spawnSync(process.execPath, [vitest, "run", ...args], { cwd: relay, stdio: "inherit" });
process.exit(r.status ?? 1);
