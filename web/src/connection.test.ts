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
  onclose: (() => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(text: string) {
    this.sent.push(JSON.parse(text));
  }
  close() {
    this.readyState = 3;
    this.onclose?.();
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

  it("pending requests fail when the link drops; a 401 on reconnect means signed out", async () => {
    const ws = FakeSocket.all[0];
    ws.open();
    ws.welcome();
    const p = conn.request({ type: "listProjects" });
    vi.stubGlobal("fetch", vi.fn(async () => ({ status: 401 })));
    ws.close();
    await expect(p).rejects.toMatchObject({ code: "offline" });
    await vi.advanceTimersByTimeAsync(6000);
    expect(conn.state).toBe("signedOut");
    expect(FakeSocket.all).toHaveLength(1);
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
