/** The installable app on a phone viewport: install criteria (manifest + service worker), opening
 *  from the cache with the host gone (last known state, marked stale), a push delivered to the
 *  service worker through the DevTools protocol showing the generic notification whose tap lands
 *  on the session, and the cold start from the worker's cache vs from the network. */
import { writeFileSync } from "node:fs";
import path from "node:path";

import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { type Demo, OUT, launch, signedInPage, startDemo, waitOnline } from "./harness";

let browser: Browser;
let demo: Demo | undefined;
beforeEach(async () => {
  browser = await launch();
  demo = await startDemo();
});
afterEach(async () => {
  await browser?.close();
  await demo?.stop();
  demo = undefined;
});

const PHONE = { width: 390, height: 844 };

/** Waits until the service worker is active and controls the page (a reload after the first
 *  install: the first page is claimed, but wait for it explicitly). */
async function controlled(page: Page): Promise<void> {
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
}

/** The snapshot the page keeps in IndexedDB: its session ids and the sessions with events. */
async function snapshotOf(page: Page): Promise<{ sessions: string[]; withEvents: string[] } | null> {
  return page.evaluate(
    () =>
      new Promise<{ sessions: string[]; withEvents: string[] } | null>((resolve) => {
        const req = indexedDB.open("nucleic-offline", 1);
        req.onupgradeneeded = () => req.result.createObjectStore("snapshot");
        req.onerror = () => resolve(null);
        req.onsuccess = () => {
          const get = req.result.transaction("snapshot").objectStore("snapshot").get("last");
          get.onsuccess = () => {
            const s = get.result as { sessions: Array<{ sessionID: string }>; events: Record<string, unknown[]> } | undefined;
            req.result.close();
            resolve(
              s
                ? {
                    sessions: s.sessions.map((x) => x.sessionID),
                    withEvents: Object.entries(s.events).filter(([, e]) => e.length > 0).map(([id]) => id),
                  }
                : null,
            );
          };
          get.onerror = () => resolve(null);
        };
      }),
  );
}

async function registrationID(cdp: CDPSession, origin: string): Promise<string> {
  const found = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no service worker registration reported within 10 s")), 10_000);
    cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
      const r = e.registrations.find((x) => x.scopeURL === `${origin}/` && !x.isDeleted);
      if (r) {
        clearTimeout(timer);
        resolve(r.registrationId);
      }
    });
  });
  await cdp.send("ServiceWorker.enable");
  return found;
}

describe("installable app", () => {
  it("meets the install criteria: a valid manifest with icons and a service worker controlling the page", async () => {
    const d = demo as Demo;
    const { context, page } = await signedInPage(browser, d.url, PHONE);
    await controlled(page);
    const cdp = await context.newCDPSession(page);
    const manifest = await cdp.send("Page.getAppManifest");
    expect(manifest.errors).toEqual([]);
    expect(manifest.url).toBe(`${d.origin}/manifest.webmanifest`);
    const parsed = JSON.parse(manifest.data ?? "{}") as { display: string; icons: Array<{ sizes: string }> };
    expect(parsed.display).toBe("standalone");
    expect(parsed.icons.map((i) => i.sizes)).toEqual(expect.arrayContaining(["192x192", "512x512"]));
    for (const icon of ["/icons/icon-192.png", "/icons/icon-512.png", "/icons/maskable-512.png"]) {
      const r = await page.request.get(`${d.origin}${icon}`);
      expect(r.status(), icon).toBe(200);
      expect(r.headers()["content-type"]).toBe("image/png");
    }
    const installability = await cdp.send("Page.getInstallabilityErrors");
    // A Playwright context is an off-the-record profile: Chromium reports only that.
    const errors = installability.installabilityErrors.map((e) => e.errorId).filter((id) => id !== "in-incognito");
    expect(errors).toEqual([]);
    const sw = await page.request.get(`${d.origin}/sw.js`);
    expect(sw.headers()["cache-control"]).toBe("no-cache");
    expect(sw.headers()["service-worker-allowed"]).toBe("/");
    await context.close();
  });

  it("opens from the cache with the host gone, showing the last known state marked stale", async () => {
    const d = demo as Demo;
    const { context, page } = await signedInPage(browser, d.url, PHONE);
    await controlled(page);
    const [first] = d.sessions;
    await page.goto(`${d.origin}/#/s/${first.sessionID}`);
    await page.waitForSelector(`[data-testid=session-pane][data-session="${first.sessionID}"]`);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-rows")) > 0);
    const rowsOnline = Number(await page.getAttribute("[data-testid=transcript]", "data-rows"));
    await expect.poll(() => snapshotOf(page), { timeout: 10_000 }).toMatchObject({ withEvents: [first.sessionID] });
    expect((await snapshotOf(page))?.sessions.sort()).toEqual(d.sessions.map((s) => s.sessionID).sort());

    // The host goes away; the app is opened again.
    await d.stop();
    await page.reload();
    await page.waitForSelector("[data-testid=link-banner][data-stale=snapshot]", { timeout: 30_000 });
    expect(await page.textContent("[data-testid=link-banner]")).toContain("Offline — showing what this device last saw");
    expect(await page.getAttribute(".shell", "class")).toContain("stale");
    // The open session's recent events, from the snapshot.
    await page.waitForSelector(`[data-testid=session-pane][data-session="${first.sessionID}"]`);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-rows")) > 0);
    expect(Number(await page.getAttribute("[data-testid=transcript]", "data-rows"))).toBe(rowsOnline);
    // And the list, from the snapshot.
    await page.goto(`${d.origin}/#/`);
    await expect.poll(() => page.locator("[data-testid=session-row]").count()).toBe(d.sessions.length);
    await page.screenshot({ path: path.join(OUT, "pwa-offline-390.png") });
    await context.close();
  });

  it("shows the generic notification for a push delivered to the service worker, and its tap lands on the session", async () => {
    const d = demo as Demo;
    const { context, page } = await signedInPage(browser, d.url, PHONE);
    await context.grantPermissions(["notifications"], { origin: d.origin });
    await controlled(page);
    const cdp = await context.newCDPSession(page);
    const registration = await registrationID(cdp, d.origin);
    const target = d.sessions[1] ?? d.sessions[0];
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: d.origin,
      registrationId: registration,
      data: JSON.stringify({ v: 1, s: target.sessionID }),
    });
    const shown = () =>
      page.evaluate(async () => {
        const list = await (await navigator.serviceWorker.ready).getNotifications();
        return list.map((n) => ({ title: n.title, body: n.body, data: n.data as { url: string } }));
      });
    await expect.poll(async () => (await shown()).length, { timeout: 10_000 }).toBe(1);
    const notes = await shown();
    expect(notes[0].title).toBe("A session needs you");
    expect(notes[0].data.url).toBe(`/#/s/${target.sessionID}`);
    if (target.title) expect(`${notes[0].title} ${notes[0].body}`).not.toContain(target.title);

    // A payload that is not ours still shows the generic notification, opening the start page.
    await cdp.send("ServiceWorker.deliverPushMessage", { origin: d.origin, registrationId: registration, data: "<script>" });
    await expect.poll(async () => (await shown()).some((n) => n.data.url === "/"), { timeout: 10_000 }).toBe(true);

    // The tap: headless Chromium has no notification UI to click, so the worker's own
    // notificationclick handler is driven with the notification it showed.
    const [worker] = context.serviceWorkers();
    expect(worker).toBeDefined();
    await page.goto(`${d.origin}/#/`);
    const dispatched = await worker.evaluate(async (tag: string) => {
      const sw = self as unknown as ServiceWorkerGlobalScope;
      const [n] = await sw.registration.getNotifications({ tag });
      if (!n) return "no notification with that tag";
      // A script-made event: the handler runs, but its waitUntil throws (events that are not
      // the browser's own may not extend their lifetime); the page still follows.
      sw.addEventListener("error", (e) => e.preventDefault());
      try {
        sw.dispatchEvent(new NotificationEvent("notificationclick", { notification: n }));
      } catch (e) {
        return String(e);
      }
      return "dispatched";
    }, `session-${target.sessionID}`);
    expect(dispatched).toBe("dispatched");
    await page.waitForSelector(`[data-testid=session-pane][data-session="${target.sessionID}"]`, { timeout: 30_000 });
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/s/${target.sessionID}`);
    await context.close();
  });

  it("an app the host refuses for its protocol version says so, stops retrying and looks for an update", async () => {
    const d = demo as Demo;
    const { context, page } = await signedInPage(browser, d.url, PHONE);
    await controlled(page);
    // The host of the future: it speaks another protocol version and refuses this app's hello.
    let attempts = 0;
    await page.routeWebSocket(/\/ws$/, (ws) => {
      attempts++;
      ws.onMessage((m) => {
        const hello = JSON.parse(String(m)) as { type: string; protocolVersion: number };
        if (hello.type !== "hello") return;
        ws.send(
          JSON.stringify({
            type: "error",
            code: "badHandshake",
            message: `protocol version ${hello.protocolVersion} is not spoken here (host speaks ${hello.protocolVersion + 1}), or clientID is empty`,
          }),
        );
        ws.close({ code: 1002, reason: "protocol version" });
      });
    });
    await page.reload();
    await page.waitForSelector("[data-testid=link-banner]:has-text('does not speak the host')");
    // It asked the host for the current worker; the host serves the same one: it says so.
    await page.waitForSelector("[data-testid=link-banner]:has-text('serves no newer app')", { timeout: 20_000 });
    await page.waitForTimeout(3000);
    expect(attempts).toBe(1);
    await context.close();
  });

  it("measures the cold start from the service worker's cache against the network (same run)", async () => {
    const d = demo as Demo;
    const { context, page } = await signedInPage(browser, d.url, PHONE);
    await controlled(page);
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    // Until the session list is drawn: the shell, the host's answer and the first paint.
    const open = async (): Promise<number> => {
      const t0 = Date.now();
      await page.reload({ waitUntil: "commit" });
      await page.waitForSelector("[data-testid=session-row]", { timeout: 30_000 });
      return Date.now() - t0;
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const runs = 7;
    const results: Record<string, { cache: number; network: number }> = {};
    for (const [name, conditions] of [
      ["loopback", null],
      ["slow 4G (150 ms RTT, 1.6 Mbit/s)", { offline: false, latency: 150, downloadThroughput: 200_000, uploadThroughput: 90_000 }],
    ] as const) {
      if (conditions) await cdp.send("Network.emulateNetworkConditions", conditions);
      const cache: number[] = [];
      const network: number[] = [];
      for (let i = 0; i < runs; i++) {
        await cdp.send("Network.setBypassServiceWorker", { bypass: false });
        cache.push(await open());
        await cdp.send("Network.setBypassServiceWorker", { bypass: true });
        await cdp.send("Network.clearBrowserCache");
        network.push(await open());
      }
      results[name] = { cache: median(cache), network: median(network) };
    }
    await cdp.send("Network.setBypassServiceWorker", { bypass: false });
    await waitOnline(page);
    writeFileSync(path.join(OUT, "pwa-cold-start.json"), `${JSON.stringify({ runs, medianMs: results }, null, 2)}\n`);
    console.log("cold start (median ms, to the session list drawn):", JSON.stringify(results));
    for (const r of Object.values(results)) expect(r.cache).toBeGreaterThan(0);
    await (context as BrowserContext).close();
  });
});
