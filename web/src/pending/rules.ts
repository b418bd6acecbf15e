/** The offline queue's conflict rules (ccpocket's seed): whether an action written offline may
 *  still be sent, given the events of its session since the `seq` it was based on. Conservative:
 *  anything that changed what the person was answering is a conflict they decide about. */
import type { Event, NewSession } from "../protocol.gen";

/** What can wait for the link. An approval answer is deliberately absent: never queued. */
export type PendingKind = "input" | "queue" | "start" | "resume" | "rename";

interface Base {
  /** Stable id, sent as the request's messageID: the host answers a repeat without redoing it. */
  id: string;
  kind: PendingKind;
  /** When it was written (ms). */
  createdAt: number;
  /** `queued` waits for the link; `sending` is under way (outcome unknown if the link drops);
   *  `conflict` and `failed` wait for the person. */
  state: "queued" | "sending" | "conflict" | "failed";
  /** Why it is in conflict / failed, worded for the person. */
  reason?: string;
}

/** A follow-up prompt (`input`), one meant to follow a running turn (`queue`), or one that
 *  resumes a session whose agent has ended (`resume`). */
export interface PendingInput extends Base {
  kind: "input" | "queue" | "resume";
  sessionID: string;
  text: string;
  /** The last seq this client had seen of the session when the action was written. */
  baseSeq: number;
  /** The agent conversation the session was on when the action was written (the last
   *  `sessionStarted.backendSessionID` seen): a different one since is a session switch. */
  backendSessionID?: string | null;
}

export interface PendingStart extends Base {
  kind: "start";
  session: NewSession;
}

export interface PendingRename extends Base {
  kind: "rename";
  sessionID: string;
  title: string;
  baseSeq: number;
}

export type PendingAction = PendingInput | PendingStart | PendingRename;

export type Verdict = { send: true } | { send: false; state: "conflict" | "failed"; reason: string };

const SEND: Verdict = { send: true };
const conflict = (reason: string): Verdict => ({ send: false, state: "conflict", reason });
const failed = (reason: string): Verdict => ({ send: false, state: "failed", reason });

/** Why an event since `baseSeq` conflicts with a pending input, or null when it does not.
 *  `input` conflicts on a turn-completing result; `queue` was written to follow the turn, so
 *  it does not. Every event kind is decided here (a new one fails to compile). */
export function inputConflict(event: Event, kind: "input" | "queue" | "resume", ownTexts: ReadonlySet<string>, backendSessionID?: string | null): string | null {
  const k = event.kind;
  switch (k.type) {
    case "userText":
      if (k.isPartial || ownTexts.has(k.text)) return null;
      return "Someone else sent a message to this session meanwhile.";
    case "turnCompleted":
      return kind === "queue" ? null : "The agent finished its turn meanwhile.";
    case "runFinished":
      return `The agent's run ended meanwhile (${k.outcome}).`;
    case "interruptRequested":
      return `The turn was interrupted meanwhile (by ${k.by}).`;
    case "sessionStarted":
      // Claude Code announces itself at every turn: only a different conversation is a switch.
      if (backendSessionID && k.backendSessionID !== backendSessionID)
        return kind === "resume"
          ? "The session was resumed elsewhere meanwhile (another agent conversation)."
          : "The session switched to another agent conversation meanwhile.";
      return null;
    case "worktreeFinished":
      return "The session's work was finished (merged or discarded) meanwhile.";
    case "reviewSent":
      return "Review comments were sent to the agent meanwhile.";
    case "pullRequestOpened":
      return `The session's work was sent as pull request #${k.number} meanwhile.`;
    case "sessionUpdated":
      return k.archived ? "The session was archived meanwhile." : null;
    case "sessionCreated":
      return "The session was recreated meanwhile.";
    // Status, streamed text, assistant messages, tools and approval traffic do not conflict.
    case "assistantText":
    case "thinking":
    case "toolCallStarted":
    case "toolInputDelta":
    case "toolCallCompleted":
    case "toolResult":
    case "usage":
    case "rateLimit":
    case "apiRetry":
    case "approvalRequested":
    case "approvalResolved":
    case "permissionDenied":
    case "confinement":
    case "egressRefused":
    case "statusChanged":
    case "settingsChanged":
    case "error":
    case "stderr":
    case "checkStarted":
    case "checkOutput":
    case "checkFinished":
    case "report":
    // A reclaimed worktree comes back with the next input: the conversation is the same.
    case "worktreeReclaimed":
    case "worktreeRestored":
    case "raw":
      return null;
    default: {
      const unknown: never = k;
      // A kind newer than this app: conservative.
      return `Something this cockpit does not know happened meanwhile (${(unknown as { type?: string }).type}).`;
    }
  }
}

/** What the host looks like now, as far as the rules need it. */
export interface HostView {
  /** Does the session still exist? */
  sessionExists(sessionID: string): boolean;
  /** Events of the session after `baseSeq`, in order. */
  eventsSince(sessionID: string, baseSeq: number): Event[];
  /** Texts this client itself sent to the session (their `userText` is not another client's). */
  ownTexts(sessionID: string): ReadonlySet<string>;
  /** Why a new session with these options could not start now, or null. */
  startProblem(session: NewSession): string | null;
}

/** The seed's rules, one action at a time. */
export function verdict(action: PendingAction, host: HostView): Verdict {
  switch (action.kind) {
    case "start": {
      const problem = host.startProblem(action.session);
      return problem ? failed(problem) : SEND;
    }
    case "rename":
      // Latest wins — unless the session is gone.
      return host.sessionExists(action.sessionID) ? SEND : failed("The session no longer exists.");
    case "input":
    case "queue":
    case "resume": {
      if (!host.sessionExists(action.sessionID)) return failed("The session no longer exists.");
      const own = host.ownTexts(action.sessionID);
      const since = host.eventsSince(action.sessionID, action.baseSeq);
      // A resume is about the conversation: that it changed is the reason to give, even when
      // the other client's message that resumed it came first.
      if (action.kind === "resume") {
        const switched = since.find((e) => e.kind.type === "sessionStarted" && inputConflict(e, "resume", own, action.backendSessionID));
        if (switched) return conflict(inputConflict(switched, "resume", own, action.backendSessionID) ?? "");
      }
      for (const event of since) {
        const why = inputConflict(event, action.kind, own, action.backendSessionID);
        if (why) return conflict(why);
      }
      return SEND;
    }
    default: {
      const unknown: never = action;
      return failed(`Unknown pending action ${(unknown as { kind?: string }).kind}.`);
    }
  }
}

/** Of several renames of one session only the newest is sent (latest wins). */
export function supersededRenames(actions: PendingAction[]): Set<string> {
  const newest = new Map<string, PendingRename>();
  for (const a of actions) {
    if (a.kind !== "rename" || a.state !== "queued") continue;
    const prev = newest.get(a.sessionID);
    if (!prev || prev.createdAt <= a.createdAt) newest.set(a.sessionID, a);
  }
  const out = new Set<string>();
  for (const a of actions) if (a.kind === "rename" && a.state === "queued" && newest.get(a.sessionID)?.id !== a.id) out.add(a.id);
  return out;
}
