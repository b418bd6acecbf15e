/** Modes, rules and the critical double-confirm in a real browser against a real host running a
 *  real Claude Code against Nucleic's mock model server, inside the loopback-only namespace:
 *  a session started in a mode picked in the new-session sheet, a critical approval that needs
 *  its second confirmation (the first click alone leaves it pending), switching the mode from
 *  the header, and the rules sheet (listing by scope, adding, a malformed rule, removing). */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";

import { type Demo, OUT, launch, loginLink, pageErrors, pinnedClaude, signedInPage, startDemo, startMockAnthropic, tempDir } from "./harness";

let browser: Browser;
let demo: Demo;
let home: string;
const mocks: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  browser = await launch();
  const anthropic = await startMockAnthropic();
  mocks.push(anthropic);
  const scratch = tempDir("nucleic-e2e-modes-");
  for (const d of ["home", "run", "tmp"]) mkdirSync(path.join(scratch, d), { recursive: true });
  const agentEnv: Record<string, string> = {
    HOME: path.join(scratch, "home"),
    XDG_RUNTIME_DIR: path.join(scratch, "run"),
    CLAUDE_CODE_TMPDIR: path.join(scratch, "tmp"),
    ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: "sk-test",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_MAX_RETRIES: "1",
    DISABLE_AUTOUPDATER: "1",
  };
  const args = ["--claude", pinnedClaude(), ...Object.entries(agentEnv).flatMap(([k, v]) => ["--agent-env", `${k}=${v}`])];
  home = path.join(scratch, "nucleic-home");
  demo = await startDemo({ noSessions: true, home, args });
});

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  for (const m of mocks) await m.stop();
});

async function newClaudeSession(page: Page, prompt: string, mode: string): Promise<string> {
  await page.goto(`${demo.origin}/#/`);
  await page.click("[data-testid=new-session]");
  await page.selectOption("select[name=backend]", "claudeCode");
  await page.selectOption("[data-testid=new-session-mode]", mode);
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash), null, { timeout: 60_000 }).catch(async (e) => {
    throw new Error(`${e}\n--- page ---\n${await page.innerText("body")}\n--- host ---\n${demo.log().slice(-3000)}`);
  });
  return decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
}

it("a critical approval needs the second confirmation; the mode is picked at start and switched from the header", async () => {
  const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
  // `wipefs` is rated critical ("could take the machine down"); `--no-act` of a missing file
  // does nothing, whatever is answered.
  const id = await newClaudeSession(page, "Please run `wipefs --no-act missing.img` for me", "full");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 90_000 }).catch(async (e) => {
    throw new Error(`${e}\n--- host ---\n${demo.log().slice(-3000)}`);
  });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain("wipefs");
  expect(await page.textContent("[data-testid=session-mode]")).toBe("full");

  // The first click asks for the second confirmation and sends nothing: still pending.
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=confirm-critical]");
  await page.waitForTimeout(1500);
  await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-approval]`);
  expect(await page.$("[data-testid=approval-bar]")).not.toBeNull();
  // "Yes, allow" resolves it.
  await page.click("[data-testid=confirm-critical]");
  await page.waitForSelector("[data-testid=approval-bar]", { state: "detached", timeout: 30_000 });
  await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 90_000 });
  expect(await page.textContent("[data-testid=resolved-by]")).toContain("allow by");

  // Switched to readonly from the header: shown at once and recorded in the transcript.
  await page.selectOption("[data-testid=policy-mode-picker]", "readonly");
  await page.waitForFunction(() => document.querySelector("[data-testid=session-mode]")?.textContent === "readonly");
  await page.waitForFunction(() => document.querySelector("[data-testid=transcript]")?.textContent?.includes("Mode: readonly"));
  await page.screenshot({ path: path.join(OUT, "session-mode.png") });
  expect(pageErrors(page)).toEqual([]);
  await context.close();
});

it("the rules sheet lists rules by scope, adds and removes Nucleic's, refuses a malformed rule, sets the project's mode", async () => {
  // Claude Code's own project file, in the main checkout: shown read-only with its path.
  mkdirSync(path.join(demo.repo, ".claude"), { recursive: true });
  writeFileSync(path.join(demo.repo, ".claude", "settings.json"), JSON.stringify({ permissions: { deny: ["Bash(rm:*)"] } }));
  const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
  const id = await newClaudeSession(page, "Please write rules.txt containing hi", "edit");
  await page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
  await page.click("[data-testid=open-rules]");
  await page.waitForSelector("[data-testid=rules-projectSettings]");
  const claude = await page.textContent("[data-testid=rules-projectSettings]");
  expect(claude).toContain("Bash(rm:*)");
  expect(claude).toContain(".claude/settings.json");
  expect(claude).toContain("read-only");
  expect(await page.$("[data-testid=rules-projectSettings] [data-testid=remove-rule]")).toBeNull();

  // Added for this project: listed, removable, in the project's rule file (0600).
  await page.selectOption("[data-testid=rules-sheet] select[name=behaviour]", "ask");
  await page.fill("[data-testid=rules-sheet] input[name=rule]", "Bash(git push:*)");
  await page.selectOption("[data-testid=rules-sheet] select[name=scope]", "project");
  await page.click("[data-testid=add-rule]");
  await page.waitForSelector("[data-testid=rules-nucleicProject] [data-testid=remove-rule]");
  expect(await page.textContent("[data-testid=rules-nucleicProject]")).toContain("Bash(git push:*)");
  const file = path.join(home, "projects", demo.projectID, "rules.json");
  expect(JSON.parse(readFileSync(file, "utf8")).permissions.ask).toEqual(["Bash(git push:*)"]);

  // A malformed rule is refused with the parser's message.
  await page.fill("[data-testid=rules-sheet] input[name=rule]", "Bash(ls");
  await page.click("[data-testid=add-rule]");
  await page.waitForSelector("[data-testid=rules-error]");
  expect(await page.textContent("[data-testid=rules-error]")).toContain("Bash(ls");

  await page.screenshot({ path: path.join(OUT, "rules-sheet.png") });
  // The project's default mode, kept in its rule file.
  await page.selectOption("[data-testid=project-mode]", "readonly");
  await expect.poll(() => JSON.parse(readFileSync(file, "utf8")).mode, { timeout: 10_000 }).toBe("readonly");

  // Removed: gone from the sheet and the file.
  await page.click("[data-testid=rules-nucleicProject] [data-testid=remove-rule]");
  await page.waitForSelector("[data-testid=rules-nucleicProject]", { state: "detached" });
  expect(JSON.parse(readFileSync(file, "utf8")).permissions.ask).toEqual([]);
  expect(pageErrors(page)).toEqual([]);
  await context.close();
});
