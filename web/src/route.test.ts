import { describe, expect, it } from "vitest";

import type { SessionSummary } from "./protocol.gen";
import { transitionMessage } from "./notify";
import { href, panesFor, parseRoute } from "./route";
import { byUrgency } from "./store";

describe("layout", () => {
  it("picks panes by width: <600 one, 600–1099 two, ≥1100 three", () => {
    expect([390, 599, 600, 800, 1099, 1100, 1280].map(panesFor)).toEqual([1, 1, 2, 2, 2, 3, 3]);
  });
  it("round-trips routes", () => {
    expect(parseRoute(href({ sessionID: "a b", tools: true }))).toMatchObject({ sessionID: "a b", tools: true });
    expect(parseRoute("#/dashboard").dashboard).toBe(true);
    expect(parseRoute("").sessionID).toBeNull();
  });
});

function summary(status: SessionSummary["status"], pendingApprovals = 0, updatedAt = 0): SessionSummary {
  return { sessionID: status, title: status, backend: "simulated", status, pendingApprovals, costUSD: 0, lastSeq: 1, updatedAt, archived: false, readOnly: false };
}

describe("urgency and notifications", () => {
  it("sorts what needs a person first", () => {
    const list = [summary("finished", 0, 9), summary("running", 0, 8), summary("awaiting-approval", 1, 1), summary("awaiting-input", 0, 2), summary("error", 0, 3)];
    expect(list.sort(byUrgency).map((s) => s.status)).toEqual(["awaiting-approval", "error", "awaiting-input", "running", "finished"]);
  });
  it("notifies on approval, input after running, finish", () => {
    expect(transitionMessage(summary("running"), summary("awaiting-approval", 1))).toBe("needs your approval");
    expect(transitionMessage(summary("running"), summary("awaiting-input"))).toMatch(/waits/);
    expect(transitionMessage(summary("running"), summary("finished"))).toBe("finished");
    expect(transitionMessage(summary("running"), summary("running"))).toBeNull();
    expect(transitionMessage(undefined, summary("running"))).toBeNull();
    expect(transitionMessage(undefined, summary("awaiting-approval", 1))).toBe("needs your approval");
  });
});
