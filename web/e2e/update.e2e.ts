/** App updates on a phone viewport with real releases: build A is served and its service worker
 *  controls the page, then the app host serves build B (another build of this checkout: new
 *  asset hashes, precache list and build id). B waits while A's page is in the middle of
 *  something (a half-typed message, an open approval) — also when a second window opens — and
 *  takes over on the next open, A's cache gone. An older app speaking another protocol version
 *  is refused by the host, finds the current app and takes it, once. */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { type Demo, launch, loginLink, pageErrors, signedInPage, startDemo, waitOnline } from "./harness";
import { type AppHost, type Release, buildID, buildRelease, startAppHost } from "./releases";
import { PROTOCOL_VERSION } from "../src/protocol.gen";

const PHONE = { width: 390, height: 844 };

let demo: Demo;
let releaseA: Release;
let releaseB: Release;
let releaseOld: Release;
let browser: Browser;
let app: AppHost | undefined;

beforeAll(async () => {
  demo = await startDemo({ noSessions: true });
  releaseA = buildRelease("A");
  releaseB = buildRelease("B");
  releaseOld = buildRelease("old", { protocol: PROTOCOL_VERSION - 1 });
}, 300_000);
afterAll(async () => {
  await demo?.stop();
});
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
  await app?.close();
  app = undefined;
});

async function phoneContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 1 });
  context.setDefaultTimeout(60_000);
  await context.addInitScript(() => localStorage.setItem("nucleic.clientName", "phone"));
  return context;
}

/** A page that keeps its console and errors (for diagnosis and `pageErrors`). */
async function newPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  const errors: string[] = [];
  const lines: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => lines.push(`${m.type()}: ${m.text()}`));
  Object.assign(page, { errors, consoleLines: lines });
  return page;
}

/** A fresh sign-in link, opened at the app host instead of the host itself. */
async function signInLink(appHost: AppHost): Promise<string> {
  const link = new URL(await loginLink(demo));
  return `${appHost.origin}${link.pathname}${link.search}`;
}

const release = (page: Page) => page.evaluate(() => document.documentElement.dataset.release ?? null);

/** The build id of the worker controlling the page (asked through postMessage). */
function controllerBuild(page: Page): Promise<string | null> {
  return page.evaluate(
    () =>
      new Promise<string | null>((resolve) => {
        const c = navigator.serviceWorker.controller;
        if (!c) return resolve(null);
        const timer = setTimeout(() => resolve("no answer"), 5000);
        navigator.serviceWorker.addEventListener("message", function on(e: MessageEvent) {
          const d = e.data as { type?: string; build?: string };
          if (d?.type !== "version") return;
          navigator.serviceWorker.removeEventListener("message", on);
          clearTimeout(timer);
          resolve(d.build ?? null);
        });
        c.postMessage({ type: "version" });
      }),
  );
}

const shellCaches = (page: Page) => page.evaluate(async () => (await caches.keys()).filter((k) => k.startsWith("nucleic-shell-")).sort());

async function controlled(page: Page): Promise<void> {
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
}

/** The state of the registration's waiting worker, once the browser has checked for a new one. */
async function checkForUpdate(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const reg = await navigator.serviceWorker.getRegistration();
    await reg?.update();
  });
}

const waitingWorker = (page: Page) =>
  page.evaluate(async () => {
    const reg = await navigator.serviceWorker.getRegistration();
    return reg?.waiting ? reg.waiting.state : null;
  });

type Store = { request(m: unknown): Promise<{ type: string; result?: unknown }>; sessions: Map<string, { status: string }> };
const ask = (page: Page, msg: unknown) => page.evaluate((m) => (window as unknown as { nucleic: Store }).nucleic.request(m), msg);

describe("a new release", () => {
  it("waits while a page is mid-action (also when a second window opens), takes over on the next open, and A's cache is gone", async () => {
    app = await startAppHost(demo.origin, releaseA);
    const context = await phoneContext();
    const page = await newPage(context);
    await page.goto(await signInLink(app));
    await waitOnline(page);
    await controlled(page);
    expect(await release(page)).toBe("A");
    expect(await controllerBuild(page)).toBe(buildID(releaseA));
    expect(await shellCaches(page)).toEqual([`nucleic-shell-p${PROTOCOL_VERSION}-${buildID(releaseA)}`]);

    // Mid-action: a message half typed in one session, an approval waiting in another.
    // (Started by another client, as the phone would find them.)
    const { page: laptop } = await signedInPage(browser, await loginLink(demo), { name: "laptop" });
    const start = async (prompt: string) => {
      const r = await ask(laptop, { type: "intent", intent: { kind: "newSession", projectID: demo.projectID, backend: "simulated", prompt } });
      return (r.result as { sessionID: string }).sessionID;
    };
    const typing = await start("think");
    const approving = await start("write update.txt containing mid-action");
    await page.evaluate((sid) => (location.hash = `#/s/${sid}`), typing);
    await page.waitForSelector(`[data-testid=session-pane][data-session="${typing}"] [data-testid=composer]:not([disabled])`);
    await page.fill("[data-testid=composer]", "half-typed, not sent");
    await page.evaluate(() => Object.assign(window, { beforeUpdate: true }));

    // Release B goes live; the browser finds its worker (as on a navigation or its daily check).
    app.serve(releaseB);
    await checkForUpdate(page);
    await expect.poll(() => waitingWorker(page), { timeout: 30_000 }).toBe("installed");
    // B's files are fetched into B's own cache; A's page is left alone.
    await expect.poll(() => shellCaches(page)).toHaveLength(2);
    const stillA = async (p: Page) => {
      expect(await p.evaluate(() => (window as unknown as { beforeUpdate?: boolean }).beforeUpdate)).toBe(true);
      expect(await release(p)).toBe("A");
      expect(await controllerBuild(p)).toBe(buildID(releaseA));
    };
    await page.waitForTimeout(1000);
    await stillA(page);
    expect(await page.inputValue("[data-testid=composer]")).toBe("half-typed, not sent");

    // A second window of the app opens meanwhile: it must not switch the first one's worker
    // (and delete the files that page still loads) under it. It runs A too, for now.
    const second = await newPage(context);
    await second.goto(`${app.origin}/#/`);
    await waitOnline(second);
    await second.waitForTimeout(1000);
    expect(await release(second)).toBe("A");
    expect(await waitingWorker(second)).toBe("installed");
    await stillA(page);
    expect(await page.inputValue("[data-testid=composer]")).toBe("half-typed, not sent");
    // The first page goes on to the approval, and opens its tool pane: a chunk of release A,
    // loaded on first use.
    await page.evaluate((sid) => (location.hash = `#/s/${sid}`), approving);
    await page.waitForSelector(`[data-testid=session-pane][data-session="${approving}"] [data-testid=approval-bar]`);
    await page.waitForTimeout(1000);
    await stillA(page);
    await page.evaluate((sid) => (location.hash = `#/s/${sid}/tools`), approving);
    await page.waitForSelector("[data-testid=tool-pane]", { timeout: 30_000 });
    expect(await page.evaluate(() => document.documentElement.dataset.toolPane)).toBe("A");
    await stillA(page);
    expect(pageErrors(page)).toEqual([]);
    expect(pageErrors(second)).toEqual([]);

    // The next open (every window was closed): B, with A's cache gone.
    await second.close();
    await page.close();
    const reopened = await newPage(context);
    await reopened.goto(`${app.origin}/#/s/${approving}`);
    await reopened.waitForFunction(() => document.documentElement.dataset.release === "B", null, { timeout: 30_000 });
    await waitOnline(reopened);
    await controlled(reopened);
    expect(await controllerBuild(reopened)).toBe(buildID(releaseB));
    await expect.poll(() => shellCaches(reopened)).toEqual([`nucleic-shell-p${PROTOCOL_VERSION}-${buildID(releaseB)}`]);
    // The session is still waiting for its approval: nothing was answered or sent by the update.
    await reopened.waitForSelector(`[data-testid=session-pane][data-session="${approving}"] [data-testid=approval-bar]`);
    expect(pageErrors(reopened)).toEqual([]);
    await context.close();
  });

  it("a page that starts while B waits and is alone takes B at once (nothing was done on it yet)", async () => {
    app = await startAppHost(demo.origin, releaseA);
    const context = await phoneContext();
    const page = await newPage(context);
    await page.goto(await signInLink(app));
    await waitOnline(page);
    await controlled(page);
    app.serve(releaseB);
    await checkForUpdate(page);
    await expect.poll(() => waitingWorker(page), { timeout: 30_000 }).toBe("installed");
    expect(await release(page)).toBe("A");
    // The next open of the app, in the same (only) window.
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.release === "B", null, { timeout: 30_000 });
    await waitOnline(page);
    expect(await controllerBuild(page)).toBe(buildID(releaseB));
    await expect.poll(() => shellCaches(page)).toEqual([`nucleic-shell-p${PROTOCOL_VERSION}-${buildID(releaseB)}`]);
    await context.close();
  });
});

describe("an older app holding another protocol version", () => {
  it("is refused by the host, finds the current app, takes it and comes online (one refused hello per open)", async () => {
    app = await startAppHost(demo.origin, releaseOld);
    const context = await phoneContext();
    const hellos: number[] = [];
    await context.routeWebSocket(/\/ws$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((m) => {
        const text = typeof m === "string" ? m : m.toString();
        if (text.includes('"hello"')) hellos.push((JSON.parse(text) as { protocolVersion: number }).protocolVersion);
        server.send(text);
      });
    });
    const page = await newPage(context);
    // The old app was installed (when the host spoke its protocol); now the host refuses it and
    // serves no newer app: it says so and stops.
    await page.goto(await signInLink(app));
    await controlled(page);
    await page.waitForSelector("[data-testid=link-banner]:has-text('serves no newer app')", { timeout: 30_000 });
    expect(await release(page)).toBe("old");
    const oldCache = `nucleic-shell-p${PROTOCOL_VERSION - 1}-${buildID(releaseOld)}`;
    expect(await shellCaches(page)).toEqual([oldCache]);
    await page.waitForTimeout(2000);
    expect(hellos).toEqual([PROTOCOL_VERSION - 1]);

    // The current app is deployed. The old worker still serves the old shell from its cache;
    // refused again, that page fetches the new worker, switches to it and reloads.
    app.serve(releaseB);
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.release === "B", null, { timeout: 30_000 });
    await waitOnline(page);
    expect(await controllerBuild(page)).toBe(buildID(releaseB));
    await expect.poll(() => shellCaches(page)).toEqual([`nucleic-shell-p${PROTOCOL_VERSION}-${buildID(releaseB)}`]);
    expect(await page.$("[data-testid=link-banner]")).toBeNull();
    // Refused once per open of the old app, never retried with the old version.
    expect(hellos.filter((v) => v !== PROTOCOL_VERSION)).toEqual([PROTOCOL_VERSION - 1, PROTOCOL_VERSION - 1]);
    expect(hellos.at(-1)).toBe(PROTOCOL_VERSION);
    await context.close();
  });
});
