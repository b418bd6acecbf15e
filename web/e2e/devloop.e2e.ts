/** The safe dev loop in the browser (docs/dev-loop.md): the demo project gets a check that runs
 *  after every turn; the simulated agent makes a wrong fix and claims the tests pass → the
 *  report card shows the contradiction, Merge is refused; with a recorded reason it merges. */
import { execFileSync } from "node:child_process";

import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type Demo, NUCLEIC, git, launch, pageErrors, signedInPage, startDemo } from "./harness";

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

const cli = (...args: string[]) => execFileSync(NUCLEIC, args, { env: { ...process.env, NUCLEIC_HOME: demo.home }, encoding: "utf8" });

describe("the dev loop", () => {
  it("a wrong fix: the check fails, the report flags the claim, merge is refused unless forced", async () => {
    const test = "from wordcount.core import count_lines\nok = count_lines('a\\nb') == 2\nprint(f'lines: {int(ok)} passed, {int(not ok)} failed')\nraise SystemExit(0 if ok else 1)";
    cli("project", "check", "add", demo.projectID, "lines", "--timeout", "60", "--", "python3", "-c", test);
    cli("project", "check", "after-turn", demo.projectID, "on");

    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    await page.click("[data-testid=new-session]");
    await page.waitForSelector("[data-testid=new-session-sheet]");
    await page.selectOption("select[name=backend]", "simulated");
    await page.fill(
      "textarea[name=prompt]",
      "edit wordcount/core.py: return text.count(NEWLINE) -> return text.count(NEWLINE) * 1 then say Fixed the line count. All tests pass.",
    );
    await page.click("[data-testid=create-session]");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await page.waitForSelector("[data-testid=contradiction]", { timeout: 60_000 });
    const card = await page.textContent("[data-testid=report]");
    expect(card).toContain("All tests pass.");
    expect(card).toContain("lines FAILED: 0 passed, 1 failed");
    expect(await page.textContent("[data-kind=check] [data-testid=check-summary]")).toContain("Check lines: FAILED");

    const main = git(demo.repo, "rev-parse", "main");
    await page.click("[data-testid=tab-git]");
    await page.check("[data-testid=update-checkout]");
    await page.click("[data-testid=merge]");
    await page.waitForSelector("[data-testid=finish-result]", { timeout: 60_000 });
    expect(await page.textContent("[data-testid=finish-result]")).toContain("required checks fail");
    expect(git(demo.repo, "rev-parse", "main")).toBe(main);

    await page.fill("[data-testid=force-reason]", "demo: merging a known-bad fix on purpose");
    await page.click("[data-testid=merge]");
    await page.waitForFunction(() => document.querySelector("[data-testid=finish-result]")?.textContent?.includes("Merge: done"), null, { timeout: 60_000 });
    expect(git(demo.repo, "log", "-1", "--format=%s", "main")).not.toBe("");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});
