/** This device's Web Push: subscribing with the host's VAPID key, quiet hours, unsubscribing.
 *  The host sends only a session id, encrypted for this browser; the service worker shows
 *  "A session needs you" and opens the session (see docs/cockpit.md). */
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

/** Asks for permission, subscribes this browser and tells the host. */
export async function enablePush(store: CockpitStore, quiet: QuietHours | null): Promise<PushSettings> {
  const reg = workerRegistration();
  if (!reg) throw new Error("The app's service worker is not running here: push needs it.");
  if ((await Notification.requestPermission()) !== "granted")
    throw new Error("Notifications are blocked for this site: allow them in the browser's settings.");
  const settings = await pushSettings(store);
  const existing = await reg.pushManager.getSubscription();
  // A subscription made for another host key cannot be used: replace it.
  if (existing) await existing.unsubscribe();
  const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(settings.vapidPublicKey) });
  const json = sub.toJSON();
  const reply = await store.request({
    type: "setPush",
    subscription: { endpoint: sub.endpoint, keys: { p256dh: json.keys?.p256dh ?? "", auth: json.keys?.auth ?? "" } },
    quietHours: quiet,
  });
  if (reply.type !== "push") throw new Error(`unexpected reply ${reply.type}`);
  return reply.push;
}

export async function disablePush(store: CockpitStore): Promise<PushSettings> {
  const sub = await workerRegistration()?.pushManager.getSubscription();
  await sub?.unsubscribe();
  const reply = await store.request({ type: "setPush", subscription: null, quietHours: null });
  if (reply.type !== "push") throw new Error(`unexpected reply ${reply.type}`);
  return reply.push;
}
