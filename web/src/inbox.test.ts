import { describe, expect, it } from "vitest";

import { inboxCount, inboxItems } from "./inbox";
import type { EventKind, Risk, SessionSummary } from "./protocol.gen";
import { CockpitStore } from "./store";

function summary(id: string, projectID: string, updatedAt: number, pendingApprovals: number): SessionSummary {
  return { sessionID: id, projectID, title: `title ${id}`, backend: "simulated", status: "awaiting-approval", pendingApprovals, costUSD: 0, lastSeq: 1, updatedAt, archived: false, readOnly: false };
}

function ask(store: CockpitStore, sessionID: string, requests: Array<[string, Risk | null]>) {
  store.transcript(sessionID).fold(
    requests.map(([requestID, risk], i) => ({
      seq: i + 1,
      at: "x",
      sessionID,
      backend: "simulated",
      kind: { type: "approvalRequested", requestID, toolName: "Bash", input: { command: "ls" }, risk } as EventKind,
    })),
  );
}

describe("inbox", () => {
  it("lists every open request across sessions and projects, highest risk first, then newest", () => {
    const store = new CockpitStore("ws://127.0.0.1:1/ws");
    store.projects = [{ projectID: "p1", name: "one" } as never, { projectID: "p2", name: "two" } as never];
    store.sessions.set("a", summary("a", "p1", 100, 2));
    store.sessions.set("b", summary("b", "p2", 200, 1));
    store.sessions.set("c", { ...summary("c", "p1", 300, 0), status: "running" });
    ask(store, "a", [["a1", "low"], ["a2", "critical"]]);
    ask(store, "b", [["b1", "low"]]);
    ask(store, "c", [["c1", "high"]]); // no longer pending by its summary: not listed
    const items = inboxItems(store);
    expect(items.map((i) => i.request.requestID)).toEqual(["a2", "b1", "a1"]);
    expect(items.map((i) => i.projectName)).toEqual(["one", "two", "one"]);
    expect(inboxCount(store)).toBe(3);
  });
});
