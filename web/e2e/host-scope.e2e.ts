// Per-host state on a phone paired with two hosts: a phone-sized Chromium, the app loaded from
// the relay (workerd), two real daemons that listen on no TCP port. Input written offline on
// host A's session is kept for A: after **Switch** to host B (online), nothing of it is sent to
// B — the tray lists it labelled with A, still waiting — and once A is in reach it is sent to A
// over A's own channel (the fleet's connection), exactly once; back on A, it is there and the
// tray is empty. A's link is cut by routing the page's WebSockets for A's relay room only (closed
// with 4500: the relay's 4000 before a handshake would mean "the host refused this device").
// And the offline snapshot: reopened offline on B, the page shows B's last state, never A's.
import { existsSync } from "node:fs";
import path from "node:path";

import type { Browser, Page, WebSocketRoute } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";

import { Daemon, until } from "../../relay/test/daemon";
import { Relay } from "../../relay/test/support";
import { WEB, launch, pageErrors, waitOnline } from "./harness";

const DIST = path.join(WEB, "dist");

let relay: Relay;
let appURL: string;
let browser: Browser;
const daemons: Daemon[] = [];

beforeAll(async () => {
  if (!existsSync(path.join(DIST, "index.html"))) throw new Error("web/dist is not built: npm --prefix web run build");
  relay = await Relay.start({ app: DIST });
  appURL = relay.origin();
});
afterAll(async () => {
  await relay?.stop();
});
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
  for (const d of daemons.splice(0)) await d.stop();
});

async function host(): Promise<{ daemon: Daemon; project: string; hostID: string; link: string }> {
  const daemon = await Daemon.start(relay.url(""), { tcp: false });
  daemons.push(daemon);
  const project = daemon.cli("project", "add", daemon.repo).trim();
  const { link, hostID } = JSON.parse(daemon.cli("pair", "--json", "--name", "phone"));
  return { daemon, project, hostID, link };
}

type Win = {
  nucleic: {
    remote: { host: { hostID: string } };
    pending: { sent: number; actions: unknown[]; flush(): Promise<void> };
    sessions: Map<string, { lastSeq: number }>;
    connection: { cursor(id: string): number };
    request(m: unknown): Promise<{ type: string; result?: unknown }>;
  };
  nucleicFleet: { hosts: Array<{ hostID: string; store: { pending: { sent: number } } }> };
};

const hostOf = (p: Page) => p.evaluate(() => (window as unknown as Win).nucleic.remote.host.hostID);

/** The user prompts host `page`'s store reports for a session. */
async function prompts(page: Page, id: string): Promise<string[]> {
  const r = await page.evaluate(
    (sid) => (window as unknown as Win).nucleic.request({ type: "exportSession", sessionID: sid, format: "jsonl" }),
    id,
  );
  return String((r.result as { text: string }).text)
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { kind: { type: string; text?: string; isPartial?: boolean } })
    .filter((e) => e.kind.type === "userText" && !e.kind.isPartial)
    .map((e) => String(e.kind.text));
}

async function switchTo(page: Page, hostID: string) {
  await page.goto(`${appURL}/#/devices`);
  await page.waitForSelector("[data-testid=remote-host] >> nth=1", { timeout: 15_000 }).catch(async (e) => {
    await page.screenshot({ path: path.join(WEB, "e2e", "out", "host-scope-switch.png") });
    throw new Error(`${e}\n${await page.evaluate(() => document.body.innerText)}`);
  });
  await page.click("[data-testid=switch-host]");
  await page.waitForFunction((id) => (window as any).nucleic?.remote?.host?.hostID === id, hostID);
}

it("input queued offline on host A is never sent to host B after a switch; it reaches A once A is in reach", async () => {
  const a = await host();
  const b = await host();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(60_000);
  // The phone's link to A alone can be cut: its relay room's WebSockets close at once.
  const cut = new Set<string>();
  const open = new Map<WebSocketRoute, string>();
  await context.routeWebSocket(/\/v1\/rooms\/[0-9a-f]{64}\/device$/, (ws) => {
    const room = /\/rooms\/([0-9a-f]{64})\//.exec(ws.url())![1];
    if (cut.has(room)) {
      void ws.close({ code: 4500, reason: "offline (test)" });
      return;
    }
    ws.connectToServer();
    open.set(ws, room);
    ws.onClose(() => open.delete(ws));
  });
  const page: Page = await context.newPage();
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  const lines: string[] = [];
  (page as unknown as { consoleLines: string[] }).consoleLines = lines;
  page.on("console", (m) => lines.push(m.text()));
  /** What each host's queue holds, for a failure's message. */
  const explain = async (e: unknown) => {
    const dump = await page.evaluate(() =>
      JSON.stringify(
        (window as any).nucleicFleet?.hosts.map((h: any) => [h.hostID.slice(0, 8), h.primary, h.store.link, h.store.pending.lastError, h.store.pending.actions]),
      ),
    );
    throw new Error(`${e}\nhosts: ${dump}\nconsole: ${lines.slice(-20).join("\n")}`);
  };

  // Paired with B, then A: the page is on A.
  await page.goto(b.link);
  await waitOnline(page, 30_000);
  await page.goto(a.link);
  await page.reload();
  await waitOnline(page, 30_000);
  expect(await hostOf(page)).toBe(a.hostID);

  // A session on A the phone has seen to its end.
  const sid = a.daemon.cli("session", "new", "--project", a.project, "--agent", "sim", "think").split(/\s+/)[0];
  await until(`session ${sid} to wait for input`, 30_000, () => JSON.parse(a.daemon.cli("session", "show", sid)).status === "awaiting-input");
  await page.goto(`${appURL}/#/s/${sid}`);
  await page.waitForSelector(`[data-testid=session-pane][data-session="${sid}"]`);
  await page.waitForFunction((s) => {
    const n = (window as unknown as Win).nucleic;
    const last = n.sessions.get(s)?.lastSeq ?? 0;
    return last > 0 && n.connection.cursor(s) >= last;
  }, sid);

  // A out of reach; a follow-up written on A is queued.
  cut.add(a.hostID);
  for (const [ws, room] of [...open]) if (room === a.hostID) await ws.close({ code: 4500, reason: "offline (test)" });
  await page.waitForSelector(".shell[data-link=offline]");
  const text = "written on host A while it was out of reach";
  await page.fill("[data-testid=composer]", text);
  await page.click("[data-testid=send]");
  await page.waitForSelector("[data-testid=pending-item][data-state=queued]");

  // Switch to B, which is online; A is still out of reach.
  await switchTo(page, b.hostID);
  await waitOnline(page, 30_000);
  // B's queue flushed on connect; flushing again sends nothing either.
  await page.evaluate(() => (window as unknown as Win).nucleic.pending.flush());
  const item = `[data-testid=pending-item][data-host="${a.hostID}"]`;
  await page.waitForSelector(item).catch(explain);
  expect(await page.getAttribute(item, "data-state")).toBe("queued");
  expect(await page.textContent(`${item} [data-testid=pending-host]`)).toContain(a.hostID.slice(0, 8));
  expect(await page.textContent(item)).toContain("Waits for");
  expect(await page.evaluate(() => (window as unknown as Win).nucleic.pending.actions.length)).toBe(0);
  expect(await page.evaluate(() => (window as unknown as Win).nucleic.pending.sent)).toBe(0);
  // B never heard of A's session (nothing of it arrived there).
  expect(b.daemon.cli("session", "list")).not.toContain(sid);

  // A back in reach: its action goes to A over A's own connection, while the page stays on B.
  cut.delete(a.hostID);
  await page.waitForSelector("[data-testid=pending-tray]", { state: "detached", timeout: 60_000 }).catch(explain);
  const fleetSent = await page.evaluate(
    (id) => (window as unknown as Win).nucleicFleet.hosts.find((h) => h.hostID === id)!.store.pending.sent,
    a.hostID,
  );
  expect(fleetSent).toBe(1);
  expect(await page.evaluate(() => (window as unknown as Win).nucleic.pending.sent)).toBe(0);
  expect(await hostOf(page)).toBe(b.hostID);

  // Back on A: it was sent to A, once, and nothing is left waiting.
  await switchTo(page, a.hostID);
  await waitOnline(page, 30_000);
  await until(`session ${sid} to end the queued turn`, 30_000, () => JSON.parse(a.daemon.cli("session", "show", sid)).status === "awaiting-input");
  expect((await prompts(page, sid)).filter((t) => t === text)).toHaveLength(1);
  expect(await page.$("[data-testid=pending-tray]")).toBeNull();
  expect(pageErrors(page)).toEqual([]);
});

it("the offline snapshot is per host: offline on B shows B's last state, never A's; on A, A's", async () => {
  const a = await host();
  const b = await host();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(60_000);
  const cut = new Set<string>();
  const open = new Map<WebSocketRoute, string>();
  await context.routeWebSocket(/\/v1\/rooms\/[0-9a-f]{64}\/device$/, (ws) => {
    const room = /\/rooms\/([0-9a-f]{64})\//.exec(ws.url())![1];
    if (cut.has(room)) {
      void ws.close({ code: 4500, reason: "offline (test)" });
      return;
    }
    ws.connectToServer();
    open.set(ws, room);
    ws.onClose(() => open.delete(ws));
  });
  const page: Page = await context.newPage();
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  (page as unknown as { consoleLines: string[] }).consoleLines = [];
  const sessionsShown = () => page.evaluate(() => [...(window as any).nucleic.sessions.keys()] as string[]);

  // A has a session the phone sees; B has none.
  const sid = a.daemon.cli("session", "new", "--project", a.project, "--agent", "sim", "think").split(/\s+/)[0];
  await page.goto(b.link);
  await waitOnline(page, 30_000);
  await page.goto(a.link);
  await page.reload();
  await waitOnline(page, 30_000);
  await page.waitForFunction((s) => (window as any).nucleic.sessions.has(s), sid);
  // Saved half a second after the change.
  await page.waitForTimeout(1500);
  await switchTo(page, b.hostID);
  await waitOnline(page, 30_000);
  await page.goto(`${appURL}/#/`);
  await page.waitForTimeout(1500);
  expect(await sessionsShown()).toEqual([]);

  // Both out of reach: reopened on B, the page shows B's last state (no session), not A's.
  cut.add(a.hostID);
  cut.add(b.hostID);
  for (const [ws] of [...open]) await ws.close({ code: 4500, reason: "offline (test)" });
  await page.reload();
  await page.waitForSelector(".shell[data-link=offline]");
  await page.waitForTimeout(1000);
  expect(await hostOf(page)).toBe(b.hostID);
  expect(await sessionsShown()).toEqual([]);
  expect(await page.$$("[data-testid=session-row]")).toHaveLength(0);
  // On A (still offline): A's last state, marked as what this device last saw.
  await switchTo(page, a.hostID);
  await page.waitForFunction((s) => (window as any).nucleic.sessions.has(s), sid);
  expect(await page.evaluate(() => (window as any).nucleic.restoredAt)).not.toBeNull();
  expect(pageErrors(page)).toEqual([]);
});
