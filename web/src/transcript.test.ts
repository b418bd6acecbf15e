import { describe, expect, it } from "vitest";

import type { Event, EventKind } from "./protocol.gen";
import { Transcript, displayText, egressAsked, toolSummary } from "./transcript";

let seq = 0;
function ev(kind: EventKind | Record<string, unknown>): Event {
  seq += 1;
  return { seq, at: "2026-11-29T00:00:00Z", sessionID: "s1", backend: "simulated", kind: kind as EventKind };
}

describe("Transcript.fold", () => {
  it("joins a check's start, output and result into one row, and keeps a report", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([
      ev({ type: "checkStarted", name: "tests", argv: ["pytest"], trigger: "turn" }),
      ev({ type: "checkOutput", name: "tests", text: "F.\n" }),
      ev({ type: "checkOutput", name: "tests", text: "1 failed, 1 passed in 0.1s\n" }),
      ev({ type: "checkFinished", name: "tests", outcome: "failed", exitCode: 1, durationMs: 120, passed: 1, failed: 1, outputBytes: 30, logBytes: 30, required: true }),
      ev({ type: "report", trigger: "turn", files: ["calc.py"], additions: 1, deletions: 1, ahead: 0, behind: 0, checks: [], approvalsAsked: 1, approvalsDenied: 0, costUSD: 0, claims: [], contradictions: [{ claim: "All tests pass.", fact: "the host's check tests FAILED" }] }),
    ]);
    expect(t.rows).toHaveLength(2);
    expect(t.rows[0]).toMatchObject({ kind: "check", name: "tests", output: "F.\n1 failed, 1 passed in 0.1s\n", finished: { outcome: "failed" } });
    expect(t.rows[1]).toMatchObject({ kind: "report", report: { contradictions: [{ claim: "All tests pass." }] } });
  });

  it("shows a session's notes and mode switches, not its renames", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([
      ev({ type: "sessionUpdated", title: "renamed", by: "cli" }),
      ev({ type: "sessionUpdated", note: "Adopted from the claudeCode session c1 (2 turns above).", by: "cli" }),
      ev({ type: "sessionUpdated", mode: "edit", by: "cockpit" }),
    ]);
    expect(t.rows.map((r) => (r as { text?: string }).text)).toEqual(["Adopted from the claudeCode session c1 (2 turns above).", "Mode: edit (by cockpit)"]);
  });

  it("merges streamed deltas and replaces them with the whole block", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([
      ev({ type: "assistantText", isPartial: true, messageID: "m1", text: "Hel" }),
      ev({ type: "assistantText", isPartial: true, messageID: "m1", text: "lo" }),
    ]);
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0]).toMatchObject({ kind: "assistant", text: "Hello", streaming: true });
    t.fold([ev({ type: "assistantText", isPartial: false, messageID: "m1", text: "Hello!" })]);
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0]).toMatchObject({ text: "Hello!", streaming: false });
  });

  it("joins a tool call's start, input, completion and result into one row", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([
      ev({ type: "toolCallStarted", toolCallID: "t1", name: "Write", input: {} }),
      ev({ type: "toolInputDelta", toolCallID: "t1", partialJson: '{"file_path":' }),
      ev({ type: "toolCallCompleted", toolCallID: "t1", name: "Write", input: { file_path: "a.txt", content: "x" } }),
      ev({ type: "toolResult", toolCallID: "t1", content: "ok", isError: false }),
    ]);
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0]).toMatchObject({ kind: "tool", name: "Write", complete: true, result: { content: "ok", isError: false } });
    expect(toolSummary((t.rows[0] as unknown as { input: never }).input)).toBe("a.txt");
    expect(toolSummary({ file_path: "/w/t/src/a.rs" }, "/w/t")).toBe("src/a.rs");
    expect(toolSummary({ changes: [{ path: "/w/t/a.txt", kind: { type: "add" }, diff: "+x" }, { path: "/w/t/b.txt", kind: { type: "update" }, diff: "" }] }, "/w/t")).toBe("a.txt, b.txt");
  });

  it("tracks pending approvals and who resolved them", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([ev({ type: "approvalRequested", requestID: "r1", toolName: "Bash", input: { command: "ls" } })]);
    expect(t.facts.pending.map((p) => p.requestID)).toEqual(["r1"]);
    t.fold([ev({ type: "approvalResolved", requestID: "r1", decision: "allow", by: "phone" })]);
    expect(t.facts.pending).toEqual([]);
    expect(t.rows[0]).toMatchObject({ kind: "approval", resolved: { by: "phone" } });
  });

  it("renders an unknown kind as a generic row instead of failing", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([ev({ type: "somethingNew", x: 1 }), ev({ type: "userText", isPartial: false, messageID: "u", text: "hi" })]);
    expect(t.rows.map((r) => r.kind)).toEqual(["unknown", "user"]);
  });

  it("ignores events at or below the cursor (no duplicates)", () => {
    seq = 0;
    const t = new Transcript();
    const a = ev({ type: "userText", isPartial: false, messageID: "u", text: "one" });
    t.fold([a]);
    t.fold([a]);
    expect(t.rows).toHaveLength(1);
  });

  it("sums usage and cost across turns", () => {
    seq = 0;
    const t = new Transcript();
    t.fold([
      ev({ type: "usage", inputTokens: 10, outputTokens: 5, cachedInputTokens: 1, costUSD: 0.01 }),
      ev({ type: "usage", inputTokens: 20, outputTokens: 5, cachedInputTokens: 0, costUSD: 0.02 }),
    ]);
    expect(t.facts.usage).toEqual({ inputTokens: 30, outputTokens: 10, cachedInputTokens: 1 });
    expect(t.facts.costUSD).toBeCloseTo(0.03);
  });

  it("folds 20,000 events quickly", () => {
    seq = 0;
    const t = new Transcript();
    const events: Event[] = [];
    for (let i = 0; i < 5000; i++) {
      events.push(ev({ type: "assistantText", isPartial: false, messageID: `m${i}`, text: `line ${i}` }));
      events.push(ev({ type: "toolCallCompleted", toolCallID: `t${i}`, name: "Bash", input: { command: "ls" } }));
      events.push(ev({ type: "toolResult", toolCallID: `t${i}`, content: "x".repeat(100), isError: false }));
      events.push(ev({ type: "statusChanged", status: "running", previous: "idle" }));
    }
    t.fold(events);
    expect(t.rows).toHaveLength(10000);
    expect(t.facts.lastSeq).toBe(20000);
  });
});

describe("egressAsked", () => {
  it("reads the host's network question, and nothing else as one", () => {
    const input = { host: "pkg.test", port: 443, method: "CONNECT" };
    expect(egressAsked({ requestID: "e", toolName: "egress", input })).toEqual(input);
    expect(egressAsked({ requestID: "b", toolName: "Bash", input })).toBeNull();
    expect(egressAsked({ requestID: "x", toolName: "egress", input: { host: 1 } })).toBeNull();
  });
});

describe("displayText", () => {
  it("joins text blocks and pretty-prints other JSON", () => {
    expect(displayText([{ type: "text", text: "a" }, { type: "text", text: "b" }])).toBe("a\nb");
    expect(displayText({ a: 1 })).toBe('{\n  "a": 1\n}');
  });
});
