/// <reference lib="webworker" />
/** The service worker (built to /sw.js): caches the app shell of its own build so the app opens
 *  instantly and offline; takes over only when no page of the previous version is open (or the
 *  app's only page asks at its start, before anything was done); shows content-free push notifications —
 *  "A session needs you" — and opens that session on tap. It imports nothing: the build writes
 *  the file list, build id and protocol version in (vite.config.ts). */

declare const self: ServiceWorkerGlobalScope;
export {};

const PRECACHE: string[] = JSON.parse("__NUCLEIC_PRECACHE__") as string[];
const BUILD = "__NUCLEIC_BUILD__";
const PROTOCOL = "__NUCLEIC_PROTOCOL__";
/** One cache per build, named with the protocol version it speaks. */
const CACHE = `nucleic-shell-p${PROTOCOL}-${BUILD}`;
const CACHE_PREFIX = "nucleic-shell-";
/** Paths never served from the cache: the live protocol, the API, sign-in. */
const LIVE = [/^\/ws$/, /^\/api\//, /^\/login$/];
/** Session ids as the host makes them; anything else in a push opens the app's start page. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,80}$/;

const NOTIFICATION_TITLE = "A session needs you";

self.addEventListener("install", (event) => {
  // No skipWaiting: an open page of the old version keeps its worker (never mid-action).
  event.waitUntil(
    caches.open(CACHE).then((cache) => cache.addAll(PRECACHE.map((url) => new Request(url, { cache: "reload" })))),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
      }
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("message", (event) => {
  const data = event.data as { type?: string; force?: boolean } | null;
  if (data?.type === "skipWaiting") event.waitUntil(takeOverIfAlone(event.source, data.force === true));
  if (data?.type === "version") event.source?.postMessage({ type: "version", build: BUILD, protocol: Number(PROTOCOL) });
});

/** A waiting worker asked to take over by a page that just started: it does when that page is
 *  the app's only window. Another open window may be in the middle of something, and taking
 *  over would drop the old build's cache under it (its lazily loaded files would be gone): then
 *  it keeps waiting (for every window to close, or the next lone open) and says so. `force`:
 *  the host refuses the old build's protocol, so its windows cannot work anyway. */
async function takeOverIfAlone(source: Client | ServiceWorker | MessagePort | null, force: boolean): Promise<void> {
  const asker = source && "id" in source ? source.id : null;
  if (!force) {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    if (windows.some((c) => c.id !== asker)) {
      source?.postMessage({ type: "skipWaiting", declined: "another window of the app is open" });
      return;
    }
  }
  await self.skipWaiting();
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || LIVE.some((re) => re.test(url.pathname))) return;
  event.respondWith(fromCache(request, url));
});

/** The shell from this build's cache (any app route is the single page `/`), else the network. */
async function fromCache(request: Request, url: URL): Promise<Response> {
  const cache = await caches.open(CACHE);
  const key = request.mode === "navigate" ? "/" : url.pathname;
  const hit = await cache.match(key);
  if (hit) return hit;
  return fetch(request);
}

self.addEventListener("push", (event) => {
  // The payload is the session id at most ({"v":1,"s":"…"}); nothing else is ever read from it.
  let sessionID: string | null = null;
  try {
    const data = event.data?.json() as { s?: unknown } | undefined;
    if (typeof data?.s === "string" && SESSION_ID.test(data.s)) sessionID = data.s;
  } catch {
    /* unreadable: still tell the person (every push must show a notification) */
  }
  const url = sessionID ? `/#/s/${encodeURIComponent(sessionID)}` : "/";
  event.waitUntil(
    self.registration.showNotification(NOTIFICATION_TITLE, {
      body: "Open Nucleic to see what it is waiting for.",
      icon: "/icons/icon-192.png",
      badge: "/icons/icon-96.png",
      tag: sessionID ? `session-${sessionID}` : "nucleic",
      data: { url },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = new URL((event.notification.data as { url?: string } | null)?.url ?? "/", self.location.origin).href;
  event.waitUntil(openOrFocus(url));
});

/** Shows `url` in an open window of the app (focused when the tap allows it), or opens one. */
async function openOrFocus(url: string): Promise<void> {
  const ours = await self.clients.matchAll({ type: "window" });
  const any = ours.length ? ours : await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const client = any.find((c) => new URL(c.url).origin === self.location.origin);
  if (!client) {
    await self.clients.openWindow(url);
    return;
  }
  try {
    await client.focus();
  } catch {
    /* focusing needs the tap's user activation */
  }
  // A page of this worker follows the route itself (no reload); another one is navigated.
  if (ours.includes(client)) client.postMessage({ type: "open", url });
  else await client.navigate(url);
}
