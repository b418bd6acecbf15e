// The cockpit from afar: a phone-sized Chromium opens the link `nucleic pair` printed, on the
// relay's own origin — the relay (workerd) serves the built app (web/dist) as static assets, the
// link's default app origin — and reaches a host that listens on no TCP port at all, through
// that relay. Pair, list sessions, stream, approve, read the diff, merge — then `nucleic device
// revoke` and the page loses access at once. The relay records every frame it forwarded: none
// holds the test's markers. A relay restart mid-stream: the page reconnects (IK) and catches up
// with zero gaps and duplicates.
import { existsSync } from "node:fs";
import path from "node:path";

import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";

import { Daemon } from "../../relay/test/daemon";
import { Relay } from "../../relay/test/support";
import { WEB, git, launch, loginLink, pageErrors, signedInPage, waitOnline } from "./harness";

const DIST = path.join(WEB, "dist");

let relay: Relay;
let appURL: string;
let browser: Browser;
let daemon: Daemon | null = null;

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
  await daemon?.stop();
  daemon = null;
});

async function phone(link: string, context?: BrowserContext): Promise<Page> {
  context ??= await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  const lines: string[] = [];
  (page as unknown as { consoleLines: string[] }).consoleLines = lines;
  page.on("console", (m) => lines.push(m.text()));
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(link);
  await waitOnline(page, 30_000);
  return page;
}

function pairLink(d: Daemon): { link: string; hostID: string } {
  return JSON.parse(d.cli("pair", "--json", "--name", "MARKER-phone"));
}

async function newSession(page: Page, prompt: string): Promise<string> {
  await page.click("[data-testid=new-session]");
  await page.waitForSelector("[data-testid=new-session-sheet]");
  await page.selectOption("select[name=backend]", "simulated");
  await page.fill("textarea[name=prompt]", prompt);
  await page.click("[data-testid=create-session]");
  await page.waitForFunction(() => /#\/s\//.test(location.hash), null, { timeout: 30_000 });
  return decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
}

it("pairs by the link, works a session from the phone through the relay, and loses access at once on revoke", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  expect(daemon.listeningSockets()).toEqual([]);
  daemon.cli("project", "add", daemon.repo, "--name", "MARKER-project");
  const { link, hostID } = pairLink(daemon);
  // No --app-url: the link's app is the relay's own origin, which serves the shell.
  expect(link.startsWith(`${appURL}/#pair&`)).toBe(true);
  const page = await phone(link);
  // The shell came from the relay with its policy, which let the page reach the relay, and its
  // service worker registered there.
  const shell = await page.request.get(`${appURL}/`);
  expect(shell.headers()["content-security-policy"]).toContain(`connect-src 'self' ws://127.0.0.1:${relay.port};`);
  const worker = await page.waitForFunction(
    () => navigator.serviceWorker.getRegistration("/").then((r) => (r?.active ?? r?.waiting ?? r?.installing)?.scriptURL),
    null,
    { timeout: 10_000 },
  );
  expect(await worker.jsonValue()).toBe(`${appURL}/sw.js`);
  // The link left the address bar; the device is recorded at the host.
  expect(new URL(page.url()).hash).not.toContain("pair");
  expect(daemon.cli("device", "list")).toContain("MARKER-phone");

  const id = await newSession(page, "think, then write MARKER-notes.txt containing MARKER-content");
  await page.waitForSelector(`[data-testid=session-pane][data-session="${id}"]`);
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain("MARKER-notes.txt");
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=approval-bar]", { state: "detached" });
  // The list shows it; then its tools: the diff, and the merge.
  await page.goto(`${appURL}/#/`);
  await page.waitForSelector(`[data-testid=session-row][data-session="${id}"][data-status=awaiting-input]`, { timeout: 30_000 });
  await page.goto(`${appURL}/#/s/${id}/tools`);
  await page.waitForSelector("[data-testid=diff-files] li[data-path='MARKER-notes.txt']", { timeout: 30_000 });
  await page.click("[data-testid=tab-git]");
  await page.fill("[data-testid=commit-message]", "MARKER-merge from the phone");
  await page.check("[data-testid=update-checkout]");
  await page.click("[data-testid=merge]");
  await page.waitForSelector("[data-testid=finish-result]");
  expect(await page.textContent("[data-testid=finish-result]")).toContain("Merge: done");
  expect(git(daemon.repo, "show", "main:MARKER-notes.txt").trim()).toBe("MARKER-content");

  const deviceID = daemon.cli("device", "list").split("\n").find((l) => l.includes("MARKER-phone"))!.split(/\s+/)[0];
  const t0 = Date.now();
  daemon.cli("device", "revoke", deviceID);
  await page.waitForSelector(".shell[data-link=signedOut]", { timeout: 3000 });
  console.log(`the page lost access ${Date.now() - t0} ms after the revoke command started`);
  // Reloading does not bring it back: the revoked host was forgotten, nothing to reconnect.
  await page.reload();
  await page.waitForSelector("[data-testid=signed-out]", { timeout: 10_000 });

  const frames = await relay.frames(hostID);
  const needles = ["MARKER", "think, then write", daemon.token(), new URL(link).hash.match(/&s=([^&]+)/)![1]].map((m) => Buffer.from(m));
  expect(frames.length).toBeGreaterThan(20);
  for (const f of frames) {
    const b = Buffer.from(f.base64, "base64");
    for (const n of needles) expect(b.indexOf(n)).toBe(-1);
  }
  expect(pageErrors(page)).toEqual([]);
  const consoleLines = (page as unknown as { consoleLines: string[] }).consoleLines;
  expect(consoleLines.filter((l) => /Content Security Policy|Refused to/.test(l))).toEqual([]);
});

it("a relay restart mid-stream: the page reconnects and catches up with no gap and no duplicate", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  daemon.cli("project", "add", daemon.repo);
  const page = await phone(pairLink(daemon).link);
  const id = await newSession(page, "stream 60");
  const cursor = () => page.evaluate((sid) => (window as any).nucleic.connection.cursor(sid) as number, id);
  await page.waitForFunction((sid) => (window as any).nucleic.connection.cursor(sid) > 15, id, { timeout: 30_000 });
  await relay.restart();
  await page.waitForSelector(".shell:not([data-link=online])", { timeout: 10_000 });
  await waitOnline(page, 30_000);
  // The turn ends at the host (the session pane stays open, so the page stays subscribed) …
  const host = daemon;
  const deadline = Date.now() + 60_000;
  let shown = JSON.parse(host.cli("session", "show", id));
  while (shown.status === "running" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    shown = JSON.parse(host.cli("session", "show", id));
  }
  expect(shown.status).toBe("awaiting-input");
  const last = shown.lastSeq as number;
  // … and the page has every event up to its last.
  await page.waitForFunction(([sid, n]) => (window as any).nucleic.connection.cursor(sid) === n, [id, last] as const, { timeout: 30_000 });
  const { gaps, dups } = await page.evaluate(() => ({ gaps: (window as any).nucleic.connection.gaps, dups: (window as any).nucleic.connection.duplicatesDropped }));
  expect(gaps).toBe(0);
  expect(dups).toBe(0);
  console.log(`caught up to seq ${await cursor()} (the host's last ${last}); duplicates dropped on resubscribe: ${dups}`);
  expect(pageErrors(page)).toEqual([]);
});

it("the host's own cockpit opens a pairing; a phone keeps two hosts and switches between them", async () => {
  daemon = await Daemon.start(relay.url(""));
  const other = await Daemon.start(relay.url(""), { tcp: false });
  try {
    // On the host's machine: the devices sheet's "Pair a phone" shows a QR code and the link.
    const desk = await signedInPage(browser, await loginLink({ home: daemon.home, origin: daemon.origin() }));
    await desk.page.goto(`${daemon.origin()}/#/devices`);
    await desk.page.click("[data-testid=open-pairing]");
    await desk.page.waitForSelector("[data-testid=pairing] img");
    const link = (await desk.page.textContent("[data-testid=pairing-link]"))!.trim();
    const phonePage = await phone(link);
    const first = JSON.parse(daemon.cli("pair", "--json")).hostID as string;
    const hostOf = (p: Page) => p.evaluate(() => (window as any).nucleic.remote.host.hostID as string);
    expect(await hostOf(phonePage)).toBe(first);
    // A second host: its link, in the same phone.
    await phonePage.goto(JSON.parse(other.cli("pair", "--json")).link);
    await phonePage.reload();
    await waitOnline(phonePage, 30_000);
    const second = await hostOf(phonePage);
    expect(second).not.toBe(first);
    await phonePage.goto(`${appURL}/#/devices`);
    await phonePage.waitForSelector("[data-testid=remote-host] >> nth=1");
    await phonePage.click("[data-testid=switch-host]");
    await waitOnline(phonePage, 30_000);
    expect(await hostOf(phonePage)).toBe(first);
    expect(pageErrors(phonePage)).toEqual([]);
  } finally {
    await other.stop();
  }
});
