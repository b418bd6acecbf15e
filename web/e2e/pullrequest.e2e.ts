/** Finishing by pull request in the browser (docs/dev-loop.md): the demo project gets a bare
 *  remote; the simulated agent makes a change; "Push and open pull request" pushes the branch
 *  and opens a PR with the real `gh` against the mock GitHub API; the session shows its URL. */
import { mkdirSync } from "node:fs";
import path from "node:path";

import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type Demo, git, launch, pageErrors, signedInPage, startDemo, startMockGitHub, tempDir } from "./harness";

let browser: Browser;
let demo: Demo;
let mock: Awaited<ReturnType<typeof startMockGitHub>>;
let dir: string;
beforeAll(async () => {
  dir = tempDir("nucleic-e2e-pr-");
  mock = await startMockGitHub(dir);
  const ghConfig = path.join(dir, "gh-config");
  mkdirSync(ghConfig);
  demo = await startDemo({
    noSessions: true,
    env: { GH_HOST: mock.host, GH_ENTERPRISE_TOKEN: mock.token, SSL_CERT_FILE: mock.caFile, GH_CONFIG_DIR: ghConfig },
  });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  await mock?.stop();
});

describe("finishing by pull request", () => {
  it("the PR button pushes the branch, opens the PR against the mock, and the session shows its URL", async () => {
    const bare = path.join(dir, "remote.git");
    git(dir, "init", "-q", "--bare", bare);
    // (A retry of this test finds the remote already added.)
    if (!git(demo.repo, "remote").split("\n").includes("origin")) git(demo.repo, "remote", "add", "origin", bare);

    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    await page.click("[data-testid=new-session]");
    await page.waitForSelector("[data-testid=new-session-sheet]");
    await page.selectOption("select[name=backend]", "simulated");
    await page.fill("textarea[name=prompt]", "edit wordcount/core.py: return text.count(NEWLINE) -> return text.count(NEWLINE) + 0 then say Tidied the line count.");
    await page.click("[data-testid=create-session]");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    // The turn ended: the agent's closing words are there and the session waits for input.
    await page.waitForFunction(
      () => [...document.querySelectorAll("[data-kind=assistant]")].some((e) => e.textContent?.includes("Tidied the line count.")),
      null,
      { timeout: 60_000 },
    );
    await page.waitForSelector(".sub [data-status]:not([data-status=running]):not([data-status=awaiting-approval])", { timeout: 60_000 });
    const branch = (await page.textContent(".sub .branch"))?.trim() ?? "";
    expect(branch).toMatch(/^nucleic\//);

    await page.click("[data-testid=tab-git]");
    await page.fill("[data-testid=pr-title]", "Tidy the line count");
    await page.fill("[data-testid=pr-repo]", mock.repo);
    await page.click("[data-testid=open-pr]");
    await page.waitForSelector("[data-testid=pr-result]", { timeout: 60_000 });
    const url = `https://${mock.host}/octo/demo/pull/1`;
    expect(await page.textContent("[data-testid=pr-result]")).toContain(url);
    // The session shows it: in its header, and as a notice in the transcript.
    await page.waitForSelector("[data-testid=pr-link]", { timeout: 30_000 });
    expect(await page.getAttribute("[data-testid=pr-link]", "href")).toBe(url);
    expect(await page.textContent("[data-testid=pr-link]")).toContain("PR #1");
    // The mock saw the expected title, head and base (it reports them on its stdout every 100 ms,
    // so they may trail the page); the branch is on the remote.
    await expect.poll(() => mock.created(), { timeout: 10_000 }).toEqual([{ number: 1, url, title: "Tidy the line count", head: branch, base: "main", draft: false }]);
    expect(git(bare, "for-each-ref", "--format=%(refname)").trim()).toBe(`refs/heads/${branch}`);

    // Again: gh says it already exists, and the cockpit says so.
    await page.click("[data-testid=open-pr]");
    await page.waitForFunction(() => document.querySelector("[data-testid=pr-result]")?.textContent?.includes("already exists"), null, { timeout: 60_000 });
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});
