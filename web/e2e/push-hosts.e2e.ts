// Push with several hosts: a phone-sized Chromium, the app loaded from the relay (workerd),
// paired with two real daemons. "Notify this device" on each host makes that host's own
// service worker registration (`/sw.js` at scope `/push/<host id>/`), so each has its own push
// subscription; a push delivered to host A's registration (DevTools' deliverPushMessage —
// headless Chromium cannot subscribe to a real push service) shows the generic notification,
// and its tap, while the page is on host B, switches the page to A and opens A's session;
// turning push off on A removes A's registration and subscription and leaves B's.
import { existsSync } from "node:fs";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
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

type Store = { request(m: unknown): Promise<{ type: string; push?: { subscribed: boolean } }>; remote: { host: { hostID: string } } };
type Win = { nucleic: Store; nucleicFleet: { hosts: Array<{ hostID: string; store: Store }> } };

const hostOf = (p: Page) => p.evaluate(() => (window as unknown as Win).nucleic.remote.host.hostID);

/** The scopes of this origin's service worker registrations, as paths. */
const scopes = (p: Page) =>
  p.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).map((r) => new URL(r.scope).pathname).sort());

async function switchTo(page: Page, hostID: string) {
  await page.goto(`${appURL}/#/devices`);
  await page.waitForSelector("[data-testid=remote-host] >> nth=1");
  await page.click("[data-testid=switch-host]");
  await page.waitForFunction((id) => (window as any).nucleic?.remote?.host?.hostID === id, hostID);
  await waitOnline(page, 30_000);
}

/** Whether `hostID`'s host has a push subscription for this device (asked over its channel). */
function subscribed(page: Page, hostID: string): Promise<boolean> {
  return page.evaluate(async (id) => {
    const w = window as unknown as Win;
    const store = w.nucleicFleet.hosts.find((h) => h.hostID === id)!.store;
    const r = await store.request({ type: "getPush" });
    return Boolean(r.push?.subscribed);
  }, hostID);
}

/** "Notify this device" on the page's host. Headless Chromium's push manager cannot subscribe
 *  (no push service), so the host is then given a well-formed subscription of the test's own. */
async function notifyThisDevice(page: Page, hostID: string) {
  await page.goto(`${appURL}/#/devices`);
  await page.click("[data-testid=enable-push]");
  await expect
    .poll(() => scopes(page), { timeout: 15_000 })
    .toContain(`/push/${hostID}/`);
  await page.evaluate(async () => {
    const pair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
    const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
    const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const r = await (window as unknown as Win).nucleic.request({
      type: "setPush",
      subscription: { endpoint: "http://127.0.0.1:9/test-push", keys: { p256dh: b64(raw), auth: b64(crypto.getRandomValues(new Uint8Array(16))) } },
      quietHours: null,
    });
    if (!r.push?.subscribed) throw new Error(`setPush: ${JSON.stringify(r)}`);
  });
}

it("each host pushes to its own registration; a tap opens that host's session; turning one off leaves the other", async () => {
  const a = await host();
  const b = await host();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(60_000);
  await context.grantPermissions(["notifications"], { origin: appURL });
  const page: Page = await context.newPage();
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  (page as unknown as { consoleLines: string[] }).consoleLines = [];

  // Paired with B, then A (the page on A); push turned on for A, then for B.
  await page.goto(b.link);
  await waitOnline(page, 30_000);
  await page.goto(a.link);
  await page.reload();
  await waitOnline(page, 30_000);
  expect(await hostOf(page)).toBe(a.hostID);
  await notifyThisDevice(page, a.hostID);
  await switchTo(page, b.hostID);
  await notifyThisDevice(page, b.hostID);
  expect(await scopes(page)).toEqual(["/", `/push/${a.hostID}/`, `/push/${b.hostID}/`].sort());

  // A session on A needs the person; the page is on B.
  const sid = a.daemon.cli("session", "new", "--project", a.project, "--agent", "sim", "think").split(/\s+/)[0];
  await until(`session ${sid} to wait for input`, 30_000, () => JSON.parse(a.daemon.cli("session", "show", sid)).status === "awaiting-input");
  await page.goto(`${appURL}/#/`);

  // A's push, delivered to A's registration.
  const cdp = await context.newCDPSession(page);
  const scopeA = `${appURL}/push/${a.hostID}/`;
  const registration = new Promise<string>((resolve) =>
    cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
      const r = e.registrations.find((x) => x.scopeURL === scopeA && !x.isDeleted);
      if (r) resolve(r.registrationId);
    }),
  );
  await cdp.send("ServiceWorker.enable");
  await cdp.send("ServiceWorker.deliverPushMessage", { origin: appURL, registrationId: await registration, data: JSON.stringify({ v: 1, s: sid }) });
  const shown = () =>
    page.evaluate(async (scope) => {
      const reg = await navigator.serviceWorker.getRegistration(scope);
      return (await reg!.getNotifications()).map((n) => ({ title: n.title, url: (n.data as { url: string }).url, tag: n.tag }));
    }, scopeA);
  await expect.poll(async () => (await shown()).length, { timeout: 10_000 }).toBe(1);
  const [note] = await shown();
  expect(note.title).toBe("A session needs you");
  expect(note.url).toBe(`/?host=${a.hostID}#/s/${sid}`);
  // Nothing was shown by B's registration or the app's.
  expect(
    await page.evaluate(async () => {
      const regs = await navigator.serviceWorker.getRegistrations();
      return (await Promise.all(regs.map((r) => r.getNotifications()))).flat().length;
    }),
  ).toBe(1);

  // The tap (dispatched inside A's worker, as in pwa.e2e.ts): the page switches to A, on the session.
  let workerA = null;
  for (const w of context.serviceWorkers()) if ((await w.evaluate(() => (self as unknown as ServiceWorkerGlobalScope).registration.scope)) === scopeA) workerA = w;
  expect(workerA).not.toBeNull();
  const dispatched = await workerA!.evaluate(async () => {
    const sw = self as unknown as ServiceWorkerGlobalScope;
    const [n] = await sw.registration.getNotifications();
    if (!n) return "no notification";
    sw.addEventListener("error", (e) => e.preventDefault());
    try {
      sw.dispatchEvent(new NotificationEvent("notificationclick", { notification: n }));
    } catch (e) {
      return String(e);
    }
    return "dispatched";
  });
  expect(dispatched).toBe("dispatched");
  await page.waitForFunction((id) => (window as any).nucleic?.remote?.host?.hostID === id, a.hostID, { timeout: 30_000 });
  await page.waitForSelector(`[data-testid=session-pane][data-session="${sid}"]`, { timeout: 30_000 });
  expect(new URL(page.url()).search).toBe("");
  await waitOnline(page, 30_000);

  // Turning push off on A: A's registration and subscription go, B's stay.
  expect(await subscribed(page, a.hostID)).toBe(true);
  await page.goto(`${appURL}/#/devices`);
  await page.click("[data-testid=disable-push]");
  await expect.poll(() => scopes(page), { timeout: 15_000 }).toEqual(["/", `/push/${b.hostID}/`].sort());
  await expect.poll(() => subscribed(page, a.hostID), { timeout: 15_000 }).toBe(false);
  // B, asked over its fleet connection once that is up.
  await expect.poll(() => page.evaluate(() => !!(window as any).nucleicFleet.hosts.find((h: any) => !h.primary && h.store.link === "online")), { timeout: 30_000 }).toBe(true);
  expect(await subscribed(page, b.hostID)).toBe(true);
  expect(pageErrors(page)).toEqual([]);
});
