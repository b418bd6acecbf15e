/** Per-turn diffs and review comments in the browser (docs/dev-loop.md): the simulated agent
 *  writes a file; the person comments on two of its lines in the diff and sends the review;
 *  the agent receives one follow-up citing both `path:line`s; each turn's own change is shown. */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import path from "node:path";

import { type Demo, OUT, launch, pageErrors, signedInPage, startDemo } from "./harness";

let browser: Browser;
let demo: Demo;
beforeAll(async () => {
  demo = await startDemo({ noSessions: true });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
});

async function comment(page: Page, line: number, text: string, count: number) {
  await page.click(`.d2h-file-wrapper[data-path='notes.txt'] tr[data-line='${line}']`);
  expect(await page.textContent("[data-testid=review-selection]")).toBe(`notes.txt:${line}`);
  await page.fill("[data-testid=review-comment-text]", text);
  await page.click("[data-testid=add-review-comment]");
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=review-comment]").length === n, count, { timeout: 30_000 });
}

describe("review", () => {
  it("comments on two lines, sends them, and the agent receives both citations", async () => {
    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    await page.click("[data-testid=new-session]");
    await page.waitForSelector("[data-testid=new-session-sheet]");
    await page.selectOption("select[name=backend]", "simulated");
    await page.fill("textarea[name=prompt]", "write notes.txt containing alpha\\nbeta\\ngamma");
    await page.click("[data-testid=create-session]");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await page.waitForSelector("[data-testid=session-pane][data-status=awaiting-input]", { timeout: 60_000 });
    await page.waitForSelector(".d2h-file-wrapper[data-path='notes.txt'] tr[data-line='3']", { timeout: 30_000 });

    await comment(page, 1, "Capitalise the first word.", 1);
    await comment(page, 3, "Gamma is one too many; drop it.", 2);
    await page.waitForFunction(() => document.querySelectorAll("tr.review-inline").length === 2, null, { timeout: 30_000 });
    expect(await page.textContent("[data-testid=send-review]")).toContain("Send review (2)");
    await page.screenshot({ path: path.join(OUT, "review-1280.png") });
    await page.click("[data-testid=send-review]");
    await page.waitForFunction(() => document.querySelector("[data-testid=review-result]")?.textContent?.includes("Sent 2 comment(s)"), null, { timeout: 60_000 });

    // The prompt the agent received: the sim answers a prompt without actions by quoting it.
    const answered = await page.waitForFunction(
      () => [...document.querySelectorAll("[data-kind=assistant]")].map((e) => e.textContent ?? "").find((t) => t.includes("You said: Review comments")),
      null,
      { timeout: 60_000 },
    );
    const received = String(await answered.jsonValue());
    expect(received).toContain("notes.txt:1");
    expect(received).toContain("notes.txt:3");
    expect(received).toContain("Capitalise the first word.");
    expect(received).toContain("Gamma is one too many; drop it.");
    await page.waitForFunction(
      () => [...document.querySelectorAll("[data-kind=notice]")].some((e) => e.textContent?.includes("Review sent by") && e.textContent.includes("notes.txt:3")),
      null,
      { timeout: 30_000 },
    );
    await page.waitForFunction(
      () => [...document.querySelectorAll("[data-testid=review-comment] .badge")].filter((b) => b.textContent === "sent").length === 2,
      null,
      { timeout: 30_000 },
    );

    // Which turn made which change: turn 1 wrote notes.txt, turn 2 (the review) changed nothing.
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=diff-turn] option").length === 3, null, { timeout: 30_000 });
    await page.waitForFunction(() => !document.querySelector("[data-testid=diff-turn]")?.textContent?.includes("running"), null, { timeout: 30_000 });
    await page.selectOption("[data-testid=diff-turn]", "1");
    await page.waitForSelector("[data-testid=diff-files] li[data-path='notes.txt']");
    await page.selectOption("[data-testid=diff-turn]", "2");
    await page.waitForFunction(() => document.querySelector("[data-testid=diff-view]")?.textContent?.includes("Turn 2 changed nothing."), null, { timeout: 30_000 });
    await page.selectOption("[data-testid=diff-turn]", "");
    await page.waitForSelector("[data-testid=diff-files] li[data-path='notes.txt']");

    // Resolved stays shown, marked.
    await page.click("[data-testid=review-comment] >> nth=0 >> [data-testid=resolve-comment]");
    await page.waitForSelector("[data-testid=review-comment][data-status=resolved]", { timeout: 30_000 });
    await page.waitForSelector("tr.review-inline.resolved", { timeout: 30_000 });
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 180_000);
});
