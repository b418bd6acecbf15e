import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { HostConnection, HostError } from "./connection";
import type { Event, SessionSummary } from "./protocol.gen";

/** A scripted stand-in for the browser's WebSocket. */
class FakeSocket {
  static all: FakeSocket[] = [];
  static OPEN = 1;
  readyState = 0;
  sent: any[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: ((e: { code: number }) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(text: string) {
    this.sent.push(JSON.parse(text));
  }
  close(code = 1006) {
    this.readyState = 3;
    this.onclose?.({ code });
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  deliver(msg: unknown) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  welcome() {
    this.deliver({ type: "welcome", hostVersion: "t", protocolVersion: 1, backends: [] });
  }
}

function event(seq: number, sessionID = "s1"): Event {
  return { seq, at: "2026-11-29T00:00:00Z", sessionID, backend: "simulated", kind: { type: "stderr", text: `${seq}` } };
}

let received: Array<{ id: string; seqs: number[] }>;
let states: string[];
let conn: HostConnection;

beforeEach(() => {
  vi.useFakeTimers();
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
  vi.stubGlobal("fetch", vi.fn(async () => ({ status: 200 })));
  received = [];
  states = [];
  conn = new HostConnection("ws://h/ws", { id: "web-1", name: "t" }, {
    state: (s) => states.push(s),
    welcome: () => {},
    events: (id, events) => received.push({ id, seqs: events.map((e) => e.seq) }),
    sessionChanged: (_s: SessionSummary) => {},
  });
  conn.start();
});

afterEach(() => {
  conn.close();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe("HostConnection", () => {
  it("says hello with event batches, then goes online", () => {
    const ws = FakeSocket.all[0];
    ws.open();
    expect(ws.sent[0]).toMatchObject({ type: "hello", clientID: "web-1", features: ["eventBatches"] });
    ws.welcome();
    expect(conn.state).toBe("online");
  });

  it("resubscribes from the cursor after a reconnect and drops what it already has", async () => {
    let ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    conn.subscribe("s1");
    expect(ws.sent.at(-1)).toMatchObject({ type: "subscribe", sessionID: "s1", fromSeq: 1 });
    ws.deliver({ type: "events", sessionID: "s1", events: [event(1), event(2), event(3)] });
    ws.close();
    expect(conn.state).toBe("offline");
    await vi.advanceTimersByTimeAsync(6000);
    ws = FakeSocket.all[1];
    expect(ws).toBeDefined();
    ws.open();
    ws.welcome();
    expect(ws.sent.at(-1)).toMatchObject({ type: "subscribe", sessionID: "s1", fromSeq: 4 });
    // A host that replays a little too much: duplicates are dropped, not shown twice.
    ws.deliver({ type: "events", sessionID: "s1", events: [event(3), event(4)] });
    ws.deliver({ type: "event", event: event(5) });
    expect(received.flatMap((r) => r.seqs)).toEqual([1, 2, 3, 4, 5]);
    expect(conn.duplicatesDropped).toBe(1);
    expect(conn.gaps).toBe(0);
  });

  it("counts a hole in the seqs as a gap", () => {
    const ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    conn.subscribe("s1");
    ws.deliver({ type: "event", event: event(1) });
    ws.deliver({ type: "event", event: event(3) });
    expect(conn.gaps).toBe(1);
  });

  it("matches replies by messageID, rejects errors with who resolved, and refuses offline", async () => {
    const ws = FakeSocket.all[0];
    await expect(conn.request({ type: "listProjects" })).rejects.toMatchObject({ code: "offline" });
    ws.open();
    ws.welcome();
    const p = conn.request({ type: "decide", sessionID: "s1", requestID: "r1", decision: { type: "allow" } });
    const id = ws.sent.at(-1).messageID;
    ws.deliver({ type: "error", messageID: id, code: "alreadyResolved", message: "already answered", resolvedBy: "phone" });
    const err = await p.catch((e) => e);
    expect(err).toBeInstanceOf(HostError);
    expect(err).toMatchObject({ code: "alreadyResolved", resolvedBy: "phone" });
  });

  it("pending requests fail when the link drops, and it reconnects", async () => {
    const ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    const p = conn.request({ type: "listProjects" });
    ws.close();
    await expect(p).rejects.toMatchObject({ code: "offline" });
    await vi.advanceTimersByTimeAsync(6000);
    expect(FakeSocket.all).toHaveLength(2);
  });

  it("a revocation (close 4401) or an unauthorized hello means signed out, with no retry", async () => {
    const ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    const p = conn.request({ type: "listProjects" });
    ws.close(4401);
    await expect(p).rejects.toMatchObject({ code: "unauthorized" });
    expect(conn.state).toBe("signedOut");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(FakeSocket.all).toHaveLength(1);

    const other = new HostConnection("ws://h/ws", { id: "web-2", name: "t" }, {
      state: () => {},
      welcome: () => {},
      events: () => {},
      sessionChanged: () => {},
    });
    other.start();
    const ws2 = FakeSocket.all[1];
    ws2.open();
    ws2.deliver({ type: "error", code: "unauthorized", message: "no such device, or it was revoked" });
    expect(other.state).toBe("signedOut");
  });

  it("proves the device in every hello, and stops when there is no device to prove", async () => {
    let n = 0;
    const proved = new HostConnection("ws://h/ws", { id: "web-3", name: "t" }, {
      state: () => {},
      welcome: () => {},
      events: () => {},
      sessionChanged: () => {},
    }, async () => ({ deviceID: "d1", nonce: `n${++n}`, signature: "sig" }));
    proved.start();
    await vi.advanceTimersByTimeAsync(0);
    const first = FakeSocket.all.at(-1)!;
    first.open();
    expect(first.sent[0]).toMatchObject({ type: "hello", device: { deviceID: "d1", nonce: "n1" } });
    first.close();
    await vi.advanceTimersByTimeAsync(6000);
    const second = FakeSocket.all.at(-1)!;
    second.open();
    expect(second.sent[0].device.nonce).toBe("n2");

    const none = new HostConnection("ws://h/ws", { id: "web-4", name: "t" }, {
      state: () => {},
      welcome: () => {},
      events: () => {},
      sessionChanged: () => {},
    }, async () => {
      throw Object.assign(new Error("no device"), { reason: "signedOut" });
    });
    conn.close();
    proved.close();
    const before = FakeSocket.all.length;
    none.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(none.state).toBe("signedOut");
    expect(FakeSocket.all.length).toBe(before);
  });

  it("abandons a handshake that never finishes and tries again", async () => {
    const ws = FakeSocket.all[0];
    ws.open(); // hello sent, but no welcome ever comes
    await vi.advanceTimersByTimeAsync(10_000);
    expect(ws.readyState).toBe(3);
    expect(conn.state).toBe("offline");
    await vi.advanceTimersByTimeAsync(6000);
    expect(FakeSocket.all).toHaveLength(2);
  });

  it("ignores frames that are not JSON or of unknown types", () => {
    const ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    ws.onmessage?.({ data: "not json" });
    ws.deliver({ type: "fromTheFuture" });
    expect(conn.state).toBe("online");
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
