/** Acting on sessions from the cockpit: deny with a reason, allow with edited input, stop,
 *  interrupt, change the permission mode, browse files and images, handoff, and background
 *  notifications — each checked against what the host and git really did. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { type Demo, git, launch, loginLink, pageErrors, signedInPage, startDemo } from "./harness";

let browser: Browser;
let demo: Demo;
beforeAll(async () => {
  demo = await startDemo({ noSessions: true });
});
afterAll(async () => {
  await demo?.stop();
});
// A fresh browser for every test (see cockpit.e2e.ts).
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
});

async function create(page: Page, prompt: string): Promise<{ id: string; worktree: string }> {
  await page.click("[data-testid=new-session]");
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash));
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  const worktree = await page.evaluate((sid) => (window as any).nucleic.sessions.get(sid)?.worktree?.path as string, id);
  return { id, worktree };
}

const status = (page: Page, id: string, s: string) =>
  page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=${s}]`, { timeout: 60_000 });

describe("approvals from the bar", () => {
  it("deny with a reason: nothing is written and the reason is recorded", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { name: "reviewer" });
    const { id, worktree } = await create(page, "write denied.txt containing should not exist");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=deny]");
    await page.fill("[data-testid=deny-reason]", "not in this repo");
    await page.click("[data-testid=send-deny]");
    await page.waitForSelector("[data-testid=approval-outcome]");
    expect(await page.textContent("[data-testid=approval-outcome]")).toContain("deny by reviewer: not in this repo");
    await status(page, id, "awaiting-input");
    expect(existsSync(path.join(worktree, "denied.txt"))).toBe(false);
    await context.close();
  });

  it("allow with edited input: the agent writes what the person edited", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo));
    const { id, worktree } = await create(page, "write edited.txt containing the agent's words");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow-edited]");
    const text = await page.inputValue("[data-testid=edited-input]");
    const input = JSON.parse(text);
    input.content = "the person's words";
    await page.fill("[data-testid=edited-input]", JSON.stringify(input));
    await page.click("[data-testid=send-edited]");
    await status(page, id, "awaiting-input");
    expect(readFileSync(path.join(worktree, "edited.txt"), "utf8").trim()).toBe("the person's words");
    await context.close();
  });

  it("notifies when a session needs approval while the tab is in the background", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(() => {
      // A background tab with notifications allowed; record what would be shown.
      Object.defineProperty(document, "hidden", { get: () => true });
      const shown: Array<{ title: string; body: string }> = [];
      (window as any).shownNotifications = shown;
      class FakeNotification {
        static permission = "granted";
        static requestPermission = async () => "granted";
        onclick: (() => void) | null = null;
        constructor(title: string, opts: { body: string }) {
          shown.push({ title, body: opts.body });
        }
        close() {}
      }
      (window as any).Notification = FakeNotification;
    });
    const page = await context.newPage();
    await page.goto(await loginLink(demo));
    await page.waitForSelector(".shell[data-link=online]");
    await page.evaluate(
      (pid) => (window as any).nucleic.request({ type: "intent", intent: { kind: "newSession", projectID: pid, backend: "simulated", prompt: "write ping.txt containing pong" } }),
      demo.projectID,
    );
    await page.waitForFunction(() => (window as any).shownNotifications.some((n: { body: string }) => /needs your approval/.test(n.body)), null, { timeout: 60_000 });
    await context.close();
  });
});

describe("controls", () => {
  it("stop ends a streaming agent; interrupt ends its turn", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo));
    const { id } = await create(page, "stream 400");
    await status(page, id, "running");
    await page.waitForSelector("[data-testid=interrupt]");
    await page.click("[data-testid=interrupt]");
    await page.waitForSelector("[data-kind=notice]:has-text('Interrupt requested')");
    await status(page, id, "awaiting-input");
    page.once("dialog", (d) => d.accept());
    await page.click("[data-testid=stop]");
    await status(page, id, "finished");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });

  it("the permission picker changes the mode mid-session", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo));
    const { id } = await create(page, "think");
    await status(page, id, "awaiting-input");
    await page.selectOption("[data-testid=mode-picker]", "acceptEdits");
    await page.waitForSelector("[data-kind=notice]:has-text('Permission mode → acceptEdits')", { timeout: 30_000 });
    await context.close();
  });
});

describe("the new-session sheet", () => {
  it("offers the project's branches and starts from the one chosen", async () => {
    git(demo.repo, "branch", "from-the-sheet");
    const { context, page } = await signedInPage(browser, await loginLink(demo));
    await page.click("[data-testid=new-session]");
    await page.waitForSelector("#branches option[value='from-the-sheet']", { state: "attached" });
    const offered = await page.$$eval("#branches option", (o) => o.map((x) => (x as HTMLOptionElement).value));
    expect(offered).toContain("main");
    expect(offered.some((b) => b.startsWith("nucleic/"))).toBe(false);
    await page.fill("[data-testid=base-branch]", "from-the-sheet");
    await page.fill("textarea[name=prompt]", "think");
    await page.click("[data-testid=create-session]");
    await page.waitForFunction(() => /#\/s\//.test(location.hash));
    const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
    const base = await page.evaluate((sid) => (window as any).nucleic.sessions.get(sid)?.worktree?.baseRef, id);
    expect(base).toBe("from-the-sheet");
    await context.close();
  });
});

describe("the session menu", () => {
  it("rename shows everywhere; export downloads the seed's markdown", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo));
    const { id } = await create(page, "think");
    await status(page, id, "awaiting-input");
    page.once("dialog", (d) => d.accept("Renamed from the browser"));
    await page.click("[data-testid=session-menu]");
    await page.click("[data-testid=rename]");
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"]:has-text('Renamed from the browser')`);
    await page.click("[data-testid=session-menu]");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-testid=export-markdown]")]);
    const file = await download.path();
    const text = readFileSync(file, "utf8");
    expect(text).toContain("# Nucleic session export");
    expect(text).toContain("Renamed from the browser");
    await context.close();
  });
});

describe("the worktree", () => {
  it("files, images and the handoff command", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    const { id, worktree } = await create(page, "write notes/plan.md containing # Plan");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await status(page, id, "awaiting-input");
    // A screenshot the agent might have made: a 1×1 PNG.
    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
    writeFileSync(path.join(worktree, "shot.png"), png);
    await page.click("[data-testid=tab-files]");
    await page.click("[data-testid=file-entry][data-path=notes]");
    await page.click("[data-testid=file-entry][data-path='notes/plan.md']");
    await page.waitForSelector("[data-testid=file-view]");
    expect(await page.textContent("[data-testid=file-view]")).toContain("# Plan");
    await page.click("[data-testid=tab-images]");
    await page.waitForSelector("[data-testid=gallery-image][data-path='shot.png'] img");
    await page.click("[data-testid=tab-git]");
    await page.click("[data-testid=handoff]");
    await page.waitForSelector("[data-testid=handoff-command]");
    expect(await page.textContent("[data-testid=handoff-command]")).toMatch(/--resume/);
    // Paths may not leave the worktree.
    const escape = await page.evaluate(
      (sid) => (window as any).nucleic.request({ type: "readFile", sessionID: sid, path: "../../../../etc/passwd" }).then(() => "read", (e: Error) => e.message),
      id,
    );
    expect(escape).not.toBe("read");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});

describe("disk", () => {
  it("measures a worktree with build output apart, reclaims it, and a follow-up brings it back", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    const { id, worktree } = await create(page, "write kept.txt containing kept");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await status(page, id, "awaiting-input");
    // Ignored build output (not kept through a reclaim) next to uncommitted work (kept).
    writeFileSync(path.join(worktree, ".gitignore"), "node_modules/\n");
    mkdirSync(path.join(worktree, "node_modules/dep"), { recursive: true });
    writeFileSync(path.join(worktree, "node_modules/dep/index.js"), "x".repeat(250_000));
    await page.click("[data-testid=session-menu]");
    await page.click("[data-testid=measure-disk]");
    await page.click("[data-testid=session-menu]");
    await page.waitForFunction(() => /build output/.test(document.querySelector("[data-testid=disk-use]")?.textContent ?? ""));
    const shown = (await page.textContent("[data-testid=disk-use]")) ?? "";
    const build = Number(/\(([\d.]+) KB build output\)/.exec(shown)?.[1]);
    expect(build, shown).toBeGreaterThanOrEqual(250);
    // The person confirms (a native dialog would block the click in headless Chromium).
    await page.evaluate(() => {
      window.confirm = () => true;
    });
    await page.click("[data-testid=reclaim]");
    await page.waitForFunction((sid) => (window as any).nucleic.sessions.get(sid)?.worktreeReclaimed === true, id);
    expect(existsSync(worktree)).toBe(false);
    await page.waitForSelector("text=Worktree reclaimed");
    // A follow-up restores it (the agent's file, not the build output) and the agent goes on.
    await page.fill("[data-testid=composer]", "write more.txt containing more");
    await page.click("[data-testid=send]");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    expect(readFileSync(path.join(worktree, "kept.txt"), "utf8")).toBe("kept\n");
    expect(existsSync(path.join(worktree, "node_modules"))).toBe(false);
    expect(readFileSync(path.join(worktree, ".gitignore"), "utf8")).toBe("node_modules/\n");
    await page.click("[data-testid=allow]");
    await status(page, id, "awaiting-input");
    expect(readFileSync(path.join(worktree, "more.txt"), "utf8")).toBe("more\n");
    expect(await page.evaluate((sid) => (window as any).nucleic.sessions.get(sid)?.worktreeReclaimed ?? false, id)).toBe(false);
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});
