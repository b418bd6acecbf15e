/** The offline snapshot: the session list and the recent events of the sessions last opened,
 *  kept in IndexedDB so the app opens without the host showing the last known state (marked
 *  stale). Saved a moment after changes; a full quota drops the events, then gives up quietly. */
import { LOCAL_HOST } from "../remote/local";
import type { CockpitStore } from "../store";
import type { Event, ProjectSummary, SessionSummary } from "../protocol.gen";

const DB = "nucleic-offline";
const STORE = "snapshot";
/** The key of the local origin's host (as before snapshots had a host), and of a relay host's. */
const LOCAL_KEY = "last";
const keyOf = (hostID: string | undefined) => (hostID === undefined || hostID === LOCAL_HOST ? LOCAL_KEY : `host:${hostID}`);
/** Events kept per session, and sessions kept. */
export const RECENT_EVENTS = 200;
export const RECENT_SESSIONS = 5;
const SAVE_DELAY_MS = 500;

export interface Snapshot {
  savedAt: number;
  /** The host's origin: a snapshot is never shown for another host. */
  origin: string;
  /** The host's relay id (every relay host shares the relay's origin), or "local" — absent in
   *  snapshots saved before they had one, which are the local origin's. */
  hostID?: string;
  projects: ProjectSummary[];
  sessions: SessionSummary[];
  /** sessionID → its last events, for the sessions opened most recently. */
  events: Record<string, Event[]>;
}

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error("IndexedDB would not open"));
  });
}

async function run<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = f(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onabort = tx.onerror = () => reject(tx.error ?? req.error ?? new Error("IndexedDB transaction failed"));
    });
  } finally {
    db.close();
  }
}

/** What this device last saw of `hostID` on this origin (never another host's). */
export async function loadSnapshot(hostID: string = LOCAL_HOST): Promise<Snapshot | null> {
  try {
    const s = (await run("readonly", (st) => st.get(keyOf(hostID)))) as Snapshot | undefined;
    return s && s.origin === location.origin && (s.hostID ?? LOCAL_HOST) === hostID ? s : null;
  } catch {
    return null;
  }
}

function isQuota(e: unknown): boolean {
  return e instanceof DOMException && (e.name === "QuotaExceededError" || e.name === "NS_ERROR_DOM_QUOTA_REACHED");
}

/** Writes `snapshot`; over quota, tries once more without events. Returns what was kept. */
export async function saveSnapshot(snapshot: Snapshot): Promise<"full" | "listsOnly" | "none"> {
  try {
    await run("readwrite", (st) => st.put(snapshot, keyOf(snapshot.hostID)));
    return "full";
  } catch (e) {
    if (!isQuota(e)) {
      console.warn("offline snapshot not saved", e);
      return "none";
    }
  }
  try {
    await run("readwrite", (st) => st.put({ ...snapshot, events: {} }, keyOf(snapshot.hostID)));
    return "listsOnly";
  } catch (e) {
    console.warn("offline snapshot not saved (storage quota exceeded)", e);
    return "none";
  }
}

export async function clearSnapshot(hostID: string = LOCAL_HOST): Promise<void> {
  try {
    await run("readwrite", (st) => st.delete(keyOf(hostID)));
  } catch {
    /* nothing to clear */
  }
}

/** Restores the last snapshot into `store` (if the host has not answered yet) and keeps it
 *  up to date from then on. */
export async function keepSnapshot(store: CockpitStore): Promise<void> {
  const recent = new Map<string, Event[]>();
  const hostID = store.hostID;
  const saved = await loadSnapshot(hostID);
  if (saved) {
    for (const [id, evs] of Object.entries(saved.events)) recent.set(id, evs);
    store.restore(saved.savedAt, saved.projects, saved.sessions, saved.events);
  }
  let timer: ReturnType<typeof setTimeout> | null = null;
  const schedule = () => {
    // Only what the host said is saved: never a restored snapshot back over itself.
    if (store.link !== "online" || store.restoredAt !== null || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void saveSnapshot({
        savedAt: Date.now(),
        origin: location.origin,
        hostID,
        projects: store.projects,
        sessions: [...store.sessions.values()],
        events: Object.fromEntries(recent),
      });
    }, SAVE_DELAY_MS);
  };
  store.eventTaps.add((id, events) => {
    // By seq, once each: a reconnect's catch-up replays what the snapshot already had.
    const bySeq = new Map<number, Event>();
    for (const e of [...(recent.get(id) ?? []), ...events]) bySeq.set(e.seq, e);
    const kept = [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(-RECENT_EVENTS);
    recent.delete(id);
    recent.set(id, kept);
    while (recent.size > RECENT_SESSIONS) recent.delete(recent.keys().next().value as string);
    schedule();
  });
  store.subscribe(() => {
    // A signed-out (revoked) browser keeps nothing of the host.
    if (store.link === "signedOut") void clearSnapshot(hostID);
    else schedule();
  });
}
