/** Folds a session's events into transcript rows (messages, tool calls with their results,
 *  approvals, errors, notices) plus session-level facts (status, model, usage, pending
 *  approvals). Pure and incremental: `fold` takes the next events in seq order. */
import { humanBytes } from "./bytes";
import type {
  ApprovalRequested,
  ApprovalResolved,
  CheckFinished,
  EgressAsked,
  Event,
  JsonValue,
  PullRequestOpened,
  Report,
  SessionStatus,
  Usage,
} from "./protocol.gen";

interface Base {
  /** The seq of the event that created the row: a stable key. */
  seq: number;
  /** Bumped whenever the row changes (memoized rows re-render on it). */
  rev: number;
}

export type Row =
  | (Base & { kind: "user"; text: string })
  | (Base & { kind: "assistant"; messageID: string; text: string; streaming: boolean })
  | (Base & { kind: "thinking"; messageID: string; text: string; streaming: boolean })
  | (Base & {
      kind: "tool";
      id: string;
      name: string;
      input: JsonValue;
      inputStream: string;
      complete: boolean;
      result: { content: JsonValue; isError: boolean } | null;
      parent: string | null;
    })
  | (Base & { kind: "approval"; request: ApprovalRequested; resolved: ApprovalResolved | null })
  | (Base & { kind: "error"; code: string; message: string })
  | (Base & { kind: "notice"; tone: "info" | "warn" | "ok"; text: string; detail?: string })
  | (Base & { kind: "stderr"; lines: string[] })
  | (Base & { kind: "check"; name: string; argv: string[]; output: string; finished: CheckFinished | null })
  | (Base & { kind: "report"; report: Report })
  | (Base & { kind: "raw"; nativeType: string | null; native: unknown })
  | (Base & { kind: "unknown"; type: string; event: unknown });

export interface SessionFacts {
  status: SessionStatus | null;
  model: string | null;
  permissionMode: string | null;
  cwd: string | null;
  /** The agent's own conversation id (the last `sessionStarted`). */
  backendSessionID?: string;
  /** Open approvals, oldest first. */
  pending: ApprovalRequested[];
  /** Who answered recent approvals (requestID → resolution), for "answered by". */
  resolved: Map<string, ApprovalResolved>;
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens: number };
  costUSD: number;
  turns: number;
  lastSeq: number;
  /** The last pull request opened for the session. */
  pullRequest: PullRequestOpened | null;
}

/** Most characters of a check's output a transcript row keeps. */
export const CHECK_OUTPUT_CHARS = 200_000;

export class Transcript {
  readonly rows: Row[] = [];
  readonly facts: SessionFacts = {
    status: null,
    model: null,
    permissionMode: null,
    cwd: null,
    pending: [],
    resolved: new Map(),
    usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 },
    costUSD: 0,
    turns: 0,
    lastSeq: 0,
    pullRequest: null,
  };
  /** Bumped on every fold, so views know to re-render. */
  version = 0;
  private openText = new Map<string, Row & { kind: "assistant" | "thinking" }>();
  private tools = new Map<string, Row & { kind: "tool" }>();
  private approvals = new Map<string, Row & { kind: "approval" }>();
  /** The running (or last) run of each check, by name. */
  private checks = new Map<string, Row & { kind: "check" }>();

  /** `raw` rows (hidden by default in the view). */
  rawCount = 0;
  /** Events folded so far (equals `facts.lastSeq` when none was missed). */
  eventsFolded = 0;

  fold(events: Event[]): void {
    for (const e of events) {
      if (e.seq <= this.facts.lastSeq) continue;
      this.facts.lastSeq = e.seq;
      this.eventsFolded++;
      this.apply(e);
    }
    this.version++;
  }

  private push<R extends Row>(row: R): R {
    this.rows.push(row);
    return row;
  }

  private text(e: Event, kind: "assistant" | "thinking", messageID: string, text: string, partial: boolean) {
    const key = `${kind}:${messageID}`;
    const open = this.openText.get(key);
    if (open) {
      open.text = partial ? open.text + text : text;
      open.streaming = partial;
      open.rev++;
      if (!partial) this.openText.delete(key);
      return;
    }
    const row = this.push({ kind, seq: e.seq, rev: 0, messageID, text, streaming: partial });
    if (partial) this.openText.set(key, row);
  }

  private tool(e: Event, id: string): Row & { kind: "tool" } {
    let row = this.tools.get(id);
    if (!row) {
      row = this.push({
        kind: "tool",
        seq: e.seq,
        rev: 0,
        id,
        name: "tool",
        input: null,
        inputStream: "",
        complete: false,
        result: null,
        parent: null,
      });
      this.tools.set(id, row);
    }
    row.rev++;
    return row;
  }

  private apply(e: Event): void {
    const k = e.kind;
    const f = this.facts;
    switch (k.type) {
      case "userText":
        this.push({ kind: "user", seq: e.seq, rev: 0, text: k.text });
        return;
      case "assistantText":
        this.text(e, "assistant", k.messageID, k.text, k.isPartial);
        return;
      case "thinking":
        this.text(e, "thinking", k.messageID, k.text, k.isPartial);
        return;
      case "toolCallStarted":
      case "toolCallCompleted": {
        const row = this.tool(e, k.toolCallID);
        row.name = k.name;
        if (k.type === "toolCallCompleted" || (k.input && JSON.stringify(k.input) !== "{}")) row.input = k.input;
        if (k.type === "toolCallCompleted") row.complete = true;
        row.parent = k.parentToolCallID ?? null;
        return;
      }
      case "toolInputDelta": {
        const row = this.tool(e, k.toolCallID);
        row.inputStream += k.partialJson;
        return;
      }
      case "toolResult": {
        const row = this.tool(e, k.toolCallID);
        row.result = { content: k.content, isError: k.isError };
        row.complete = true;
        return;
      }
      case "usage":
        f.usage.inputTokens += k.inputTokens;
        f.usage.outputTokens += k.outputTokens;
        f.usage.cachedInputTokens += k.cachedInputTokens;
        if (k.costUSD != null) f.costUSD += k.costUSD;
        return;
      case "turnCompleted": {
        f.turns++;
        const secs = k.durationMs != null ? ` in ${(k.durationMs / 1000).toFixed(1)} s` : "";
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: k.isError ? "warn" : "ok",
          text: k.isError ? `Turn failed${secs}` : `Turn completed${secs}`,
          detail: k.isError ? (k.result ?? k.terminalReason ?? undefined) : undefined,
        });
        this.openText.clear();
        return;
      }
      case "runFinished":
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: k.outcome === "completed" || k.outcome === "stopped" ? "info" : "warn",
          text: `Agent exited: ${k.outcome}${k.exitCode != null ? ` (exit ${k.exitCode})` : ""}`,
          detail: k.message ?? undefined,
        });
        this.voidPending();
        return;
      case "rateLimit":
        if (k.status !== "allowed")
          this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "warn", text: `Rate limit: ${k.status}` });
        return;
      case "apiRetry":
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: "warn",
          text: `API retry ${k.attempt}/${k.maxRetries} in ${Math.round(k.retryDelayMs / 100) / 10} s (${k.error}${k.httpStatus ? ` ${k.httpStatus}` : ""})`,
        });
        return;
      case "approvalRequested": {
        const row = this.push({ kind: "approval", seq: e.seq, rev: 0, request: k, resolved: null });
        this.approvals.set(k.requestID, row);
        f.pending = [...f.pending.filter((p) => p.requestID !== k.requestID), k];
        return;
      }
      case "approvalResolved": {
        const row = this.approvals.get(k.requestID);
        if (row) {
          row.resolved = k;
          row.rev++;
        }
        f.resolved.set(k.requestID, k);
        f.pending = f.pending.filter((p) => p.requestID !== k.requestID);
        return;
      }
      case "permissionDenied":
        this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "warn", text: `${k.toolName} denied by the agent`, detail: k.message });
        return;
      case "confinement":
        this.push(
          k.confined
            ? { kind: "notice", seq: e.seq, rev: 0, tone: "info", text: "Agent confined", detail: k.summary }
            : { kind: "notice", seq: e.seq, rev: 0, tone: "warn", text: "Agent UNCONFINED", detail: k.summary },
        );
        return;
      case "egressRefused":
        this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "warn", text: `Network refused: ${k.method} ${k.host}:${k.port}`, detail: k.reason });
        return;
      case "statusChanged":
        f.status = k.status;
        return;
      case "settingsChanged":
        if (k.model) f.model = k.model;
        if (k.permissionMode) f.permissionMode = k.permissionMode;
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: "info",
          text: [k.model && `Model → ${k.model}`, k.permissionMode && `Permission mode → ${k.permissionMode}`].filter(Boolean).join(", "),
        });
        return;
      case "interruptRequested":
        this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "info", text: `Interrupt requested by ${k.by}` });
        return;
      case "error":
        this.push({ kind: "error", seq: e.seq, rev: 0, code: k.code, message: k.message });
        return;
      case "stderr": {
        const last = this.rows[this.rows.length - 1];
        if (last && last.kind === "stderr") {
          last.lines.push(k.text);
          last.rev++;
        } else this.push({ kind: "stderr", seq: e.seq, rev: 0, lines: [k.text] });
        return;
      }
      case "sessionStarted":
        f.backendSessionID = k.backendSessionID;
        f.model = k.model || f.model;
        f.permissionMode = k.permissionMode ?? f.permissionMode;
        f.cwd = k.cwd;
        return;
      case "sessionCreated":
        f.model = k.model ?? f.model;
        f.permissionMode = k.permissionMode ?? f.permissionMode;
        f.cwd = k.cwd;
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: "info",
          text: k.worktree ? `Session created on ${k.worktree.branch} (from ${k.worktree.baseRef})` : `Session created in ${k.cwd}`,
        });
        return;
      case "sessionUpdated":
        // A mode switch and a note (an adoption, a handoff, what a terminal added) are part of
        // the story; renames and archiving are not.
        if (k.mode)
          this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "ok", text: `Mode: ${k.mode} (by ${k.by}${k.note ? `; ${k.note}` : ""})` });
        else if (k.note) this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "info", text: k.note });
        return;
      case "worktreeFinished":
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: k.forcedReason ? "warn" : "ok",
          text: `Worktree ${k.action}${k.baseBranch ? ` into ${k.baseBranch}` : ""}${k.newTip ? ` (${k.newTip.slice(0, 8)})` : ""}`,
          detail: k.forcedReason ? `Forced past failing checks: ${k.forcedReason}` : undefined,
        });
        return;
      case "worktreeReclaimed":
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: "info",
          text: `Worktree reclaimed to free ${humanBytes(k.bytes)} (${k.reason}); a follow-up brings it back`,
          detail: k.keptUncommitted ? "Its uncommitted work is kept and comes back with it." : undefined,
        });
        return;
      case "worktreeRestored":
        this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "info", text: `Worktree restored${k.restoredUncommitted ? " with its uncommitted work" : ""}` });
        return;
      case "checkStarted": {
        const row = this.push({ kind: "check", seq: e.seq, rev: 0, name: k.name, argv: k.argv, output: "", finished: null });
        this.checks.set(k.name, row);
        return;
      }
      case "checkOutput": {
        const row = this.checks.get(k.name);
        // The view keeps the first CHECK_OUTPUT_CHARS; the log on the host has all of it.
        if (row && row.output.length < CHECK_OUTPUT_CHARS) {
          row.output += k.text;
          row.rev++;
        }
        return;
      }
      case "checkFinished": {
        const row = this.checks.get(k.name);
        if (row && !row.finished) {
          row.finished = k;
          row.rev++;
        } else this.push({ kind: "check", seq: e.seq, rev: 0, name: k.name, argv: [], output: "", finished: k });
        return;
      }
      case "report":
        this.push({ kind: "report", seq: e.seq, rev: 0, report: k });
        return;
      case "pullRequestOpened":
        this.facts.pullRequest = k;
        this.push({
          kind: "notice",
          seq: e.seq,
          rev: 0,
          tone: k.forcedReason ? "warn" : "ok",
          text: `Pull request #${k.number} (${k.state}) opened: ${k.url}`,
          detail: k.forcedReason ? `Forced past failing checks: ${k.forcedReason}` : undefined,
        });
        return;
      case "reviewSent": {
        const cited = k.comments.map((c) => (c.endLine && c.endLine !== c.line ? `${c.path}:${c.line}-${c.endLine}` : `${c.path}:${c.line}`));
        this.push({ kind: "notice", seq: e.seq, rev: 0, tone: "info", text: `Review sent by ${k.by}: ${k.comments.length} comment(s)`, detail: cited.join(", ") });
        return;
      }
      case "raw":
        this.rawCount++;
        this.push({ kind: "raw", seq: e.seq, rev: 0, nativeType: e.nativeType ?? null, native: k.native });
        return;
      default: {
        // A kind newer than this app: shown as a generic collapsed row, never a crash.
        const unknown = k as { type?: unknown };
        this.push({ kind: "unknown", seq: e.seq, rev: 0, type: String(unknown.type ?? "?"), event: e });
      }
    }
  }

  /** The agent is gone: its open approvals can no longer be answered. */
  private voidPending(): void {
    this.facts.pending = [];
  }
}

/** A tool result or input as display text. */
export function displayText(value: JsonValue | unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((b) => b && typeof b === "object" && "text" in (b as object))) {
    return value.map((b) => String((b as { text: unknown }).text)).join("\n");
  }
  return JSON.stringify(value, null, 2) ?? "";
}

/** What the host's network question (`toolName` `egress`) asks, if `request` is one. */
export function egressAsked(request: ApprovalRequested): EgressAsked | null {
  if (request.toolName !== "egress") return null;
  const input = request.input as Partial<EgressAsked> | null;
  if (!input || typeof input.host !== "string" || typeof input.port !== "number") return null;
  return { host: input.host, port: input.port, method: String(input.method ?? "") };
}

/** The one-line summary of a tool call: its most telling input field. */
export function toolSummary(input: JsonValue, cwd?: string | null): string {
  if (!input || typeof input !== "object" || Array.isArray(input)) return "";
  const o = input as Record<string, JsonValue>;
  // Codex file changes: { changes: [{ path, kind: { type }, diff }] }.
  const changed = patchChanges(input).map((c) => c.path);
  const pick = changed.length > 0 ? changed.join(", ") : (o.command ?? o.file_path ?? o.path ?? o.pattern ?? o.url ?? o.query ?? o.description);
  const text = typeof pick === "string" ? pick : Array.isArray(pick) ? pick.join(" ") : "";
  return cwd ? relative(text, cwd) : text;
}

/** `text` with the session's working directory prefix removed from paths. */
export function relative(text: string, cwd: string): string {
  const base = cwd.endsWith("/") ? cwd : `${cwd}/`;
  return text.split(base).join("");
}

export type { Usage };

/** The files of a patch-shaped tool input (Codex's `apply_patch`), with their diffs. */
export function patchChanges(input: JsonValue): Array<{ path: string; kind: string; diff: string }> {
  if (!input || typeof input !== "object" || Array.isArray(input)) return [];
  const changes = (input as Record<string, JsonValue>).changes;
  if (!Array.isArray(changes)) return [];
  return changes.flatMap((c) => {
    if (!c || typeof c !== "object" || Array.isArray(c) || typeof c.path !== "string") return [];
    const kind = c.kind && typeof c.kind === "object" && !Array.isArray(c.kind) && typeof c.kind.type === "string" ? c.kind.type : "update";
    return [{ path: c.path, kind, diff: typeof c.diff === "string" ? c.diff : "" }];
  });
}
