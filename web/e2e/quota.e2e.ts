/** A full storage quota with Chromium's real IndexedDB: a persistent profile on a small tmpfs of
 *  its own (Chromium sizes an origin's quota from the disk its profile is on), filled by the
 *  test until IndexedDB refuses. (`Storage.overrideQuotaForOrigin` changed nothing here, in a
 *  persistent context either.) The offline snapshot then keeps the last one it could save, and
 *  a message written offline is refused with the reason while the composer keeps the text —
 *  nothing is queued or sent later. Needs root for the private mount namespace (as the suite). */
import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { chromium } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { CHROMIUM, type Demo, loginLink, pageErrors, startDemo, tempDir, waitOnline } from "./harness";

let demo: Demo;
let context: BrowserContext | undefined;
beforeEach(async () => {
  demo = await startDemo();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
  await demo?.stop();
});

/** The saved snapshot's time, read from IndexedDB (null: none). */
const snapshotSavedAt = (page: Page) =>
  page.evaluate(
    () =>
      new Promise<number | null>((resolve) => {
        const req = indexedDB.open("nucleic-offline", 1);
        req.onupgradeneeded = () => req.result.createObjectStore("snapshot");
        req.onerror = () => resolve(null);
        req.onsuccess = () => {
          const get = req.result.transaction("snapshot").objectStore("snapshot").get("last");
          get.onsuccess = () => {
            req.result.close();
            resolve((get.result as { savedAt?: number } | undefined)?.savedAt ?? null);
          };
          get.onerror = () => resolve(null);
        };
      }),
  );

type Store = { request(m: unknown): Promise<{ type: string; result?: unknown }> };
const ask = (page: Page, msg: unknown) => page.evaluate((m) => (window as unknown as { nucleic: Store }).nucleic.request(m), msg);

describe("storage quota exceeded (real IndexedDB)", () => {
  it("the snapshot keeps its last save, and a message written offline is refused with the text kept", async () => {
    // Chromium with its profile on a 24 MB tmpfs, mounted in a mount namespace of its own.
    const wrapper = path.join(tempDir("nucleic-e2e-small-disk-"), "chromium");
    writeFileSync(
      wrapper,
      `#!/bin/sh\nfor a in "$@"; do case "$a" in --user-data-dir=*) dir="\${a#--user-data-dir=}";; esac; done\n` +
        `exec unshare -m sh -c 'mount -t tmpfs -o size=24m tmpfs "$0" && bin="$1" && shift && exec "$bin" "$@"' "$dir" ${JSON.stringify(CHROMIUM)} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    context = await chromium.launchPersistentContext(tempDir("nucleic-e2e-profile-"), {
      executablePath: wrapper,
      headless: true,
      viewport: { width: 390, height: 844 },
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
    });
    context.setDefaultTimeout(60_000);
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
    const page = context.pages()[0] ?? (await context.newPage());
    const warnings: string[] = [];
    page.on("console", (m) => warnings.push(`${m.type()}: ${m.text()}`));
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    Object.assign(page, { errors, consoleLines: warnings });
    await page.goto(await loginLink(demo));
    await waitOnline(page);
    const [first] = demo.sessions;
    await page.evaluate((sid) => (location.hash = `#/s/${sid}`), first.sessionID);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=transcript]")?.getAttribute("data-rows")) > 0);
    await expect.poll(() => snapshotSavedAt(page), { timeout: 15_000 }).not.toBeNull();

    // Fill the origin's storage until IndexedDB refuses (another database of the origin).
    const fill = await page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const req = indexedDB.open("filler", 1);
        req.onupgradeneeded = () => req.result.createObjectStore("blobs");
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
      // Big pieces first, then smaller ones, until even a small write is refused.
      let key = 0;
      let last: string | null = null;
      for (const size of [512 * 1024, 64 * 1024, 4096, 256]) {
        for (let i = 0; i < 400; i++) {
          // Random bytes: IndexedDB compresses what it can.
          const chunk = new Uint8Array(size);
          for (let o = 0; o < chunk.length; o += 65536) crypto.getRandomValues(chunk.subarray(o, o + 65536));
          const error = await new Promise<string | null>((resolve) => {
            const tx = db.transaction("blobs", "readwrite");
            tx.objectStore("blobs").put(chunk, key++);
            tx.oncomplete = () => resolve(null);
            tx.onabort = tx.onerror = () => resolve(tx.error?.name ?? "error");
          });
          if (error) {
            last = error;
            break;
          }
        }
      }
      return { key, error: last, estimate: await navigator.storage.estimate() };
    });
    console.log("filled", JSON.stringify(fill));
    expect(fill.error).toBe("QuotaExceededError");
    const saved = await snapshotSavedAt(page);
    expect(saved).not.toBeNull();

    // The host changes something (a snapshot save follows): refused, said in the console, and
    // the last snapshot stays as it was.
    await ask(page, { type: "intent", intent: { kind: "rename", sessionID: first.sessionID, title: "renamed over quota" } });
    await expect.poll(() => warnings.some((w) => w.includes("offline snapshot not saved (storage quota exceeded)")), { timeout: 15_000 }).toBe(true);
    expect(await snapshotSavedAt(page)).toBe(saved);

    // Offline, a message: the browser refuses to store it; the person is told and keeps the text.
    cut = true;
    for (const ws of [...open]) await ws.close({ code: 4000, reason: "offline (test)" });
    await page.waitForSelector(".shell[data-link=offline]");
    await page.fill("[data-testid=composer]", "a message that cannot be stored");
    await page.click("[data-testid=send]");
    await page.waitForSelector(".composer [role=alert]");
    expect(await page.textContent(".composer [role=alert]")).toMatch(/storage is full, so the action was not queued.*QuotaExceededError.*your text is still in the box/);
    expect(await page.inputValue("[data-testid=composer]")).toBe("a message that cannot be stored");
    expect(await page.$("[data-testid=pending-item]")).toBeNull();

    // Back online: nothing goes out.
    cut = false;
    await waitOnline(page);
    await page.waitForTimeout(1500);
    expect(sent.filter((f) => f.includes("a message that cannot be stored"))).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  });
});
