/** The cockpit in a real browser against a real host running simulated agents: the demo,
 *  the 1/2/3-pane layouts, a whole session from the UI to a merge, concurrent approvals,
 *  reconnects, and bad input (unknown kinds, huge results, long transcripts, bad tokens). */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { type Demo, OUT, git, launch, loginLink, longTranscript, pageErrors, signedInPage, startDemo, startServe, tempDir } from "./harness";

// A fresh browser for every test: once in a few full runs, after a host went away, a shared
// browser's new pages never came online (its WebSocket attempts to 127.0.0.1 stalled).
let browser: Browser;
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
});

const SCREENSHOTS = process.env.NUCLEIC_SCREENSHOTS;

async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
  if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
}

/** Opens a session from the list and waits for its pane. */
async function openSession(page: Page, sessionID: string) {
  await page.goto(`${new URL(page.url()).origin}/#/s/${sessionID}`);
  await page.waitForSelector(`[data-testid=session-pane][data-session="${sessionID}"]`);
}

/** Creates a session through the new-session sheet; returns its id. */
async function newSessionFromUI(page: Page, prompt: string, backend = "simulated"): Promise<string> {
  await page.click("[data-testid=new-session]");
  await page.waitForSelector("[data-testid=new-session-sheet]");
  await page.selectOption("select[name=backend]", backend);
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash), null, { timeout: 30_000 });
  const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
  await page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
  return id;
}

describe("nucleic demo", () => {
  let demo: Demo;
  beforeAll(async () => {
    demo = await startDemo();
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it("shows its three sessions, in 1, 2 and 3 panes by width", async () => {
    const { context, page } = await signedInPage(browser, demo.url, { width: 1280, height: 800 });
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=session-row]").length >= 3);
    const statuses = await page.$$eval("[data-testid=session-row]", (rows) => rows.map((r) => r.getAttribute("data-status")));
    expect(statuses).toContain("awaiting-approval");
    expect(statuses).toContain("running");
    expect(statuses.some((s) => s === "awaiting-input" || s === "finished")).toBe(true);

    // 1280: list + session + tools.
    const waiting = demo.sessions.find((s) => (s.title ?? "").length > 0) ?? demo.sessions[0];
    const approvalID = await page.$eval("[data-testid=session-row][data-status=awaiting-approval]", (r) => r.getAttribute("data-session"));
    await openSession(page, approvalID ?? waiting.sessionID);
    await page.waitForSelector("[data-testid=approval-bar]");
    await page.waitForSelector("[data-testid=tool-pane]");
    expect(await page.getAttribute(".shell", "data-panes")).toBe("3");
    expect(await page.isVisible("[data-testid=session-list]")).toBe(true);
    await page.waitForSelector("[data-testid=diff-view]");
    await shot(page, "cockpit-1280");
    // The finished session: its diff in the tool pane.
    const finishedID = await page.$eval("[data-testid=session-row][data-status=awaiting-input]", (r) => r.getAttribute("data-session"));
    await openSession(page, finishedID!);
    await page.waitForSelector("[data-testid=diff-files] li");
    await page.waitForSelector(".d2h-file-wrapper");
    await shot(page, "cockpit-1280-diff");
    await openSession(page, approvalID!);

    // 800: list + session; opening tools collapses the list.
    await page.setViewportSize({ width: 800, height: 900 });
    await page.waitForSelector(".shell[data-panes='2']");
    expect(await page.isVisible("[data-testid=session-list]")).toBe(true);
    expect(await page.isVisible("[data-testid=tool-pane]")).toBe(false);
    await shot(page, "cockpit-800");
    await page.click("[data-testid=toggle-tools]");
    await page.waitForSelector("[data-testid=tool-pane]");
    expect(await page.isVisible("[data-testid=session-list]")).toBe(false);

    // 390: one pane at a time, list → session by navigation.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${demo.origin}/#/`);
    await page.waitForSelector(".shell[data-panes='1'] [data-testid=session-list]");
    expect(await page.isVisible("[data-testid=session-pane]")).toBe(false);
    await shot(page, "cockpit-390-list");
    await page.click(`[data-testid=session-row][data-session="${approvalID}"]`);
    await page.waitForSelector("[data-testid=session-pane]");
    expect(await page.isVisible("[data-testid=session-list]")).toBe(false);
    await page.waitForSelector("[data-testid=approval-bar]");
    await shot(page, "cockpit-390");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });

  it("the dashboard puts what needs a person first", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    await page.goto(`${demo.origin}/#/`);
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=dashboard-card]").length >= 3);
    const first = await page.$eval("[data-testid=dashboard-card]", (c) => c.getAttribute("data-status"));
    expect(first).toBe("awaiting-approval");
    await shot(page, "dashboard-1280");
    await context.close();
  });

  it("a reconnect mid-stream leaves no gap and no duplicate", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    const streaming = await page.$eval("[data-testid=session-row][data-status=running]", (r) => r.getAttribute("data-session"));
    expect(streaming).toBeTruthy();
    await openSession(page, streaming!);
    const lastSeq = () => page.$eval("[data-testid=transcript]", (t) => Number(t.getAttribute("data-last-seq")));
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-last-seq")) > 5);
    for (let round = 0; round < 3; round++) {
      const before = await lastSeq();
      // Drop the socket under the app, as a flaky network would.
      await page.evaluate(() => (window as any).nucleic.connection.ws.close());
      await page.waitForSelector(".shell[data-link=online]");
      await page.waitForFunction((b) => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-last-seq")) > b + 3, before, { timeout: 60_000 });
    }
    const stats = await page.evaluate(() => {
      const s = (window as any).nucleic;
      return { gaps: s.connection.gaps, folded: s.transcript(location.hash.split("/")[2]).eventsFolded, last: s.transcript(location.hash.split("/")[2]).facts.lastSeq };
    });
    expect(stats.gaps).toBe(0);
    // Every seq from 1 to the last folded exactly once.
    expect(stats.folded).toBe(stats.last);
    await context.close();
  });

  it("an event kind the app does not know becomes a collapsed generic row", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    let rewrote = 0;
    await page.routeWebSocket(/\/ws$/, (ws) => {
      const server = ws.connectToServer();
      server.onMessage((m) => {
        const text = typeof m === "string" ? m : m.toString();
        const msg = JSON.parse(text);
        const events = msg.type === "event" ? [msg.event] : msg.type === "events" ? msg.events : [];
        const created = events.find((e: { kind: { type: string } }) => e.kind.type === "sessionCreated");
        if (created && rewrote === 0) {
          rewrote++;
          created.kind = { type: "holographicDisplay", beams: 3 };
          ws.send(JSON.stringify(msg));
          return;
        }
        ws.send(text);
      });
    });
    await page.goto(await loginLink(demo));
    await page.waitForSelector(".shell[data-link=online]");
    await openSession(page, demo.sessions[0].sessionID);
    await page.waitForSelector("[data-kind=unknown]");
    expect(await page.textContent("[data-kind=unknown] summary")).toContain("holographicDisplay");
    expect(rewrote).toBe(1);
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe("a session from the UI to a merge", () => {
  let demo: Demo;
  beforeAll(async () => {
    demo = await startDemo({ noSessions: true });
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it("create, watch it stream, approve, see the diff, merge, find it on main", async () => {
    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    const id = await newSessionFromUI(page, "think, then write cockpit.txt containing made in the browser");
    await page.waitForSelector("[data-kind=user]");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    expect(await page.textContent("[data-testid=approval-bar]")).toContain("cockpit.txt");
    await page.click("[data-testid=allow]");
    await page.waitForSelector("[data-testid=approval-bar]", { state: "detached" });
    await page.waitForSelector("[data-testid=diff-files] li[data-path='cockpit.txt']", { timeout: 30_000 });
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 30_000 });
    await page.click("[data-testid=tab-git]");
    await page.fill("[data-testid=commit-message]", "Add cockpit.txt from the browser");
    await page.check("[data-testid=update-checkout]");
    await page.click("[data-testid=merge]");
    await page.waitForSelector("[data-testid=finish-result]");
    expect(await page.textContent("[data-testid=finish-result]")).toContain("Merge: done");
    expect(git(demo.repo, "show", "main:cockpit.txt").trim()).toBe("made in the browser");
    expect(git(demo.repo, "log", "-1", "--format=%s", "main").trim()).toContain("Add cockpit.txt from the browser");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });

  it("two browsers answer one approval at once: one wins, the other is told who did", async () => {
    const a = await signedInPage(browser, await loginLink(demo), { name: "laptop" });
    const b = await signedInPage(browser, await loginLink(demo), { name: "phone", width: 390, height: 844, slowResolutions: true });
    const id = await newSessionFromUI(a.page, "write race.txt containing who wins");
    await a.page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await openSession(b.page, id);
    await b.page.waitForSelector("[data-testid=approval-bar]");
    // Both click at once. The phone hears of resolutions late (a slow network), so its answer
    // surely reaches the host after the laptop's or just before it: either way one wins.
    const click = (p: Page) => p.$eval("[data-testid=allow]", (el) => (el as HTMLButtonElement).click());
    await Promise.all([click(a.page), click(b.page)]);
    const outcome = async (p: Page) => {
      await p.waitForSelector("[data-testid=resolved-by]").catch(async (e) => {
        await shot(p, "failed-race");
        throw new Error(`${e}\n${await p.textContent("[data-testid=session-pane]")}`);
      });
      await p.waitForFunction(() => !document.querySelector("[data-testid=approval-bar]"));
      return (await p.textContent("[data-testid=resolved-by]")) ?? "";
    };
    // Let the refusal reach the loser.
    await new Promise((r) => setTimeout(r, 500));
    const [ta, tb] = [await outcome(a.page), await outcome(b.page)];
    const winner = /allow by (laptop|phone)/.exec(`${ta} ${tb}`)?.[1];
    expect(winner).toBeDefined();
    const loserText = winner === "laptop" ? tb : ta;
    expect(loserText.toLowerCase()).toContain(`answered by ${winner}`);
    // Exactly one approvalResolved in the transcript.
    const resolved = await a.page.$$eval("[data-testid=approval-outcome]", (els) => els.map((e) => e.textContent));
    expect(resolved).toHaveLength(1);
    await a.context.close();
    await b.context.close();
  });

  it("a 10 MB tool result is truncated with a way to see all of it", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    await newSessionFromUI(page, "run head -c 10485760 /dev/zero | tr '\\0' x");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await page.waitForSelector("[data-kind=tool] .tool-state.done, [data-kind=tool] .tool-state.error", { timeout: 60_000 });
    await page.click("[data-kind=tool] summary");
    await page.waitForSelector("[data-kind=tool] [data-testid=truncated]");
    const text = await page.textContent("[data-kind=tool] [data-testid=truncated]");
    expect(text).toMatch(/of 10\.0 MB/);
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });

  it("a command's network question is answered in the cockpit: allowed it goes out, denied it gets a 403", async () => {
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    // The simulated agent's command runs confined: its connections go through the session's
    // egress proxy, which asks about names off the allow-list (nothing resolves here: an allowed
    // name then fails to resolve upstream, a 502; a denied one is refused, a 403).
    const probe = (name: string) => `curl -sS -m 60 -o /dev/null -w '${name}=%{http_connect} ' https://${name}/`;
    const id = await newSessionFromUI(page, `run ${probe("let-out.invalid")}; ${probe("kept-in.invalid")}; echo probe-done`);
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    const question = async (name: string) => {
      await page.waitForFunction((n) => document.querySelector("[data-testid=egress-question]")?.textContent?.includes(n), `${name}:443`, { timeout: 60_000 }).catch(async (e) => {
        throw new Error(`${e}\n${await page.textContent("[data-testid=session-pane]")}\n--- host ---\n${demo.log().slice(-3000)}`);
      });
    };
    await question("let-out.invalid");
    await page.click("[data-testid=allow]");
    await question("kept-in.invalid");
    await page.click("[data-testid=deny]");
    await page.fill("[data-testid=deny-reason]", "not this one");
    await page.click("[data-testid=send-deny]");
    await page.waitForSelector("[data-testid=approval-bar]", { state: "detached", timeout: 60_000 });
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 60_000 });
    await page.click("[data-kind=tool] summary");
    const output = (await page.textContent("[data-kind=tool]")) ?? "";
    expect(output).toContain("probe-done");
    expect(output).toContain("let-out.invalid=502");
    expect(output).toContain("kept-in.invalid=403");
    const outcomes = await page.$$eval("[data-testid=approval-outcome]", (els) => els.map((e) => e.textContent ?? ""));
    expect(outcomes.filter((o) => /allow by/.test(o))).toHaveLength(2);
    expect(outcomes.some((o) => /deny by/.test(o))).toBe(true);
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });

  it("a 20,000-event transcript opens and scrolls", async () => {
    const file = path.join(tempDir("nucleic-e2e-"), "long.jsonl");
    writeFileSync(file, longTranscript(20_000));
    const { context, page } = await signedInPage(browser, await loginLink(demo), { width: 1280 });
    const reply = await page.evaluate((p) => (window as any).nucleic.request({ type: "intent", intent: { kind: "import", path: p } }), file);
    const id = (reply as { result: { sessionID: string } }).result.sessionID;
    const t0 = Date.now();
    await openSession(page, id);
    await page.waitForFunction(() => document.querySelector("[data-testid=transcript]")?.getAttribute("data-last-seq") === "20000", null, { timeout: 60_000 });
    const ms = Date.now() - t0;
    console.log(`20,000-event transcript: fully loaded and painted in ${ms} ms`);
    const rendered = await page.$$eval("[data-testid=transcript] .row-wrap", (r) => r.length);
    expect(rendered).toBeLessThan(200); // virtualized
    await page.evaluate(() => document.querySelector("[data-testid=transcript]")!.scrollTo(0, 0));
    await page.waitForSelector("[data-kind=notice], [data-kind=user]");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});

describe("bad input", () => {
  it("a wrong or reused sign-in link and no device get the not-signed-in page", async () => {
    const demo = await startDemo({ noSessions: true });
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${demo.origin}/login?token=not-a-token`);
      await page.waitForSelector("[data-testid=signed-out][data-reason=badLink]");
      expect(await page.textContent("body")).toMatch(/invalid, expired or already used/);
      expect(new URL(page.url()).search).toBe(""); // the token left the address bar
      await page.goto(`${demo.origin}/`);
      await page.waitForSelector("[data-testid=signed-out][data-reason=signedOut]");
      const api = await page.evaluate(async () => (await fetch("/api/message", { method: "POST", body: "{}" })).status);
      expect(api).toBe(401);
      // The printed link works once.
      await page.goto(demo.url);
      await page.waitForSelector(".shell[data-link=online]");
      const other = await browser.newContext();
      const p2 = await other.newPage();
      await p2.goto(demo.url);
      await p2.waitForSelector("[data-testid=signed-out][data-reason=badLink]");
      await other.close();
      await context.close();
    } finally {
      await demo.stop();
    }
  });

  it("an expired sign-in link gets the not-signed-in page", async () => {
    const demo = await startDemo({ noSessions: true, args: ["--login-link-ttl", "0"] });
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(demo.url);
      await page.waitForSelector("[data-testid=signed-out][data-reason=badLink]");
      expect(await page.textContent("body")).toMatch(/invalid, expired or already used/);
      await context.close();
    } finally {
      await demo.stop();
    }
  });

  it("a page on another local port gets no credential: no cookie, no key, no connection", async () => {
    const demo = await startDemo({ noSessions: true });
    // Another local web server the person visits (a dev server an agent started).
    const evil = http.createServer((_q, r) => r.end("<!doctype html><title>evil</title>")).listen(0, "127.0.0.1");
    await new Promise((r) => evil.once("listening", r));
    const evilOrigin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
    try {
      const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
      // Signed in, the browser holds no cookie for 127.0.0.1 (cookies ignore ports).
      expect(await context.cookies()).toEqual([]);
      const attacker = await context.newPage();
      await attacker.goto(evilOrigin);
      const tries = await attacker.evaluate(async (host) => {
        const status = async (path: string, init?: RequestInit) => {
          try {
            return (await fetch(`${host}${path}`, { credentials: "include", ...init })).status;
          } catch {
            return -1; // refused (and unreadable) cross-origin
          }
        };
        const ws = await new Promise<string>((resolve) => {
          const s = new WebSocket(`${host.replace("http", "ws")}/ws`);
          s.onopen = () => {
            s.send(JSON.stringify({ type: "hello", clientID: "evil", clientName: "evil", protocolVersion: 1 }));
          };
          s.onmessage = (m) => resolve(String(m.data));
          s.onclose = (e) => resolve(`closed ${e.code}`);
        });
        return {
          message: await status("/api/message", { method: "POST", body: '{"type":"listProjects","messageID":"x"}' }),
          challenge: await status("/api/challenge", { method: "POST" }),
          ws,
          db: await new Promise<number>((resolve) => {
            const open = indexedDB.open("nucleic");
            open.onsuccess = () => resolve(open.result.objectStoreNames.length);
            open.onerror = () => resolve(-1);
          }),
        };
      }, demo.origin);
      expect(tries.message).not.toBe(200);
      expect(tries.challenge).not.toBe(200);
      expect(tries.ws).not.toContain("welcome");
      expect(tries.db).toBe(0); // its IndexedDB is its own: the device key is not there
      // The cockpit itself is still online and signed in.
      await page.waitForSelector(".shell[data-link=online]");
      await context.close();
    } finally {
      evil.close();
      await demo.stop();
    }
  });

  it("revoking this browser from the devices sheet signs it out at once", async () => {
    const demo = await startDemo({ noSessions: true });
    try {
      const { context, page } = await signedInPage(browser, demo.url, { width: 1280, name: "desk" });
      await page.click("[data-testid=open-devices]");
      await page.waitForSelector("[data-testid=device][data-current=yes]");
      expect(await page.textContent("[data-testid=device][data-current=yes]")).toContain("desk");
      page.once("dialog", (d) => void d.accept());
      await page.click("[data-testid=sign-out]");
      await page.waitForSelector(".shell[data-link=signedOut]");
      // The key is gone: a reload is signed out too.
      await page.reload();
      await page.waitForSelector("[data-testid=signed-out][data-reason=signedOut]");
      await context.close();
    } finally {
      await demo.stop();
    }
  });

  it("the host going away shows a stale banner; when it comes back the same agent asks again and the answer lands", async () => {
    const home = tempDir("nucleic-e2e-home-");
    const demo = await startDemo({ noSessions: true, home });
    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    const id = await newSessionFromUI(page, "write back.txt containing still here");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    const asked = await page.getAttribute("[data-testid=approval-bar]", "data-request");
    await demo.stop("SIGKILL");
    await page.waitForSelector("[data-testid=link-banner]");
    expect(await page.textContent("[data-testid=link-banner]")).toMatch(/Disconnected/);
    expect(await page.getAttribute(".shell", "class")).toContain("stale");
    // Offline, an answer is refused on the spot (never queued for later).
    await page.click("[data-testid=allow]");
    expect(await page.textContent("[data-testid=approval-error]")).toMatch(/never queued or sent later/);
    const serve = await startServe(home, demo.port);
    try {
      await page.waitForSelector(".shell[data-link=online]", { timeout: 30_000 });
      await page.waitForSelector("[data-testid=link-banner]", { state: "detached" });
      // The agent outlived the killed host under its keeper: the new host re-adopted it and asks
      // its approval again under a new id, which this page answers.
      await page.waitForSelector(`[data-testid=approval-bar][data-request^="${asked}@"]`, { timeout: 30_000 });
      await page.click("[data-testid=allow]");
      await page.waitForFunction(
        (sid) => {
          const row = document.querySelector(`[data-testid=session-row][data-session="${sid}"]`);
          return row && row.getAttribute("data-status") === "awaiting-input";
        },
        id,
        { timeout: 30_000 },
      );
      const worktrees = path.join(demo.repo, ".nucleic", "worktrees");
      const written = readdirSync(worktrees).map((w) => path.join(worktrees, w, "back.txt")).filter((f) => existsSync(f));
      expect(written.length).toBe(1);
      expect(readFileSync(written[0], "utf8")).toContain("still here");
      const gaps = await page.evaluate(() => (window as any).nucleic.connection.gaps);
      expect(gaps).toBe(0);
      expect(pageErrors(page)).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});

// A demo of its own: after another test's merge into the checkout, a continue started from a
// fresh session in the same demo waited forever (not yet understood: see the stop note).
describe("continue in another agent", () => {
  let demo: Demo;
  beforeAll(async () => {
    demo = await startDemo({ noSessions: true });
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it("continue offers every other agent (told what happened so far) and by default forks into the same one", async () => {
    const { context, page } = await signedInPage(browser, demo.url, { width: 1280 });
    const id = await newSessionFromUI(page, "write carry.txt containing first part");
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    await page.click("[data-testid=allow]");
    await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 30_000 });
    await page.click("[data-testid=tab-git]");
    const options = await page.$$eval("[data-testid=continue-in] option", (os) =>
      os.map((o) => ({ value: (o as HTMLOptionElement).value, disabled: (o as HTMLOptionElement).disabled, text: o.textContent ?? "" })),
    );
    // The same agent first (this demo's sessions are simulated), then each other backend, not
    // offered where it is not installed.
    expect(options[0]).toEqual({ value: "", disabled: false, text: "the same agent (its conversation forked)" });
    const others = options.slice(1).map((o) => o.value);
    expect(others).not.toContain("simulated");
    expect(others).toEqual(expect.arrayContaining(["claudeCode", "codex", "gemini"]));
    for (const o of options.slice(1)) expect(o.text).toContain("told what happened so far");
    await page.fill("[data-testid=git-actions] textarea", "write more.txt containing second part");
    await page.click("[data-testid=continue]");
    await page.waitForFunction((old) => location.hash.startsWith("#/s/") && !location.hash.includes(old), id, { timeout: 30_000 });
    await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
    expect(await page.textContent("[data-testid=approval-bar]")).toContain("more.txt");
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  });
});
