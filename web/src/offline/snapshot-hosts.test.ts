/** The offline snapshot with several hosts on one origin (every relay host shares the relay's):
 *  what this device last saw of host A is never shown as host B's. */
import { afterEach, describe, expect, it, vi } from "vitest";

import { type Snapshot, clearSnapshot, loadSnapshot, saveSnapshot } from "./snapshot";

/** A minimal IndexedDB: one object store, get / put / delete by key. */
function fakeIndexedDB() {
  const stored = new Map<string, unknown>();
  const later = (f: () => void) => setTimeout(f, 0);
  const request = (run: () => unknown, tx: Record<string, unknown>) => {
    const req: Record<string, unknown> = {};
    later(() => {
      req.result = run();
      (tx.oncomplete as () => void)();
    });
    return req;
  };
  return {
    stored,
    open() {
      const req: Record<string, unknown> = {};
      const db = {
        close() {},
        transaction() {
          const tx: Record<string, unknown> = {};
          tx.objectStore = () => ({
            get: (key: string) => request(() => structuredClone(stored.get(key)), tx),
            put: (value: unknown, key: string) => request(() => stored.set(key, structuredClone(value)) && key, tx),
            delete: (key: string) => request(() => stored.delete(key) && undefined, tx),
          });
          return tx;
        },
      };
      later(() => {
        req.result = db;
        (req.onsuccess as () => void)();
      });
      return req;
    },
  };
}

const seen = (hostID: string | undefined, title: string): Snapshot => ({
  savedAt: 1,
  origin: location.origin,
  ...(hostID ? { hostID } : {}),
  projects: [],
  sessions: [{ sessionID: `s-${title}`, title } as never],
  events: {},
});

afterEach(() => vi.unstubAllGlobals());

describe("offline snapshots, one per host", () => {
  it("keeps each host's last state apart and never shows one for another", async () => {
    vi.stubGlobal("indexedDB", fakeIndexedDB());
    await saveSnapshot(seen("A", "on A"));
    expect(await loadSnapshot("B")).toBeNull();
    await saveSnapshot(seen("B", "on B"));
    expect((await loadSnapshot("A"))?.sessions[0].title).toBe("on A");
    expect((await loadSnapshot("B"))?.sessions[0].title).toBe("on B");
    expect(await loadSnapshot()).toBeNull();
    // A signed out (or forgotten): B's stays.
    await clearSnapshot("A");
    expect(await loadSnapshot("A")).toBeNull();
    expect((await loadSnapshot("B"))?.sessions[0].title).toBe("on B");
  });

  it("a snapshot saved before snapshots had a host stays the local origin's host's", async () => {
    const idb = fakeIndexedDB();
    vi.stubGlobal("indexedDB", idb);
    idb.stored.set("last", seen(undefined, "before"));
    expect((await loadSnapshot())?.sessions[0].title).toBe("before");
    expect((await loadSnapshot("local"))?.sessions[0].title).toBe("before");
    expect(await loadSnapshot("A")).toBeNull();
  });

  it("a record under a host's key that names another host is not shown", async () => {
    const idb = fakeIndexedDB();
    vi.stubGlobal("indexedDB", idb);
    idb.stored.set("host:B", seen("A", "mislabelled"));
    expect(await loadSnapshot("B")).toBeNull();
  });
});
