/** Registers the service worker (`/sw.js`, scope `/`) and applies updates predictably: a new
 *  version found while a page is open waits; one already waiting when a page starts takes over
 *  at once when that page is the app's only window (nothing was done on it yet), else it waits
 *  for the next lone open. A page refused by the host for its protocol
 *  version looks for a newer app, takes it and reloads — or says clearly that there is none. */

let registration: ServiceWorkerRegistration | null = null;
let registering: Promise<ServiceWorkerRegistration | null> = Promise.resolve(null);
/** How long to wait for a newer app after a protocol refusal. */
const UPDATE_WAIT_MS = 15_000;

/** Asks the waiting worker to take over and reloads into it when it does. It declines when
 *  another window of the app is open (that one may be mid-action) unless `force`d: then this
 *  page goes on with its version and stops listening, so a later switch never reloads it. */
function takeOver(worker: ServiceWorker, force = false): void {
  const sw = navigator.serviceWorker;
  const reload = () => location.reload();
  const declined = (e: MessageEvent) => {
    const data = e.data as { type?: string; declined?: string } | null;
    if (data?.type !== "skipWaiting" || !data.declined) return;
    sw.removeEventListener("controllerchange", reload);
    sw.removeEventListener("message", declined);
    console.info(`the new version waits: ${data.declined}`);
  };
  sw.addEventListener("controllerchange", reload, { once: true });
  sw.addEventListener("message", declined);
  worker.postMessage({ type: "skipWaiting", force });
}

export function registerWorker(): Promise<ServiceWorkerRegistration | null> {
  registering = register();
  return registering;
}

async function register(): Promise<ServiceWorkerRegistration | null> {
  if (typeof navigator === "undefined" || !("serviceWorker" in navigator)) return null;
  try {
    registration = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  } catch (e) {
    console.warn("service worker not registered", e);
    return null;
  }
  if (registration.waiting && navigator.serviceWorker.controller) takeOver(registration.waiting);
  // The app's "open this session" from a notification tap when navigating was not possible.
  navigator.serviceWorker.addEventListener("message", (e: MessageEvent) => {
    const data = e.data as { type?: string; url?: string } | null;
    if (data?.type === "open" && data.url) location.href = data.url;
  });
  return registration;
}

export function workerRegistration(): ServiceWorkerRegistration | null {
  return registration;
}

/** After the host refused this app's protocol version: fetches the current app's worker and
 *  switches to it (the page reloads). False when the host serves no newer app. */
export async function updateForProtocol(): Promise<boolean> {
  const reg = await registering;
  if (!reg) return false;
  try {
    await reg.update();
  } catch {
    return false;
  }
  const next = reg.installing ?? reg.waiting;
  if (!next) return false;
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), UPDATE_WAIT_MS);
    const ready = () => {
      if (next.state === "installed" || next.state === "activated") {
        clearTimeout(timer);
        // Every window of this version is refused by the host: none can be mid-action.
        takeOver(next, true);
        resolve(true);
      } else if (next.state === "redundant") {
        clearTimeout(timer);
        resolve(false);
      }
    };
    next.addEventListener("statechange", ready);
    ready();
  });
}
