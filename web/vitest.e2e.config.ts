// The browser suite: real `nucleic` host, real Chromium (Debian's), driven by playwright-core.
// Run through `npm run e2e` (e2e/run.mjs), which isolates it in a loopback-only namespace.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "node",
    include: ["e2e/**/*.e2e.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // One retry: once (of ~15 full runs) two pages in a row waited >30 s to come online and
    // the cause was not found; a retry that passes is reported, a real failure still fails.
    retry: 1,
    pool: "forks",
    reporters: ["verbose"],
  },
});
