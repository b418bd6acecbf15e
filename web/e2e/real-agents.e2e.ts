/** Real Claude Code and real Codex sessions side by side in one host, driven from the cockpit,
 *  each against Nucleic's own mock model server inside the loopback-only namespace: create
 *  each from the UI, approve its file change from the approval bar, see the file in the diff,
 *  merge it, and find both on the base branch. */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";

import {
  type Demo,
  git,
  launch,
  pageErrors,
  pinnedClaude,
  signedInPage,
  startDemo,
  startMockAnthropic,
  startMockOpenAi,
  tempDir,
  waitOnline,
} from "./harness";

let browser: Browser;
let demo: Demo;
let demoArgs: string[];
let home: string;
/** The agents' offline environment (the person's, as the host's agents get it). */
let agentEnv: Record<string, string>;
const mocks: Array<{ stop(): Promise<void> }> = [];
const scratchDirs: string[] = [];
const web = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

beforeAll(async () => {
  browser = await launch();
  const anthropic = await startMockAnthropic();
  const openai = await startMockOpenAi();
  mocks.push(anthropic, openai);
  const scratch = tempDir("nucleic-e2e-agents-");
  for (const d of ["home", "run", "tmp"]) mkdirSync(path.join(scratch, d), { recursive: true });
  // Not under /tmp: codex refuses to make its helper aliases in a CODEX_HOME there, and without
  // `codex-linux-sandbox` its own sandbox (which Nucleic configures) cannot read the demo
  // repository's AGENTS.md, so the thread is refused.
  mkdirSync(path.join(web, "e2e", "out"), { recursive: true });
  const codexHome = mkdtempSync(path.join(web, "e2e", "out", "codex-home-"));
  scratchDirs.push(codexHome);
  writeFileSync(path.join(codexHome, "config.toml"), openai.config);
  // The offline environments from shared/reference (testkit::agents): Claude's, then Codex's.
  agentEnv = {
    HOME: path.join(scratch, "home"),
    XDG_RUNTIME_DIR: path.join(scratch, "run"),
    CLAUDE_CODE_TMPDIR: path.join(scratch, "tmp"),
    ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: "sk-test",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_MAX_RETRIES: "1",
    DISABLE_AUTOUPDATER: "1",
    CODEX_HOME: codexHome,
    [openai.keyEnv]: "sk-mock",
  };
  demoArgs = ["--claude", pinnedClaude(), ...Object.entries(agentEnv).flatMap(([k, v]) => ["--agent-env", `${k}=${v}`])];
  home = path.join(scratch, "nucleic-home");
  // The host's policy would allow these in-worktree edits on its own: a host rule file asks a
  // person for every command and edit, so the cockpit's approval bar is what this suite drives.
  mkdirSync(home, { recursive: true });
  writeFileSync(
    path.join(home, "rules.json"),
    JSON.stringify({ permissions: { ask: ["Bash", "Edit", "Write", "MultiEdit", "NotebookEdit"] } }),
  );
  demo = await startDemo({ noSessions: true, home, args: demoArgs });
});

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  for (const m of mocks) await m.stop();
  for (const d of scratchDirs) rmSync(d, { recursive: true, force: true });
});

/** Creates a session of `backend` from the sheet, approves its file change, waits for the diff. */
async function runToDiff(page: Page, backend: string, prompt: string, file: string): Promise<{ id: string; editable: boolean }> {
  await page.goto(`${demo.origin}/#/`);
  await page.click("[data-testid=new-session]");
  await page.selectOption("select[name=backend]", backend);
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash));
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 90_000 });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain(file);
  const editable = (await page.$("[data-testid=allow-edited]")) !== null;
  await page.click("[data-testid=allow]");
  await page.waitForSelector(`[data-testid=diff-files] li[data-path='${file}']`, { timeout: 90_000 });
  await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 90_000 });
  return { id, editable };
}

async function merge(page: Page, id: string) {
  await page.goto(`${demo.origin}/#/s/${id}`);
  await page.waitForSelector("[data-testid=tool-pane]");
  await page.click("[data-testid=tab-git]");
  await page.check("[data-testid=update-checkout]");
  await page.click("[data-testid=merge]");
  await page.waitForSelector("[data-testid=finish-result]");
  expect(await page.textContent("[data-testid=finish-result]")).toContain("Merge: done");
}

/** Sends a follow-up from the composer and waits for the (resumed) agent's approval request. */
async function followUpAsks(page: Page, id: string, text: string, file: string) {
  await page.goto(`${demo.origin}/#/s/${id}`);
  await page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
  await page.fill("[data-testid=composer]", text);
  await page.click("[data-testid=send]");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 90_000 }).catch(async (e) => {
    throw new Error(`${e}\n--- session ${id} ---\n${await page.innerText("[data-testid=session-pane]")}\n--- host ---\n${demo.log().slice(-3000)}`);
  });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain(file);
}

it("a real Claude and a real Codex session side by side: approve, diff, resume after a restart, merge both", async () => {
  const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
  const claude = await runToDiff(page, "claudeCode", "Please write claude.txt containing written by the real CLI", "claude.txt");
  expect(await page.textContent("[data-testid=transcript]")).toContain("Done: I wrote the file.");
  const codex = await runToDiff(page, "codex", "Add codex.txt, please.", "codex.txt");
  // Capabilities: Claude takes edited tool input, Codex does not, so its bar does not offer it.
  expect(claude.editable).toBe(true);
  expect(codex.editable).toBe(false);
  expect(await page.$$eval("[data-testid=session-row]", (rows) => rows.length)).toBe(2);

  // The host goes away and comes back on the same home and port; the page reconnects by itself
  // and a follow-up resumes each agent's own conversation (claude --resume, codex thread/resume).
  await demo.stop();
  await page.waitForSelector("[data-testid=link-banner]");
  demo = await startDemo({ noSessions: true, home, port: demo.port, args: demoArgs });
  await waitOnline(page);
  await followUpAsks(page, claude.id, "Now write claude-again.txt containing after the restart", "claude-again.txt");
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=diff-files] li[data-path='claude-again.txt']", { timeout: 90_000 });
  await followUpAsks(page, codex.id, "And codex.txt once more.", "codex.txt");
  await page.click("[data-testid=deny]");
  await page.fill("[data-testid=deny-reason]", "it exists already");
  await page.click("[data-testid=send-deny]");
  await page.waitForSelector(`[data-testid=session-row][data-session="${codex.id}"][data-status=awaiting-input]`, { timeout: 90_000 });

  await merge(page, claude.id);
  await merge(page, codex.id);
  expect(git(demo.repo, "show", "main:claude.txt").trim()).toBe("written by the real CLI");
  expect(git(demo.repo, "show", "main:claude-again.txt").trim()).toBe("after the restart");
  expect(git(demo.repo, "show", "main:codex.txt").trim()).toBe("written by codex");
  expect(pageErrors(page)).toEqual([]);
  await context.close();
}, 300_000);

it("a Claude Code session made in the terminal is listed in the new-session sheet and carried on from it", async () => {
  // The person's own session, made in the terminal before Nucleic knows of it.
  const out = execFileSync(pinnedClaude(), ["-p", "write terminal-notes.txt containing from the terminal", "--permission-mode", "acceptEdits", "--output-format", "json"], {
    cwd: demo.repo,
    env: { PATH: process.env.PATH ?? "", ...agentEnv },
    encoding: "utf8",
    timeout: 90_000,
  });
  const outside = String(JSON.parse(out).session_id);
  rmSync(path.join(demo.repo, "terminal-notes.txt"), { force: true });

  const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
  await page.goto(`${demo.origin}/#/`);
  await page.click("[data-testid=new-session]");
  const row = `[data-testid=outside-session][data-outside="${outside}"]`;
  await page.waitForSelector("[data-testid=outside-sessions] summary", { timeout: 30_000 });
  expect(await page.textContent("[data-testid=outside-sessions] summary")).toContain("Carry on a session from outside Nucleic (1)");
  await page.click("[data-testid=outside-sessions] summary");
  await page.waitForSelector(row, { timeout: 5_000 });
  expect(await page.textContent(row)).toContain("terminal-notes.txt");
  expect(await page.textContent(row)).toContain("Claude Code");
  await page.click(row);
  await page.waitForSelector("[data-testid=adopting]");
  // Its backend and history are its own: the sheet no longer offers a backend or a base.
  expect(await page.$("select[name=backend]")).toBeNull();
  await page.fill("textarea[name=prompt]", "write adopted.txt containing carried on");
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash));
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 90_000 }).catch(async (e) => {
    throw new Error(`${e}\n--- session ${id} ---\n${await page.innerText("[data-testid=session-pane]")}\n--- host ---\n${demo.log().slice(-3000)}`);
  });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain("adopted.txt");
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=diff-files] li[data-path='adopted.txt']", { timeout: 90_000 });
  // The terminal's turn comes first in the transcript, then the adoption, then the new turn.
  const transcript = (await page.textContent("[data-testid=transcript]")) ?? "";
  const first = transcript.indexOf("terminal-notes.txt");
  const adopted = transcript.indexOf("Adopted from the claudeCode session");
  expect(first).toBeGreaterThanOrEqual(0);
  expect(adopted).toBeGreaterThan(first);
  expect(transcript.indexOf("adopted.txt", adopted)).toBeGreaterThan(adopted);
  // Carried on in its own worktree: the checkout is as it was.
  expect(git(demo.repo, "status", "--porcelain")).not.toContain("adopted.txt");
  expect(pageErrors(page)).toEqual([]);
  await context.close();
}, 300_000);
