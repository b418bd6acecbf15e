/** This device's Web Push: subscribing with the host's VAPID key, quiet hours, unsubscribing.
 *  The host sends only a session id, encrypted for this browser; the service worker shows
 *  "A session needs you" and opens the session (see docs/cockpit.md). A browser holds one
 *  subscription per service worker registration, bound to one host's key, so every relay host
 *  gets a registration of its own (`/sw.js` at scope `/push/<host id>/`); the page's own-origin
 *  host keeps the app's registration (`/`). */
import { LOCAL_HOST } from "../remote/local";
import type { CockpitStore } from "../store";
import type { PushSettings, QuietHours } from "../protocol.gen";
import { workerRegistration } from "./worker";

export type PushSupport = "supported" | "noWorker" | "unsupported" | "denied";

export function pushSupport(): PushSupport {
  if (typeof window === "undefined" || !("PushManager" in window) || typeof Notification === "undefined")
    return "unsupported";
  if (Notification.permission === "denied") return "denied";
  return workerRegistration() ? "supported" : "noWorker";
}

function bytes(b64url: string): Uint8Array<ArrayBuffer> {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

export async function pushSettings(store: CockpitStore): Promise<PushSettings> {
  const reply = await store.request({ type: "getPush" });
  if (reply.type !== "push") throw new Error(`unexpected reply ${reply.type}`);
  return reply.push;
}

/** "22:00" → minutes after midnight. */
export function minutes(hhmm: string): number | null {
  const m = /^(\d{1,2}):(\d{2})$/.exec(hhmm.trim());
  if (!m) return null;
  const [h, min] = [Number(m[1]), Number(m[2])];
  return h < 24 && min < 60 ? h * 60 + min : null;
}

/** This device's IANA time zone ("Europe/Berlin"); "UTC" when the browser names none. */
export function deviceTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** Quiet hours from two "HH:MM" times on this device's clock (null: none). They go with the
 *  device's time zone, in which the host evaluates them: they follow daylight saving. */
export function quietHours(from: string, to: string, timeZone = deviceTimeZone()): QuietHours | null {
  const [f, t] = [minutes(from), minutes(to)];
  if (f === null || t === null || f === t) return null;
  return { fromMinute: f, toMinute: t, timeZone };
}

/** The scope of a relay host's push registration. */
export function pushScope(hostID: string): string {
  return `/push/${hostID}/`;
}

/** How long a new push registration may take to activate. */
const ACTIVATE_MS = 10_000;

function activated(reg: ServiceWorkerRegistration): Promise<ServiceWorkerRegistration> {
  if (reg.active) return Promise.resolve(reg);
  return new Promise((resolve, reject) => {
    const worker = reg.installing ?? reg.waiting;
    const timer = setTimeout(() => reject(new Error(`The push worker did not activate within ${ACTIVATE_MS / 1000} s.`)), ACTIVATE_MS);
    worker?.addEventListener("statechange", () => {
      if (reg.active) {
        clearTimeout(timer);
        resolve(reg);
      } else if (worker.state === "redundant") {
        clearTimeout(timer);
        reject(new Error("The push worker failed to install."));
      }
    });
  });
}

/** The registration holding `hostID`'s push subscription: the app's own for the own-origin
 *  host, else that host's (made when `create`). */
export async function hostRegistration(hostID: string, create: boolean): Promise<ServiceWorkerRegistration | null> {
  if (hostID === LOCAL_HOST) return workerRegistration();
  const sw = typeof navigator !== "undefined" ? navigator.serviceWorker : undefined;
  if (!sw) return null;
  const scope = new URL(pushScope(hostID), location.origin).href;
  const found = (await sw.getRegistrations()).find((r) => r.scope === scope);
  if (found || !create) return found ?? null;
  return activated(await sw.register("/sw.js", { scope: pushScope(hostID) }));
}

function sameKey(a: ArrayBuffer | null | undefined, b: Uint8Array): boolean {
  if (!a || a.byteLength !== b.length) return false;
  const x = new Uint8Array(a);
  return x.every((v, i) => v === b[i]);
}

/** Asks for permission, subscribes this browser for the store's host (on that host's own
 *  registration) and tells the host. Other hosts' subscriptions are left as they are. */
export async function enablePush(store: CockpitStore, quiet: QuietHours | null): Promise<PushSettings> {
  if (!workerRegistration()) throw new Error("The app's service worker is not running here: push needs it.");
  const reg = await hostRegistration(store.hostID, true);
  if (!reg) throw new Error("The app's service worker is not running here: push needs it.");
  if ((await Notification.requestPermission()) !== "granted")
    throw new Error("Notifications are blocked for this site: allow them in the browser's settings.");
  const settings = await pushSettings(store);
  const key = bytes(settings.vapidPublicKey);
  const existing = await reg.pushManager.getSubscription();
  // A subscription made for another host key cannot be used: replace it.
  if (existing) await existing.unsubscribe();
  // Made for this host on the app's registration before hosts had their own: moved here.
  const root = store.hostID === LOCAL_HOST ? null : await workerRegistration()?.pushManager.getSubscription();
  if (root && sameKey(root.options.applicationServerKey, key)) await root.unsubscribe();
  const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  const json = sub.toJSON();
  const reply = await store.request({
    type: "setPush",
    subscription: { endpoint: sub.endpoint, keys: { p256dh: json.keys?.p256dh ?? "", auth: json.keys?.auth ?? "" } },
    quietHours: quiet,
  });
  if (reply.type !== "push") throw new Error(`unexpected reply ${reply.type}`);
  return reply.push;
}

/** Turns push off for the store's host only: its subscription goes, and a relay host's
 *  registration with it; every other host's stays. */
export async function disablePush(store: CockpitStore): Promise<PushSettings> {
  const reg = await hostRegistration(store.hostID, false);
  const sub = await reg?.pushManager.getSubscription();
  await sub?.unsubscribe();
  if (reg && store.hostID !== LOCAL_HOST) await reg.unregister();
  const reply = await store.request({ type: "setPush", subscription: null, quietHours: null });
  if (reply.type !== "push") throw new Error(`unexpected reply ${reply.type}`);
  return reply.push;
}
