/** The offline queue with several hosts on one origin: each host's actions are stored, read,
 *  sent and deleted apart, so what was written on host A is never flushed to host B. */
import { describe, expect, it } from "vitest";

import type { Request } from "../connection";
import type { HostMessage } from "../protocol.gen";
import { PendingQueue, type QueueLink } from "./queue";
import type { PendingAction } from "./rules";
import { HostStorage, MemoryStorage, dropHostActions } from "./storage";

/** A host with one session `sid`; records every write it was sent. */
function host(sid: string) {
  const h = { up: false, writes: [] as Request[] };
  const link: QueueLink = {
    online: () => h.up,
    backends: () => [],
    send: async (msg, id) => {
      if (!h.up) throw Object.assign(new Error("offline"), { code: "offline" });
      switch (msg.type) {
        case "listSessions":
          return { type: "sessions", messageID: id, sessions: [{ sessionID: sid } as never] };
        case "exportSession":
          return { type: "ack", messageID: id, result: { kind: "exported", text: "" } };
        default:
          h.writes.push(msg);
          return { type: "ack", messageID: id } as HostMessage;
      }
    },
  };
  return { ...h, state: h, link };
}

const legacy = (id: string): PendingAction =>
  ({ id, kind: "rename", createdAt: 1, state: "queued", sessionID: "s", title: "t", baseSeq: 0 }) as PendingAction;

describe("pending actions scoped by host", () => {
  it("a host's queue reads, sends and deletes only its own actions", async () => {
    const shared = new MemoryStorage();
    const a = host("sa");
    const b = host("sb");
    const onA = new PendingQueue(a.link, new HostStorage(shared, "A", true));
    await onA.addInput("input", "sa", "written on A", 0);
    // The page switches to B (a new page load: B is its host), and B is online.
    const onB = new PendingQueue(b.link, new HostStorage(shared, "B", true));
    b.state.up = true;
    await onB.load();
    expect(onB.actions).toEqual([]);
    await onB.flush();
    expect(b.state.writes).toEqual([]);
    expect(onB.sent).toBe(0);
    // Still stored, untouched, for A.
    const stored = await shared.all();
    expect(stored.map((x) => [x.state, (x as { hostID?: string }).hostID])).toEqual([["queued", "A"]]);
    // B's queue cannot delete it either.
    await new HostStorage(shared, "B", true).delete(stored[0].id);
    expect(await shared.all()).toHaveLength(1);
    // A in reach (the page back on A, or A's fleet connection): sent to A, once.
    const againA = new PendingQueue(a.link, new HostStorage(shared, "A", false));
    await againA.load();
    expect(againA.actions.map((x) => x.kind)).toEqual(["input"]);
    a.state.up = true;
    await againA.flush();
    expect(a.state.writes).toEqual([{ type: "sendInput", sessionID: "sa", text: "written on A" }]);
    expect(await shared.all()).toEqual([]);
  });

  it("actions stored before scoping become the page's host's, once, never a fleet connection's", async () => {
    const shared = new MemoryStorage();
    await shared.put(legacy("old"));
    // A fleet connection (another host) reads first: not its.
    expect(await new HostStorage(shared, "other", false).all()).toEqual([]);
    // The page's host adopts it and stamps it.
    expect((await new HostStorage(shared, "A", true).all()).map((x) => x.id)).toEqual(["old"]);
    expect(((await shared.all())[0] as { hostID?: string }).hostID).toBe("A");
    // After a switch, the next page host does not take it over.
    expect(await new HostStorage(shared, "B", true).all()).toEqual([]);
  });

  it("forgetting a host drops its actions and keeps the others'", async () => {
    const shared = new MemoryStorage();
    await new HostStorage(shared, "A", true).put(legacy("a1"));
    await new HostStorage(shared, "B", true).put(legacy("b1"));
    await dropHostActions("A", shared);
    expect((await shared.all()).map((x) => x.id)).toEqual(["b1"]);
  });

  it("two hosts' queues flush alongside, each under its own lock", async () => {
    const names: string[] = [];
    const g = globalThis as { navigator?: { locks?: unknown } };
    const saved = Object.getOwnPropertyDescriptor(globalThis, "navigator");
    Object.defineProperty(globalThis, "navigator", {
      configurable: true,
      value: { ...g.navigator, locks: { request: (n: string, f: () => Promise<void>) => (names.push(n), f()) } },
    });
    try {
      const shared = new MemoryStorage();
      await new PendingQueue(host("x").link, new HostStorage(shared, "A", true)).flush();
      await new PendingQueue(host("x").link, new HostStorage(shared, "B", false)).flush();
      expect(names).toEqual(["nucleic-pending-flush:A", "nucleic-pending-flush:B"]);
    } finally {
      if (saved) Object.defineProperty(globalThis, "navigator", saved);
    }
  });
});
