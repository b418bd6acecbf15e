/** Push with several hosts: each relay host's subscription lives on a service worker
 *  registration of its own (`/push/<host id>/`), so turning push on for one host never replaces
 *  another's, and turning it off for one leaves the others. A notification tap names its host
 *  in the URL (`?host=`), which the page takes out of the address bar. */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { hostFromURL } from "../remote/hosts";
import type { CockpitStore } from "../store";
import { disablePush, enablePush, pushScope } from "./push";

const A = "a".repeat(64);
const B = "b".repeat(64);

class FakeSubscription {
  unsubscribed = false;
  constructor(
    readonly endpoint: string,
    readonly options: { applicationServerKey: ArrayBuffer },
  ) {}
  toJSON() {
    return { keys: { p256dh: "p", auth: "a" } };
  }
  async unsubscribe() {
    this.unsubscribed = true;
    return true;
  }
}

class FakeRegistration {
  sub: FakeSubscription | null = null;
  unregistered = false;
  active = {};
  constructor(readonly scope: string) {}
  pushManager = {
    getSubscription: async () => (this.sub && !this.sub.unsubscribed ? this.sub : null),
    subscribe: async (o: { applicationServerKey: Uint8Array }) =>
      (this.sub = new FakeSubscription(`https://push.example/${this.scope}`, { applicationServerKey: o.applicationServerKey.slice().buffer })),
  };
  async unregister() {
    this.unregistered = true;
    return true;
  }
}

const worker = vi.hoisted(() => ({ root: null as unknown }));
vi.mock("./worker", () => ({ workerRegistration: () => worker.root }));

let registrations: FakeRegistration[];
let root: FakeRegistration;

beforeEach(() => {
  root = new FakeRegistration(`${location.origin}/`);
  worker.root = root;
  registrations = [root];
  vi.stubGlobal("navigator", {
    serviceWorker: {
      getRegistrations: async () => registrations.filter((r) => !r.unregistered),
      register: async (_url: string, o: { scope: string }) => {
        const r = new FakeRegistration(new URL(o.scope, location.origin).href);
        registrations.push(r);
        return r;
      },
    },
  });
  vi.stubGlobal("Notification", { permission: "default", requestPermission: async () => "granted" });
});
afterEach(() => vi.unstubAllGlobals());

/** A host's store: its VAPID key (one byte repeated), and every setPush it was sent. */
function hostStore(hostID: string, keyByte: number) {
  const sent: unknown[] = [];
  const key = btoa(String.fromCharCode(...new Uint8Array(65).fill(keyByte))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const store = {
    hostID,
    request: async (m: { type: string; subscription?: unknown }) => {
      if (m.type === "getPush") return { type: "push", push: { vapidPublicKey: key, subscribed: false, quietHours: null } };
      sent.push(m.subscription);
      return { type: "push", push: { vapidPublicKey: key, subscribed: m.subscription !== null, quietHours: null } };
    },
  };
  return { store: store as unknown as CockpitStore, sent };
}

const reg = (hostID: string) => registrations.find((r) => r.scope === `${location.origin}${pushScope(hostID)}`);

describe("push with several hosts", () => {
  it("each host gets its own registration and subscription; a second host does not replace the first", async () => {
    const a = hostStore(A, 1);
    const b = hostStore(B, 2);
    await enablePush(a.store, null);
    await enablePush(b.store, null);
    expect(reg(A)?.sub?.unsubscribed).toBe(false);
    expect(reg(B)?.sub?.unsubscribed).toBe(false);
    expect(new Uint8Array(reg(A)!.sub!.options.applicationServerKey)[0]).toBe(1);
    expect(new Uint8Array(reg(B)!.sub!.options.applicationServerKey)[0]).toBe(2);
    expect(a.sent).toEqual([{ endpoint: reg(A)!.sub!.endpoint, keys: { p256dh: "p", auth: "a" } }]);
    expect(b.sent).toEqual([{ endpoint: reg(B)!.sub!.endpoint, keys: { p256dh: "p", auth: "a" } }]);
    // The app's own registration holds none of them.
    expect(root.sub).toBeNull();
  });

  it("turning push off for one host removes its subscription and registration only", async () => {
    const a = hostStore(A, 1);
    const b = hostStore(B, 2);
    await enablePush(a.store, null);
    await enablePush(b.store, null);
    const subA = reg(A)!.sub!;
    await disablePush(a.store);
    expect(subA.unsubscribed).toBe(true);
    expect(registrations.filter((r) => !r.unregistered).map((r) => r.scope)).toEqual([root.scope, `${location.origin}/push/${B}/`]);
    expect(reg(B)!.sub!.unsubscribed).toBe(false);
    expect(a.sent.at(-1)).toBeNull();
    expect(b.sent).toHaveLength(1);
  });

  it("a subscription made for a host on the app's registration (before hosts had their own) moves; another host's stays", async () => {
    const a = hostStore(A, 1);
    root.sub = new FakeSubscription("https://push.example/old", { applicationServerKey: new Uint8Array(65).fill(2).buffer });
    await enablePush(a.store, null);
    expect(root.sub.unsubscribed).toBe(false);
    root.sub = new FakeSubscription("https://push.example/old-a", { applicationServerKey: new Uint8Array(65).fill(1).buffer });
    await enablePush(a.store, null);
    expect(root.sub.unsubscribed).toBe(true);
  });

  it("a tap's host is taken out of the address bar; anything but a host id is ignored", () => {
    history.replaceState(null, "", `/?host=${A}#/s/s1`);
    expect(hostFromURL()).toBe(A);
    expect(`${location.pathname}${location.search}${location.hash}`).toBe("/#/s/s1");
    history.replaceState(null, "", "/?host=../../x&keep=1#/");
    expect(hostFromURL()).toBeNull();
    expect(`${location.search}${location.hash}`).toBe("?keep=1#/");
    expect(hostFromURL()).toBeNull();
  });
});
