/** Where pending actions live between reloads: IndexedDB (one object store keyed by action id),
 *  or memory when the browser has none (tests, some private modes). A full disk is an error the
 *  caller shows — an action is never dropped silently. */
import type { PendingAction } from "./rules";

export interface PendingStorage {
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
