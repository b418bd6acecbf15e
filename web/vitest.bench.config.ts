// Performance figures of the cockpit in a real browser (docs/benchmarks.md): `npm run bench`.
// Run through e2e/run.mjs --bench, which isolates it in a loopback-only namespace.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "node",
    include: ["e2e/perf.bench.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    pool: "forks",
    reporters: ["verbose"],
  },
});
