import { afterEach, beforeEach, describe, expect, it } from "vitest";

import type { Request } from "../connection";
import type { Event, HostMessage } from "../protocol.gen";
import { PendingQueue, type QueueLink } from "./queue";
import { MemoryStorage, StorageFullError } from "./storage";

/** A scripted host: sessions, their events, and every write it was sent (by messageID). */
class FakeHost {
  sessions = new Set(["s1"]);
  events: Event[] = [];
  /** messageID → times carried out; a repeated id is answered without doing it again. */
  done = new Map<string, number>();
  writes: Array<{ id: string; msg: Request }> = [];
  up = true;
  /** Drops the link right after the next write reached the host (outcome unknown to the client). */
  loseNextReply = false;

  link(): QueueLink {
    return {
      online: () => this.up,
      backends: () => [],
      send: async (msg, id) => {
        if (!this.up) throw Object.assign(new Error("offline"), { code: "offline" });
        await Promise.resolve();
        switch (msg.type) {
          case "listSessions":
            return { type: "sessions", messageID: id, sessions: [...this.sessions].map((s) => ({ sessionID: s }) as never) };
          case "listProjects":
            return { type: "projects", messageID: id, projects: [{ projectID: "p" } as never] };
          case "exportSession":
            return { type: "ack", messageID: id, result: { kind: "exported", text: this.events.map((e) => JSON.stringify(e)).join("\n") } };
          default: {
            if (!this.done.has(id)) {
              this.done.set(id, 1);
              this.writes.push({ id, msg });
            }
            if (this.loseNextReply) {
              this.loseNextReply = false;
              this.up = false;
              throw Object.assign(new Error("lost"), { code: "offline" });
            }
            return { type: "ack", messageID: id } as HostMessage;
          }
        }
      },
    };
  }
}

const userText = (seq: number, text: string): Event => ({ seq, at: "x", sessionID: "s1", backend: "simulated", kind: { type: "userText", isPartial: false, messageID: "u", text } });

/** A Web Locks stand-in shared by the "tabs" of one test. */
function installLocks() {
  let chain = Promise.resolve();
  const locks = {
    request: (_name: string, f: () => Promise<void>) => {
      const next = chain.then(f, f);
      chain = next.catch(() => undefined);
      return next;
    },
  };
  Object.defineProperty(navigator, "locks", { value: locks, configurable: true });
}

describe("PendingQueue", () => {
  beforeEach(installLocks);
  afterEach(() => {
    Object.defineProperty(navigator, "locks", { value: undefined, configurable: true });
  });

  it("sends a queued input with its own messageID and forgets it once acknowledged", async () => {
    const host = new FakeHost();
    const storage = new MemoryStorage();
    const q = new PendingQueue(host.link(), storage);
    const a = await q.addInput("input", "s1", "hello", 0);
    await q.flush();
    expect(host.writes).toEqual([{ id: a.id, msg: { type: "sendInput", sessionID: "s1", text: "hello" } }]);
    expect(await storage.all()).toEqual([]);
  });

  it("marks a conflict for the person and resends re-based, or drops", async () => {
    const host = new FakeHost();
    host.events = [userText(1, "from the laptop")];
    const q = new PendingQueue(host.link(), new MemoryStorage());
    const a = await q.addInput("input", "s1", "mine", 0);
    await q.flush();
    expect(q.actions[0]).toMatchObject({ id: a.id, state: "conflict" });
    expect(host.writes).toEqual([]);
    // Resend: based on what was seen now, so the laptop's message no longer conflicts.
    await q.resend(a.id);
    expect(host.writes.map((w) => w.msg)).toEqual([{ type: "sendInput", sessionID: "s1", text: "mine" }]);
    expect(q.actions).toEqual([]);

    const b = await q.addInput("input", "s1", "again", 0);
    await q.flush();
    expect(q.actions[0].state).toBe("conflict");
    await q.drop(b.id);
    expect(q.actions).toEqual([]);
  });

  it("an edited conflict goes under a new id with the new text", async () => {
    const host = new FakeHost();
    host.events = [userText(1, "other")];
    const q = new PendingQueue(host.link(), new MemoryStorage());
    const a = await q.addInput("input", "s1", "draft", 0);
    await q.flush();
    await q.resend(a.id, { text: "better" });
    expect(host.writes).toHaveLength(1);
    expect(host.writes[0].id).not.toBe(a.id);
    expect(host.writes[0].msg).toMatchObject({ text: "better" });
  });

  it("a reply lost with the link: resent later under the same id, carried out once", async () => {
    const host = new FakeHost();
    const q = new PendingQueue(host.link(), new MemoryStorage());
    const a = await q.addInput("input", "s1", "once", 0);
    host.loseNextReply = true;
    await q.flush();
    expect(q.actions[0]).toMatchObject({ id: a.id, state: "sending" });
    // The text is now in the transcript; the retry does not mistake it for someone else's.
    host.events = [userText(1, "once")];
    host.up = true;
    await q.flush();
    expect(host.done.get(a.id)).toBe(1);
    expect(host.writes).toHaveLength(1);
    expect(q.actions).toEqual([]);
  });

  it("two tabs flushing the same stored action send it once", async () => {
    const host = new FakeHost();
    const storage = new MemoryStorage();
    const tab1 = new PendingQueue(host.link(), storage);
    const tab2 = new PendingQueue(host.link(), storage);
    await tab1.addInput("input", "s1", "one", 0);
    await tab1.addRename("s1", "Newest", 0);
    await tab2.load();
    await Promise.all([tab1.flush(), tab2.flush()]);
    expect(host.writes).toHaveLength(2);
    expect(tab1.sent + tab2.sent).toBe(2);
  });

  it("a deleted session fails its actions; renames are latest-wins", async () => {
    const host = new FakeHost();
    const q = new PendingQueue(host.link(), new MemoryStorage());
    await q.addRename("s1", "first", 0);
    await new Promise((r) => setTimeout(r, 2));
    await q.addRename("s1", "second", 0);
    await q.addInput("input", "gone", "hello?", 0);
    await q.flush();
    expect(host.writes.map((w) => w.msg)).toEqual([{ type: "intent", intent: { kind: "rename", sessionID: "s1", title: "second" } }]);
    expect(q.actions).toMatchObject([{ sessionID: "gone", state: "failed", reason: "The session no longer exists." }]);
  });

  it("a start goes while its project exists, fails when it is gone", async () => {
    const host = new FakeHost();
    const q = new PendingQueue(host.link(), new MemoryStorage());
    await q.addStart({ projectID: "p", prompt: "go" });
    await q.addStart({ projectID: "removed", prompt: "go" });
    await q.flush();
    expect(host.writes.map((w) => w.msg)).toEqual([{ type: "intent", intent: { kind: "newSession", projectID: "p", prompt: "go" } }]);
    expect(q.actions).toMatchObject([{ kind: "start", state: "failed", reason: expect.stringMatching(/project no longer exists/) }]);
  });

  it("storage quota exceeded: a clear error and nothing half-queued", async () => {
    const host = new FakeHost();
    const storage = new MemoryStorage();
    const q = new PendingQueue(host.link(), storage);
    storage.failNextPut = true;
    await expect(q.addInput("input", "s1", "big", 0)).rejects.toBeInstanceOf(StorageFullError);
    await expect(q.addInput("input", "s1", "x", 0).then(() => "ok")).resolves.toBe("ok");
    expect(q.actions.map((a) => (a as { text: string }).text)).toEqual(["x"]);
    expect(new StorageFullError(new DOMException("q", "QuotaExceededError")).message).toMatch(/storage is full.*still in the box/);
  });

  it("nothing is sent while offline", async () => {
    const host = new FakeHost();
    host.up = false;
    const q = new PendingQueue(host.link(), new MemoryStorage());
    await q.addInput("input", "s1", "later", 0);
    await q.flush();
    expect(host.writes).toEqual([]);
    expect(q.actions[0].state).toBe("queued");
  });
});
