import { afterEach, describe, expect, it, vi } from "vitest";

import { type Snapshot, saveSnapshot } from "./snapshot";

/** A minimal IndexedDB whose writes fail with QuotaExceededError above `room` bytes of JSON. */
function fakeIndexedDB(room: number) {
  const stored = new Map<string, unknown>();
  const later = (f: () => void) => setTimeout(f, 0);
  return {
    stored,
    open() {
      const req: Record<string, unknown> = {};
      const db = {
        close() {},
        transaction() {
          const tx: Record<string, unknown> & { error?: DOMException } = {};
          tx.objectStore = () => ({
            put(value: unknown, key: string) {
              const put: Record<string, unknown> = { result: key };
              later(() => {
                if (JSON.stringify(value).length > room) {
                  tx.error = new DOMException("quota", "QuotaExceededError");
                  (tx.onabort as () => void)();
                } else {
                  stored.set(key, value);
                  (tx.oncomplete as () => void)();
                }
              });
              return put;
            },
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

function snapshot(): Snapshot {
  return {
    savedAt: 1,
    origin: "http://127.0.0.1:1",
    projects: [],
    sessions: [],
    events: { s1: Array.from({ length: 50 }, (_, i) => ({ seq: i + 1, padding: "x".repeat(100) })) as never },
  };
}

afterEach(() => vi.unstubAllGlobals());

describe("the offline snapshot over a full storage quota", () => {
  it("keeps the lists without the events when the events do not fit", async () => {
    const idb = fakeIndexedDB(1000);
    vi.stubGlobal("indexedDB", idb);
    expect(await saveSnapshot(snapshot())).toBe("listsOnly");
    expect((idb.stored.get("last") as Snapshot).events).toEqual({});
  });

  it("saves nothing, and says so, when not even the lists fit", async () => {
    const idb = fakeIndexedDB(10);
    vi.stubGlobal("indexedDB", idb);
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(await saveSnapshot(snapshot())).toBe("none");
    expect(idb.stored.size).toBe(0);
    expect(warn.mock.calls.some((c) => String(c[0]).includes("storage quota exceeded"))).toBe(true);
  });

  it("saves everything when there is room", async () => {
    const idb = fakeIndexedDB(1_000_000);
    vi.stubGlobal("indexedDB", idb);
    expect(await saveSnapshot(snapshot())).toBe("full");
    expect(Object.keys((idb.stored.get("last") as Snapshot).events)).toEqual(["s1"]);
  });
});
