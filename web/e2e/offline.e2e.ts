/** The phone off the network: actions written offline are queued and flushed on reconnect
 *  after ccpocket's conflict rules while another client acts (one test per rule, a conflict and
 *  a non-conflict case for input), approval answers are refused offline and never sent later,
 *  two tabs flush a queued action once, and the inbox answers approvals of three sessions in
 *  two projects without opening any of them. The link is cut with `routeWebSocket`. */
import { execFileSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Browser, BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { type Demo, git, launch, loginLink, pageErrors, signedInPage, startDemo, startServe, tempDir, waitOnline } from "./harness";

let browser: Browser;
let demo: Demo;
beforeAll(async () => {
  demo = await startDemo({ noSessions: true });
});
afterAll(async () => {
  await demo?.stop();
});
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
});

/** A phone whose link to the host can be cut: every page of its context goes through a
 *  WebSocket route that, while `offline`, closes the socket at once. Frames the pages send are
 *  recorded. */
interface Phone {
  context: BrowserContext;
  page: Page;
  sent: string[];
  offline(): Promise<void>;
  online(): Promise<void>;
}

async function phone(opts: { width?: number; height?: number } = {}): Promise<Phone> {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 390, height: opts.height ?? 844 }, deviceScaleFactor: 1 });
  context.setDefaultTimeout(60_000);
  await context.addInitScript(() => localStorage.setItem("nucleic.clientName", "phone"));
  let cut = false;
  const open = new Set<WebSocketRoute>();
  const sent: string[] = [];
  await context.routeWebSocket(/\/ws$/, (ws) => {
    if (cut) {
      ws.close({ code: 4000, reason: "offline (test)" });
      return;
    }
    const server = ws.connectToServer();
    open.add(ws);
    ws.onMessage((m) => {
      const text = typeof m === "string" ? m : m.toString();
      sent.push(text);
      server.send(text);
    });
    ws.onClose(() => open.delete(ws));
  });
  const page = await context.newPage();
  await page.goto(await loginLink(demo));
  await waitOnline(page);
  return {
    context,
    page,
    sent,
    async offline() {
      cut = true;
      for (const ws of [...open]) await ws.close({ code: 4000, reason: "offline (test)" });
      await page.waitForSelector(".shell[data-link=offline]");
    },
    async online() {
      cut = false;
      await waitOnline(page);
    },
  };
}

type Store = { request(m: unknown): Promise<{ type: string; result?: unknown }>; sessions: Map<string, { status: string; title: string }> };

/** Another client acting through the protocol (its own browser, its own client id). */
async function otherClient(): Promise<Page> {
  const { page } = await signedInPage(browser, await loginLink(demo), { name: "laptop" });
  return page;
}

const ask = (page: Page, msg: unknown) => page.evaluate((m) => ((window as unknown as { nucleic: Store }).nucleic.request(m) as Promise<{ type: string; result?: unknown }>), msg);

async function newSession(page: Page, prompt: string, projectID = demo.projectID): Promise<string> {
  const r = await ask(page, { type: "intent", intent: { kind: "newSession", projectID, backend: "simulated", prompt } });
  return (r.result as { sessionID: string }).sessionID;
}

/** The session's status as the host reports it (polled through a client). */
async function waitStatus(page: Page, id: string, status: string) {
  await page.waitForFunction(
    ([sid, s]) => (window as unknown as { nucleic: Store }).nucleic.sessions.get(sid)?.status === s,
    [id, status] as const,
    { timeout: 60_000 },
  );
}

/** The user prompts the host recorded for a session. */
async function prompts(page: Page, id: string): Promise<string[]> {
  const r = await ask(page, { type: "exportSession", sessionID: id, format: "jsonl" });
  const text = String((r.result as { text: string }).text);
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { kind: { type: string; text?: string; isPartial?: boolean } })
    .filter((e) => e.kind.type === "userText" && !e.kind.isPartial)
    .map((e) => String(e.kind.text));
}

/** Opens a session and waits until its transcript caught up with the host (what the person
 *  has seen is what a queued action is based on). */
async function openSession(page: Page, id: string) {
  await page.goto(`${demo.origin}/#/s/${id}`);
  await page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
  await page.waitForFunction(
    (sid) => {
      const s = (window as unknown as { nucleic: { sessions: Map<string, { lastSeq: number }>; connection: { cursor(id: string): number } } }).nucleic;
      const last = s.sessions.get(sid)?.lastSeq ?? 0;
      return last > 0 && s.connection.cursor(sid) >= last;
    },
    id,
  );
}

/** Waits until the page's pending tray is gone (all sent); says what it holds otherwise. */
async function trayEmpty(page: Page) {
  try {
    await page.waitForSelector("[data-testid=pending-tray]", { state: "detached", timeout: 30_000 });
  } catch (e) {
    throw new Error(`${e}\npending tray: ${await page.textContent("[data-testid=pending-tray]").catch(() => "?")}`);
  }
}

/** Writes in the composer (offline: queued) and waits for the tray to show it. */
async function compose(page: Page, text: string) {
  const before = await page.$$eval("[data-testid=pending-item]", (els) => els.length);
  await page.fill("[data-testid=composer]", text);
  await page.click("[data-testid=send]");
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=pending-item]").length > n, before);
}

const pendingState = (page: Page) => page.getAttribute("[data-testid=pending-item]", "data-state");

describe("offline input (seed: input conflicts on another client's input, a turn-completing result, a context change)", () => {
  it("no conflict: the laptop renames meanwhile; the queued message is sent once on reconnect", async () => {
    const other = await otherClient();
    const id = await newSession(other, "think");
    await waitStatus(other, id, "awaiting-input");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    await compose(p.page, "think about it once more");
    expect(await pendingState(p.page)).toBe("queued");
    // Non-conflicting traffic meanwhile: a rename (session metadata).
    await ask(other, { type: "intent", intent: { kind: "rename", sessionID: id, title: "renamed by the laptop" } });
    await p.online();
    await trayEmpty(p.page);
    await waitStatus(other, id, "awaiting-input");
    expect((await prompts(other, id)).filter((t) => t === "think about it once more")).toHaveLength(1);
    expect(pageErrors(p.page)).toEqual([]);
  });

  it("conflict: the laptop sent input meanwhile; the phone is asked, and resends (edited) once", async () => {
    const other = await otherClient();
    const id = await newSession(other, "think");
    await waitStatus(other, id, "awaiting-input");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    await compose(p.page, "phone: stale follow-up");
    await ask(other, { type: "sendInput", sessionID: id, text: "laptop: think again" });
    await waitStatus(other, id, "awaiting-input");
    await p.online();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=conflict]");
    expect(await p.page.textContent("[data-testid=pending-reason]")).toMatch(/Someone else sent a message/);
    expect(await prompts(other, id)).not.toContain("phone: stale follow-up");
    // Edit, then send: the edited text goes, once.
    await p.page.click("[data-testid=pending-edit]");
    await p.page.fill("[data-testid=pending-edit-text]", "phone: fresh follow-up");
    await p.page.click("[data-testid=pending-send-edited]");
    await trayEmpty(p.page);
    const after = await prompts(other, id);
    expect(after.filter((t) => t === "phone: fresh follow-up")).toHaveLength(1);
    expect(after).not.toContain("phone: stale follow-up");
  });

  it("conflict: the turn completed meanwhile (a message meant for a running turn is not)", async () => {
    const other = await otherClient();
    const id = await newSession(other, "stream 40");
    await waitStatus(other, id, "running");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    // Running: written as "send after this turn" (queue), which a completed turn does not void.
    await compose(p.page, "after the stream");
    expect(await p.page.getAttribute("[data-testid=pending-item]", "data-kind")).toBe("queue");
    // And an input written against the running turn, which it does.
    await p.page.evaluate(
      ([sid]) => {
        const s = (window as unknown as { nucleic: { pending: { addInput(...a: unknown[]): Promise<unknown> }; connection: { cursor(id: string): number } } }).nucleic;
        return s.pending.addInput("input", sid, "about this turn", s.connection.cursor(sid), null);
      },
      [id] as const,
    );
    await waitStatus(other, id, "awaiting-input");
    await p.online();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=conflict]");
    expect(await p.page.textContent("[data-testid=pending-reason]")).toMatch(/finished its turn/);
    await waitStatus(other, id, "awaiting-input");
    const sent = await prompts(other, id);
    expect(sent.filter((t) => t === "after the stream")).toHaveLength(1);
    expect(sent).not.toContain("about this turn");
    // Drop: gone for good.
    await p.page.click("[data-testid=pending-drop]");
    await trayEmpty(p.page);
    expect(await prompts(other, id)).not.toContain("about this turn");
  });

  it("conflict: the session was stopped meanwhile (a context change)", async () => {
    const other = await otherClient();
    const id = await newSession(other, "think");
    await waitStatus(other, id, "awaiting-input");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    await compose(p.page, "keep going");
    await ask(other, { type: "intent", intent: { kind: "stop", sessionID: id } });
    await waitStatus(other, id, "finished");
    await p.online();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=conflict]");
    expect(await p.page.textContent("[data-testid=pending-reason]")).toMatch(/run ended/);
    expect(await prompts(other, id)).not.toContain("keep going");
    // The person sends it anyway: it resumes the stopped session, once.
    await p.page.click("[data-testid=pending-resend]");
    await trayEmpty(p.page);
    expect((await prompts(other, id)).filter((t) => t === "keep going")).toHaveLength(1);
  });
});

describe("other queued actions", () => {
  it("resume: sent when nobody resumed the session meanwhile, a conflict when someone did", async () => {
    const other = await otherClient();
    const calm = await newSession(other, "think");
    const busy = await newSession(other, "think");
    for (const id of [calm, busy]) {
      await waitStatus(other, id, "awaiting-input");
      await ask(other, { type: "intent", intent: { kind: "stop", sessionID: id } });
      await waitStatus(other, id, "finished");
    }
    const p = await phone();
    await openSession(p.page, busy);
    await openSession(p.page, calm);
    await p.offline();
    await compose(p.page, "resume quietly");
    // Offline, within the page (a reload would also work: the queue is stored).
    await p.page.evaluate((sid) => (location.hash = `#/s/${sid}`), busy);
    await p.page.waitForSelector(`[data-testid=session-pane][data-session="${busy}"]`);
    await compose(p.page, "resume too late");
    expect(await p.page.$$eval("[data-testid=pending-item]", (els) => els.map((e) => e.getAttribute("data-kind")))).toEqual(["resume", "resume"]);
    await ask(other, { type: "sendInput", sessionID: busy, text: "laptop resumed it" });
    await waitStatus(other, busy, "awaiting-input");
    await p.online();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=conflict]");
    expect(await p.page.$$eval("[data-testid=pending-item]", (els) => els.length)).toBe(1);
    expect(await prompts(other, calm)).toContain("resume quietly");
    expect(await prompts(other, busy)).not.toContain("resume too late");
  });

  it("resume: someone resumed the session elsewhere into another agent conversation: a conflict that says so", async () => {
    // Its own host, whose simulated agent answers a resume under a new conversation id.
    const shared = demo;
    const own = await startDemo({ noSessions: true, env: { NUCLEIC_SIM_FAULT: "fork_on_resume" } });
    demo = own;
    try {
      const other = await otherClient();
      const id = await newSession(other, "think");
      await waitStatus(other, id, "awaiting-input");
      await ask(other, { type: "intent", intent: { kind: "stop", sessionID: id } });
      await waitStatus(other, id, "finished");
      const p = await phone();
      await openSession(p.page, id);
      await p.offline();
      await compose(p.page, "resume on the phone");
      expect(await p.page.getAttribute("[data-testid=pending-item]", "data-kind")).toBe("resume");
      await ask(other, { type: "sendInput", sessionID: id, text: "laptop resumed it" });
      await waitStatus(other, id, "awaiting-input");
      // The host recorded the switch: two agent conversations.
      const r = await ask(other, { type: "exportSession", sessionID: id, format: "jsonl" });
      const conversations = new Set(
        String((r.result as { text: string }).text)
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { kind: { type: string; backendSessionID?: string } })
          .filter((e) => e.kind.type === "sessionStarted")
          .map((e) => e.kind.backendSessionID),
      );
      expect(conversations.size).toBe(2);
      await p.online();
      await p.page.waitForSelector("[data-testid=pending-item][data-state=conflict]");
      expect(await p.page.textContent("[data-testid=pending-reason]")).toMatch(/resumed elsewhere/);
      expect(await prompts(other, id)).not.toContain("resume on the phone");
      expect(p.sent.filter((f) => f.includes("resume on the phone"))).toEqual([]);
    } finally {
      demo = shared;
      await own.stop();
    }
  });

  it("start: valid options start the session; a project removed meanwhile fails it", async () => {
    const other = await otherClient();
    const repo = tempDir("nucleic-e2e-gone-");
    git(repo, "init", "-q", "-b", "main");
    writeFileSync(path.join(repo, "README"), "x\n");
    git(repo, "add", ".");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init");
    const added = await ask(other, { type: "intent", intent: { kind: "addProject", path: repo, name: "doomed" } });
    const doomed = (added.result as { projectID: string }).projectID;
    const p = await phone();
    await p.offline();
    // From the sheet: the demo project.
    await p.page.goto(`${demo.origin}/#/new`);
    await p.page.selectOption("select[name=project]", demo.projectID);
    await p.page.fill("textarea[name=prompt]", "started from the queue");
    await p.page.click("[data-testid=create-session]");
    await p.page.evaluate((pid) => (window as unknown as { nucleic: { pending: { addStart(s: unknown): Promise<unknown> } } }).nucleic.pending.addStart({ projectID: pid, backend: "simulated", prompt: "never started" }), doomed);
    await ask(other, { type: "intent", intent: { kind: "removeProject", projectID: doomed } });
    await p.online();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=failed]");
    expect(await p.page.textContent("[data-testid=pending-reason]")).toMatch(/project no longer exists/);
    await other.waitForFunction(() => [...(window as unknown as { nucleic: Store }).nucleic.sessions.values()].some((s) => s.title.includes("started from the queue")));
    const titles = await other.evaluate(() => [...(window as unknown as { nucleic: Store }).nucleic.sessions.values()].map((s) => s.title));
    expect(titles.some((t) => t.includes("never started"))).toBe(false);
  });

  it("rename: latest wins over a rename made meanwhile", async () => {
    const other = await otherClient();
    const id = await newSession(other, "think");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    p.page.once("dialog", (d) => void d.accept("phone's name"));
    await p.page.click("[data-testid=session-menu]");
    await p.page.click("[data-testid=rename]");
    await p.page.waitForSelector("[data-testid=pending-item][data-kind=rename]");
    await ask(other, { type: "intent", intent: { kind: "rename", sessionID: id, title: "laptop's name" } });
    await p.online();
    await trayEmpty(p.page);
    await other.waitForFunction((sid) => (window as unknown as { nucleic: Store }).nucleic.sessions.get(sid)?.title === "phone's name", id);
  });

  it("a session deleted meanwhile: its queued message and rename fail, and nothing is sent", async () => {
    // Its own host: this one is stopped, loses the session, and comes back on the same port.
    const shared = demo;
    const own = await startDemo({ noSessions: true, home: path.join(tempDir("nucleic-e2e-deleted-"), "home") });
    demo = own;
    let back: Awaited<ReturnType<typeof startServe>> | undefined;
    try {
      const other = await otherClient();
      const id = await newSession(other, "think");
      await waitStatus(other, id, "awaiting-input");
      const p = await phone();
      await openSession(p.page, id);
      await p.offline();
      await compose(p.page, "for a session about to go");
      p.page.once("dialog", (d) => void d.accept("a name for nothing"));
      await p.page.click("[data-testid=session-menu]");
      await p.page.click("[data-testid=rename]");
      await p.page.waitForSelector("[data-testid=pending-item][data-kind=rename]");
      // The session is deleted: its folder and catalog row go while the host is down (the host
      // has no delete of its own; this is what a session gone from its disk looks like).
      await own.stop();
      rmSync(path.join(own.home, "sessions", id), { recursive: true, force: true });
      execFileSync("python3", [
        "-B",
        "-c",
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA foreign_keys = ON'); c.execute('DELETE FROM sessions WHERE id = ?', (sys.argv[2],)); c.commit()",
        path.join(own.home, "catalog.sqlite"),
        id,
      ]);
      back = await startServe(own.home, own.port);
      const before = p.sent.length;
      await p.online();
      await p.page.waitForFunction(() => document.querySelectorAll("[data-testid=pending-item][data-state=failed]").length === 2, null, { timeout: 30_000 });
      const reasons = await p.page.$$eval("[data-testid=pending-reason]", (els) => els.map((e) => e.textContent ?? ""));
      expect(reasons).toHaveLength(2);
      for (const r of reasons) expect(r).toMatch(/session no longer exists/);
      const after = p.sent.slice(before);
      expect(after.filter((f) => f.includes("for a session about to go") || f.includes("a name for nothing"))).toEqual([]);
      // Dropped by the person: gone for good.
      for (let left = 2; left > 0; left--) {
        await p.page.locator("[data-testid=pending-drop]").first().click();
        await p.page.waitForFunction((n) => document.querySelectorAll("[data-testid=pending-item]").length === n, left - 1);
      }
      await trayEmpty(p.page);
      expect(pageErrors(p.page)).toEqual([]);
    } finally {
      demo = shared;
      await back?.stop();
      await own.stop();
    }
  });

  it("an approval tapped offline is refused with a clear message and never sent later", async () => {
    const other = await otherClient();
    const id = await newSession(other, "write offline.txt containing never");
    await waitStatus(other, id, "awaiting-approval");
    const p = await phone();
    await openSession(p.page, id);
    await p.page.waitForSelector("[data-testid=approval-bar]");
    await p.offline();
    await p.page.click("[data-testid=allow]");
    expect(await p.page.textContent("[data-testid=approval-error]")).toMatch(/offline.*never queued or sent later/);
    expect(await p.page.$("[data-testid=pending-tray]")).toBeNull();
    await p.online();
    // Give a flush every chance to (wrongly) send it.
    await p.page.waitForTimeout(1500);
    expect(p.sent.filter((f) => f.includes('"decide"'))).toEqual([]);
    await waitStatus(other, id, "awaiting-approval");
    const worktree = await other.evaluate((sid) => (window as unknown as { nucleic: { sessions: Map<string, { worktree?: { path: string } }> } }).nucleic.sessions.get(sid)?.worktree?.path ?? "", id);
    expect(existsSync(path.join(worktree, "offline.txt"))).toBe(false);
  });

  it("survives a reload, and two tabs flushing the same action send it once", async () => {
    const other = await otherClient();
    const id = await newSession(other, "think");
    await waitStatus(other, id, "awaiting-input");
    const p = await phone();
    await openSession(p.page, id);
    await p.offline();
    await compose(p.page, "only once please");
    // The queue is in IndexedDB: a reload (the app shell still loads) keeps it.
    await p.page.reload();
    await p.page.waitForSelector("[data-testid=pending-item][data-state=queued]");
    const tab2 = await p.context.newPage();
    await tab2.goto(`${demo.origin}/#/s/${id}`);
    await tab2.waitForSelector("[data-testid=pending-item][data-state=queued]");
    await p.online();
    await waitOnline(tab2);
    await trayEmpty(p.page);
    await trayEmpty(tab2);
    await waitStatus(other, id, "awaiting-input");
    expect((await prompts(other, id)).filter((t) => t === "only once please")).toHaveLength(1);
    expect(p.sent.filter((f) => f.includes("only once please")).length).toBeGreaterThanOrEqual(1);
  });
});

describe("the inbox", () => {
  it("answers approvals of three sessions in two projects without opening any of them", async () => {
    const other = await otherClient();
    const repo = tempDir("nucleic-e2e-second-");
    git(repo, "init", "-q", "-b", "main");
    writeFileSync(path.join(repo, "README"), "x\n");
    git(repo, "add", ".");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init");
    const added = await ask(other, { type: "intent", intent: { kind: "addProject", path: repo, name: "second" } });
    const second = (added.result as { projectID: string }).projectID;
    const a = await newSession(other, "write inbox-a.txt containing a");
    const b = await newSession(other, "write inbox-b.txt containing b");
    const c = await newSession(other, "write inbox-c.txt containing c", second);
    for (const id of [a, b, c]) await waitStatus(other, id, "awaiting-approval");

    const p = await phone();
    await p.page.goto(`${demo.origin}/#/inbox`);
    // Earlier tests may have left other sessions waiting: count ours, and the total.
    const ours = (ids: string[]) => ids.map((id) => `[data-testid=inbox-item][data-session="${id}"]`).join(", ");
    await p.page.waitForFunction((sel) => document.querySelectorAll(sel).length === 3, ours([a, b, c]));
    const total = await p.page.$$eval("[data-testid=inbox-item]", (els) => els.length);
    expect(await p.page.title()).toMatch(new RegExp(`^\\(${total}\\) `));
    expect(await p.page.textContent("[data-testid=inbox-count]")).toBe(String(total));
    if (process.env.NUCLEIC_SCREENSHOTS) await p.page.screenshot({ path: path.join(process.env.NUCLEIC_SCREENSHOTS, "cockpit-390-inbox.png") });
    // Simulated sessions carry no risk class (the policy engine skips them), so the order is
    // newest first; risk order and the critical confirmation are unit-tested (inbox.test.ts,
    // ApprovalBar.test.tsx) — the inbox uses the same approval bar.
    const order = await p.page.$$eval("[data-testid=inbox-item]", (els) => els.map((e) => e.getAttribute("data-session")));
    const newestFirst = await p.page.evaluate(
      (ids) => ids.sort((x, y) => ((window as unknown as { nucleic: { sessions: Map<string, { updatedAt: number }> } }).nucleic.sessions.get(y)?.updatedAt ?? 0) - ((window as unknown as { nucleic: { sessions: Map<string, { updatedAt: number }> } }).nucleic.sessions.get(x)?.updatedAt ?? 0)),
      [a, b, c],
    );
    expect(order.filter((id) => id === a || id === b || id === c)).toEqual(newestFirst);
    for (const id of [a, b, c]) await p.page.click(`[data-testid=inbox-item][data-session="${id}"] [data-testid=allow]`);
    await p.page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, ours([a, b, c]), { timeout: 60_000 });
    for (const id of [a, b, c]) await waitStatus(other, id, "awaiting-input");
    const left = total - 3;
    if (left > 0) await p.page.waitForFunction((n) => document.title.startsWith(`(${n}) `), left);
    else expect(await p.page.title()).not.toMatch(/^\(\d+\)/);
    // Never opened: no session pane was shown on the phone.
    expect(await p.page.$("[data-testid=session-pane]")).toBeNull();
    const wt = (id: string) => other.evaluate((sid) => (window as unknown as { nucleic: { sessions: Map<string, { worktree?: { path: string } }> } }).nucleic.sessions.get(sid)?.worktree?.path ?? "", id);
    expect(existsSync(path.join(await wt(a), "inbox-a.txt"))).toBe(true);
    expect(existsSync(path.join(await wt(b), "inbox-b.txt"))).toBe(true);
    expect(existsSync(path.join(await wt(c), "inbox-c.txt"))).toBe(true);
    expect(pageErrors(p.page)).toEqual([]);
  });
});

describe("the phone at 390 px", () => {
  it("going from one session to another shows the second one's transcript (same view, another transcript)", async () => {
    const other = await otherClient();
    const first = await newSession(other, "think");
    const second = await newSession(other, "think");
    for (const id of [first, second]) await waitStatus(other, id, "awaiting-input");
    const p = await phone();
    for (const id of [first, second, first]) {
      await p.page.evaluate((sid) => (location.hash = `#/s/${sid}`), id);
      await p.page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
      // Both transcripts fold the same number of batches: an equal version must still repaint.
      await p.page.waitForFunction(() => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-rows")) > 0, null, { timeout: 20_000 });
    }
    expect(pageErrors(p.page)).toEqual([]);
  });

  it("a header that fits, details behind a tap, thumb-sized targets, composer and approvals at the bottom, landscape", async () => {
    const other = await otherClient();
    const id = await newSession(other, "write phone-layout.txt containing a long enough session title to need two lines");
    await waitStatus(other, id, "awaiting-approval");
    const p = await phone();
    await openSession(p.page, id);
    await p.page.waitForSelector("[data-testid=approval-bar]");
    const title = await p.page.$eval(".session-head h1", (h) => ({ width: h.getBoundingClientRect().width, height: h.getBoundingClientRect().height, lines: Math.round(h.getBoundingClientRect().height / parseFloat(getComputedStyle(h).lineHeight)) }));
    expect(title.width).toBeGreaterThan(220);
    expect(title.lines).toBeLessThanOrEqual(2);
    // Branch, model and permission pickers are folded away until asked for.
    expect(await p.page.$("[data-testid=settings-bar]")).toBeNull();
    expect(await p.page.$(".session-head .branch")).toBeNull();
    await p.page.click("[data-testid=toggle-details]");
    await p.page.waitForSelector("[data-testid=settings-bar]");
    await p.page.waitForSelector(".session-head .branch");
    await p.page.click("[data-testid=toggle-details]");
    // Every visible button of the session is at least 44 × 44 px.
    const small = await p.page.$$eval("[data-testid=session-pane] button, [data-testid=session-pane] select", (els) =>
      els
        .filter((e) => (e as HTMLElement).offsetParent !== null)
        .map((e) => ({ what: e.textContent?.trim() || e.getAttribute("data-testid"), w: e.getBoundingClientRect().width, h: e.getBoundingClientRect().height }))
        .filter((r) => r.w < 44 || r.h < 44),
    );
    expect(small).toEqual([]);
    // The approval bar and the composer sit in the bottom half (the thumb's reach), on screen.
    for (const sel of ["[data-testid=approval-bar] [data-testid=allow]", "[data-testid=composer]"]) {
      const box = (await p.page.locator(sel).boundingBox())!;
      expect(box.y).toBeGreaterThan(844 / 2);
      expect(box.y + box.height).toBeLessThanOrEqual(844);
    }
    // Landscape: the approval's buttons stay on screen.
    await p.page.setViewportSize({ width: 844, height: 390 });
    // The resize re-lays the pane out: wait for the button to be there again before measuring.
    const button = p.page.locator("[data-testid=approval-bar] [data-testid=allow]");
    await button.waitFor({ state: "visible", timeout: 10_000 });
    const allow = (await button.boundingBox())!;
    expect(allow.y + allow.height).toBeLessThanOrEqual(390);
    expect(pageErrors(p.page)).toEqual([]);
  });
});
