import { describe, expect, it } from "vitest";

import { hostsInboxItems, inboxCount, inboxItems } from "./inbox";
import { hostLabel, reach } from "./remote/fleet";
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

describe("inbox across hosts", () => {
  it("merges every host's requests by risk, each naming its host and answered through its own store", () => {
    const a = new CockpitStore("ws://127.0.0.1:1/ws");
    const b = new CockpitStore("ws://127.0.0.1:2/ws");
    a.sessions.set("s1", summary("s1", "p1", 100, 1));
    b.sessions.set("s2", summary("s2", "p9", 50, 2));
    ask(a, "s1", [["a-low", "low"]]);
    ask(b, "s2", [["b-crit", "critical"], ["b-med", "medium"]]);
    const items = hostsInboxItems([
      { hostID: "host-a", store: a },
      { hostID: "host-b", store: b },
    ]);
    expect(items.map((i) => [i.hostID, i.request.requestID])).toEqual([
      ["host-b", "b-crit"],
      ["host-b", "b-med"],
      ["host-a", "a-low"],
    ]);
    expect(items[0].store).toBe(b);
    expect(items[2].store).toBe(a);
    // The single-host list is what it was.
    expect(inboxItems(a).map((i) => [i.hostID, i.request.requestID])).toEqual([["local", "a-low"]]);
  });

  it("tells a host still connecting from one that was tried and failed", () => {
    const s = new CockpitStore("ws://127.0.0.1:1/ws");
    expect(reach(s)).toBe("connecting");
    s.offlineSince = Date.now();
    s.link = "offline";
    expect(reach(s)).toBe("unreachable");
    s.link = "connecting";
    expect(reach(s)).toBe("unreachable");
    s.link = "online";
    expect(reach(s)).toBe("online");
    s.link = "signedOut";
    expect(reach(s)).toBe("signedOut");
  });

  it("labels hosts by machine name and id prefix", () => {
    expect(hostLabel({ hostID: "ab".repeat(32) })).toBe("host abababab");
    expect(hostLabel({ hostID: "ab".repeat(32), hostName: "studio" })).toBe("studio · abababab");
  });
});
