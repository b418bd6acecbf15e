/** The cockpit driving the real Claude Code CLI (pinned 2.1.332) against Nucleic's own mock
 *  Anthropic server, all inside the loopback-only namespace: create a Claude session from the
 *  UI, approve its Write from the approval bar, see the file in the diff, merge it. */
import path from "node:path";

import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";

import { type Demo, git, launch, pageErrors, pinnedClaude, signedInPage, startDemo, startMockAnthropic, tempDir } from "./harness";

let browser: Browser;
let demo: Demo;
let mock: { url: string; stop(): Promise<void> };

beforeAll(async () => {
  browser = await launch();
  mock = await startMockAnthropic();
  const scratch = tempDir("nucleic-e2e-claude-");
  // The offline environment from shared/reference (testkit::agents::claude_offline_env).
  const agentEnv: Record<string, string> = {
    HOME: path.join(scratch, "home"),
    XDG_RUNTIME_DIR: path.join(scratch, "run"),
    CLAUDE_CODE_TMPDIR: path.join(scratch, "tmp"),
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: "sk-test",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_MAX_RETRIES: "1",
    DISABLE_AUTOUPDATER: "1",
  };
  const { mkdirSync } = await import("node:fs");
  for (const d of ["home", "run", "tmp"]) mkdirSync(path.join(scratch, d), { recursive: true });
  demo = await startDemo({
    noSessions: true,
    args: ["--claude", pinnedClaude(), ...Object.entries(agentEnv).flatMap(([k, v]) => ["--agent-env", `${k}=${v}`])],
  });
});

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  await mock?.stop();
});

it("a real Claude session from the UI: approve its Write, see the diff, merge", async () => {
  const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
  await page.click("[data-testid=new-session]");
  await page.selectOption("select[name=backend]", "claudeCode");
  await page.fill("textarea[name=prompt]", "Please write claude.txt containing written by the real CLI");
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash));
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 90_000 });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain("claude.txt");
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=diff-files] li[data-path='claude.txt']", { timeout: 60_000 });
  await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 60_000 });
  expect(await page.textContent("[data-testid=transcript]")).toContain("Done: I wrote the file.");
  await page.click("[data-testid=tab-git]");
  await page.check("[data-testid=update-checkout]");
  await page.click("[data-testid=merge]");
  await page.waitForSelector("[data-testid=finish-result]");
  expect(await page.textContent("[data-testid=finish-result]")).toContain("Merge: done");
  expect(git(demo.repo, "show", "main:claude.txt").trim()).toBe("written by the real CLI");
  expect(pageErrors(page)).toEqual([]);
  await context.close();
});
