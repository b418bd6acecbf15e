/** Plan, then confirm, in a real browser against a real host running simulated agents: a
 *  session started with "Plan first" shows its plan as a rendered card, a rejected plan's
 *  feedback is recorded, the next plan is approved into a chosen mode and the agent goes on;
 *  an agent's questions are answered from the cockpit (the session, then the inbox) with their
 *  choices and free text. */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { type Demo, launch, loginLink, pageErrors, signedInPage, startDemo } from "./harness";

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

async function create(page: Page, prompt: string, planFirst: boolean): Promise<{ id: string; worktree: string }> {
  await page.click("[data-testid=new-session]");
  await page.selectOption("select[name=backend]", "simulated");
  if (planFirst) await page.check("[data-testid=plan-first]");
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash));
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  const worktree = await page.evaluate((sid) => (window as any).nucleic.sessions.get(sid)?.worktree?.path as string, id);
  return { id, worktree };
}

const outcomes = (page: Page) => page.$$eval("[data-testid=approval-outcome]", (els) => els.map((e) => e.textContent ?? ""));

describe("plan, then confirm", () => {
  it("shows the plan, sends feedback, approves the next one into edit mode, and the agent goes on", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { name: "lead" });
    const errors = pageErrors(page);
    const prompt =
      "plan # First plan\\n\\n1. Write `planned.txt`\\n2. Nothing else then plan # Second plan\\n\\n1. Write `planned.txt` **with tests** then write planned.txt containing planned";
    const { id, worktree } = await create(page, prompt, true);
    // Plan one: rendered markdown; rejected with feedback.
    await page.waitForSelector("[data-testid=plan-card]", { timeout: 60_000 });
    // The session was started in Claude's plan mode.
    const transcript = () => readFileSync(path.join(demo.home, "sessions", id, "transcript.jsonl"), "utf8");
    expect(transcript()).toContain('"permissionMode":"plan"');
    expect(await page.textContent("[data-testid=plan-text] h1")).toBe("First plan");
    expect(await page.textContent("[data-testid=plan-text] code")).toBe("planned.txt");
    await page.click("[data-testid=reject-plan]");
    await page.fill("[data-testid=plan-feedback]", "Add tests to the plan");
    await page.click("[data-testid=send-plan-feedback]");

    // Plan two: approved into edit mode.
    await page.waitForFunction(() => document.querySelector("[data-testid=plan-text] h1")?.textContent === "Second plan", null, { timeout: 60_000 });
    expect(await page.textContent("[data-testid=plan-text] strong")).toBe("with tests");
    await page.click("[data-testid=plan-mode-edit]");
    await page.click("[data-testid=approve-plan]");

    // The agent left plan mode and went on: its write is asked (the simulated agent has no
    // host policy), allowed, and lands.
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    expect(await page.textContent("[data-testid=approval-bar]")).toContain("planned.txt");
    await page.click("[data-testid=allow]");
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 60_000 });
    expect(readFileSync(path.join(worktree, "planned.txt"), "utf8")).toBe("planned\n");
    const recorded = await outcomes(page);
    expect(recorded.some((t) => t.includes("deny by lead: Add tests to the plan"))).toBe(true);
    expect(recorded.some((t) => t.includes("approvePlan by lead (executing in edit mode)"))).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("answers the agent's questions from the cockpit", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { name: "phone" });
    const { id, worktree } = await create(page, "ask Which color? Red / Blue then ask many Which sizes? S / M / L", false);
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 60_000 });
    await page.waitForSelector("[data-testid=question-card]", { timeout: 60_000 });
    expect(await page.textContent("[data-testid=question]")).toContain("Which color?");
    await page.click("[data-testid=choice][data-label=Blue]");
    await page.click("[data-testid=send-answers]");

    // The second question is answered from the inbox, without opening the session.
    await page.goto(`${demo.origin}/#/inbox`);
    const item = `[data-testid=inbox-item][data-session="${id}"]`;
    await page.waitForSelector(`${item} [data-testid=question][data-question='Which sizes?']`, { timeout: 60_000 });
    await page.click(`${item} [data-testid=choice][data-label=S]`);
    await page.click(`${item} [data-testid=choice][data-label=L]`);
    await page.fill(`${item} [data-testid=other]`, "XL");
    await page.click(`${item} [data-testid=send-answers]`);
    await page.waitForFunction(
      (sid) => (window as any).nucleic.sessions.get(sid)?.pendingApprovals === 0 && (window as any).nucleic.sessions.get(sid)?.status === "awaiting-input",
      id,
      { timeout: 60_000 },
    );
    await page.goto(`${demo.origin}/#/s/${id}`);
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=approval-outcome]").length >= 2, null, { timeout: 30_000 });
    const recorded = await outcomes(page);
    expect(recorded.filter((t) => t.includes("answered by phone")).length).toBe(2);
    // What the agent got, in Claude Code's words (the simulated agent writes them as its tool result).
    const transcript = readFileSync(path.join(demo.home, "sessions", id, "transcript.jsonl"), "utf8");
    expect(transcript).toContain('\\"Which color?\\"=\\"Blue\\"');
    expect(transcript).toContain('\\"Which sizes?\\"=\\"S, L, XL\\"');
    expect(existsSync(worktree)).toBe(true);
    await context.close();
  });
});
