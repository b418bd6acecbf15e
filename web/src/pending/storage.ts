/** Where pending actions live between reloads: IndexedDB (one object store keyed by action id),
 *  or memory when the browser has none (tests, some private modes). A full disk is an error the
 *  caller shows — an action is never dropped silently. */
import type { PendingAction } from "./rules";

export interface PendingStorage {
  /** The host these actions are for (`hostStorage`); unscoped stores have none. */
  readonly hostID?: string;
  all(): Promise<PendingAction[]>;
  /** Writes (or replaces) one action; throws `StorageFullError` when the quota is exceeded. */
  put(action: PendingAction): Promise<void>;
  delete(id: string): Promise<void>;
}

/** The browser refused to store an action: nothing was queued. */
export class StorageFullError extends Error {
  constructor(cause: unknown) {
    super(
      `This browser's storage is full, so the action was not queued (${cause instanceof Error ? cause.name : String(cause)}). ` +
        "Free some space or wait until the host is reachable; your text is still in the box.",
    );
    this.name = "StorageFullError";
  }
}

function isQuota(e: unknown): boolean {
  return e instanceof DOMException ? e.name === "QuotaExceededError" || e.code === 22 : (e as { name?: string })?.name === "QuotaExceededError";
}

export class MemoryStorage implements PendingStorage {
  private items = new Map<string, PendingAction>();
  /** Tests: the next `put` fails as if the quota were exceeded. */
  failNextPut = false;
  async all() {
    return [...this.items.values()].map((a) => ({ ...a }));
  }
  async put(action: PendingAction) {
    if (this.failNextPut) {
      this.failNextPut = false;
      throw new StorageFullError(new DOMException("quota", "QuotaExceededError"));
    }
    this.items.set(action.id, { ...action });
  }
  async delete(id: string) {
    this.items.delete(id);
  }
}

const DB = "nucleic-pending";
const STORE = "actions";

export class IdbStorage implements PendingStorage {
  private db: Promise<IDBDatabase> | null = null;

  private open(): Promise<IDBDatabase> {
    this.db ??= new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "id" });
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error ?? new Error("IndexedDB would not open"));
      req.onblocked = () => reject(new Error("IndexedDB is blocked by another tab"));
    });
    return this.db;
  }

  private async run<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T> | null): Promise<T | undefined> {
    const db = await this.open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = f(tx.objectStore(STORE));
      let result: T | undefined;
      if (req) req.onsuccess = () => (result = req.result);
      tx.oncomplete = () => resolve(result);
      const fail = () => {
        const e = tx.error ?? req?.error;
        reject(isQuota(e) ? new StorageFullError(e) : (e ?? new Error("IndexedDB transaction failed")));
      };
      tx.onerror = fail;
      tx.onabort = fail;
    });
  }

  async all() {
    return ((await this.run("readonly", (s) => s.getAll())) as PendingAction[] | undefined) ?? [];
  }
  async put(action: PendingAction) {
    try {
      await this.run("readwrite", (s) => s.put(action));
    } catch (e) {
      throw isQuota(e) ? new StorageFullError(e) : e;
    }
  }
  async delete(id: string) {
    await this.run("readwrite", (s) => s.delete(id));
  }
}

/** IndexedDB when the browser has it, else memory. */
export function defaultStorage(): PendingStorage {
  return typeof indexedDB === "undefined" ? new MemoryStorage() : new IdbStorage();
}

/** An action as stored: with the id of the host it is for (none before actions were scoped). */
type Stored = PendingAction & { hostID?: string };

/** One host's share of the origin's pending actions. Every paired host of a relay-served app
 *  shares one origin, hence one IndexedDB: each action is stored with its host's id and each
 *  host's queue reads, sends and deletes only its own, so an action written on host A is never
 *  flushed to host B. Actions stored before scoping (no host id) are the page's host's: the
 *  first queue that `adoptsUnscoped` (the page's own, never a fleet connection's) stamps them. */
export class HostStorage implements PendingStorage {
  constructor(
    private readonly shared: PendingStorage,
    readonly hostID: string,
    private readonly adoptsUnscoped: boolean,
  ) {}

  async all(): Promise<PendingAction[]> {
    const mine: PendingAction[] = [];
    for (const a of (await this.shared.all()) as Stored[]) {
      if (a.hostID === this.hostID) mine.push(a);
      else if (a.hostID === undefined && this.adoptsUnscoped) {
        const stamped: Stored = { ...a, hostID: this.hostID };
        await this.shared.put(stamped);
        mine.push(stamped);
      }
    }
    return mine;
  }

  put(action: PendingAction): Promise<void> {
    return this.shared.put({ ...action, hostID: this.hostID } as Stored);
  }

  async delete(id: string): Promise<void> {
    // Only its own: an id of another host's action is left alone.
    const a = ((await this.shared.all()) as Stored[]).find((x) => x.id === id);
    if (a && (a.hostID === this.hostID || (a.hostID === undefined && this.adoptsUnscoped))) await this.shared.delete(id);
  }
}

/** The queue storage of one host on this origin (see `HostStorage`). */
export function hostStorage(hostID: string, adoptsUnscoped: boolean): PendingStorage {
  return new HostStorage(defaultStorage(), hostID, adoptsUnscoped);
}

/** Drops every action stored for a host this device forgot (revoked: they can never be sent). */
export async function dropHostActions(hostID: string, shared: PendingStorage = defaultStorage()): Promise<void> {
  for (const a of (await shared.all()) as Stored[]) if (a.hostID === hostID) await shared.delete(a.id);
}
