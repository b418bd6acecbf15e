import { describe, expect, it } from "vitest";

import type { Event, EventKind, NewSession } from "../protocol.gen";
import { type HostView, type PendingAction, supersededRenames, verdict } from "./rules";

let seq = 10;
const ev = (kind: EventKind): Event => ({ seq: ++seq, at: "2026-12-01T00:00:00Z", sessionID: "s1", backend: "simulated", kind });
const text = (type: "userText" | "assistantText" | "thinking", t: string, isPartial = false) => ev({ type, isPartial, messageID: "m", text: t });

function view(events: Event[], opts: { gone?: boolean; own?: string[]; startProblem?: string } = {}): HostView {
  return {
    sessionExists: () => !opts.gone,
    eventsSince: (_id, base) => events.filter((e) => e.seq > base),
    ownTexts: () => new Set(opts.own ?? []),
    startProblem: () => opts.startProblem ?? null,
  };
}

const input = (kind: "input" | "queue" | "resume" = "input", backendSessionID: string | null = "conv-1"): PendingAction => ({
  id: "p1",
  kind,
  createdAt: 1,
  state: "queued",
  sessionID: "s1",
  text: "and add tests",
  baseSeq: 10,
  backendSessionID,
});

describe("pending input conflicts (the seed's rules)", () => {
  it("is sent when nothing happened", () => {
    expect(verdict(input(), view([]))).toEqual({ send: true });
  });

  it("user input from another client conflicts; this client's own does not", () => {
    const other = [text("userText", "do something else")];
    expect(verdict(input(), view(other))).toMatchObject({ send: false, state: "conflict", reason: expect.stringMatching(/someone else/i) });
    expect(verdict(input(), view(other, { own: ["do something else"] }))).toEqual({ send: true });
  });

  it("a turn-completing result conflicts for input, not for a message queued after the turn", () => {
    const done = [ev({ type: "turnCompleted", usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0 } })];
    expect(verdict(input("input"), view(done))).toMatchObject({ state: "conflict", reason: expect.stringMatching(/finished its turn/) });
    expect(verdict(input("queue"), view(done))).toEqual({ send: true });
  });

  it("context changes conflict: stop, interrupt, session switch, finish, archive", () => {
    const changes: EventKind[] = [
      { type: "runFinished", outcome: "stopped" },
      { type: "interruptRequested", by: "phone" },
      { type: "sessionStarted", backendSessionID: "conv-2", cwd: "/w", model: "m", toolNames: [] },
      { type: "worktreeFinished", action: "merged" } as EventKind,
      { type: "sessionUpdated", archived: true, by: "phone" },
    ];
    for (const k of changes) expect(verdict(input(), view([ev(k)])), k.type).toMatchObject({ send: false, state: "conflict" });
  });

  it("status, deltas, assistant text, tool results and approval traffic do not conflict", () => {
    const calm = [
      ev({ type: "statusChanged", status: "running", previous: "awaiting-input" }),
      text("assistantText", "partial", true),
      text("thinking", "hmm"),
      text("assistantText", "Here is the plan."),
      ev({ type: "toolInputDelta", toolCallID: "t", partialJson: "{" }),
      ev({ type: "toolCallCompleted", toolCallID: "t", name: "Bash", input: { command: "ls" } }),
      ev({ type: "toolResult", toolCallID: "t", content: "ok", isError: false }),
      ev({ type: "approvalRequested", requestID: "r1", toolName: "Write", input: {} }),
      ev({ type: "approvalResolved", requestID: "r1", decision: "allow", by: "phone" }),
      ev({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0 }),
      // Claude Code announces the same conversation at every turn: not a switch.
      ev({ type: "sessionStarted", backendSessionID: "conv-1", cwd: "/w", model: "m", toolNames: [] }),
      ev({ type: "sessionUpdated", title: "renamed", by: "phone" }),
    ];
    expect(verdict(input(), view(calm))).toEqual({ send: true });
  });

  it("only events after the base seq count", () => {
    const before = { ...text("userText", "old"), seq: 5 };
    expect(verdict(input(), view([before]))).toEqual({ send: true });
  });

  it("a session that was deleted fails the action", () => {
    expect(verdict(input(), view([], { gone: true }))).toMatchObject({ send: false, state: "failed" });
  });
});

describe("other actions", () => {
  const session: NewSession = { projectID: "p", prompt: "go" };
  const start: PendingAction = { id: "a", kind: "start", createdAt: 1, state: "queued", session };

  it("start is sent while its project and options are valid", () => {
    expect(verdict(start, view([]))).toEqual({ send: true });
    expect(verdict(start, view([], { startProblem: "The project no longer exists on the host." }))).toMatchObject({ state: "failed" });
  });

  it("resume conflicts when the backend session changed, not otherwise", () => {
    const switched = [ev({ type: "sessionStarted", backendSessionID: "conv-9", cwd: "/w", model: "m", toolNames: [] })];
    expect(verdict(input("resume"), view(switched))).toMatchObject({ state: "conflict", reason: expect.stringMatching(/resumed elsewhere/) });
    expect(verdict(input("resume"), view([]))).toEqual({ send: true });
    // The other client's message that resumed it comes first; the switch is still the reason.
    const resumedElsewhere = [text("userText", "laptop resumed it"), ...switched];
    expect(verdict(input("resume"), view(resumedElsewhere))).toMatchObject({ state: "conflict", reason: expect.stringMatching(/resumed elsewhere/) });
    // Same conversation resumed elsewhere: a conflict for the message, as for any input.
    expect(verdict(input("resume"), view([text("userText", "laptop resumed it")]))).toMatchObject({ reason: expect.stringMatching(/someone else/i) });
  });

  it("rename is latest-wins unless the session is gone", () => {
    const rename = (id: string, at: number, title: string): PendingAction => ({ id, kind: "rename", createdAt: at, state: "queued", sessionID: "s1", title, baseSeq: 10 });
    // Someone renamed it meanwhile: ours is later, so it still goes.
    expect(verdict(rename("r1", 1, "mine"), view([ev({ type: "sessionUpdated", title: "theirs", by: "phone" })]))).toEqual({ send: true });
    expect(verdict(rename("r1", 1, "mine"), view([], { gone: true }))).toMatchObject({ state: "failed", reason: expect.stringMatching(/no longer exists/) });
    expect([...supersededRenames([rename("r1", 1, "a"), rename("r2", 2, "b")])]).toEqual(["r1"]);
  });
});
