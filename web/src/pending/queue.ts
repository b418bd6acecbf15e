/** The pending-action queue: actions written while the host is unreachable, persisted (a reload
 *  keeps them), flushed on reconnect by one tab at a time (Web Locks) after the seed's conflict
 *  rules (`rules.ts`), each sent with its own stable messageID so a resend — after a lost
 *  connection, or by a second tab — is answered by the host without being carried out twice. */
import type { Request } from "../connection";
import type { BackendInfo, Event, HostMessage, NewSession } from "../protocol.gen";
import { type HostView, type PendingAction, type PendingInput, supersededRenames, verdict } from "./rules";
import { resultOf } from "../results";
import { type PendingStorage, defaultStorage } from "./storage";

/** What the queue needs of the link to the host. */
export interface QueueLink {
  online(): boolean;
  /** Sends a request under the given messageID; rejects with `code` on refusal or link loss. */
  send(msg: Request, messageID: string): Promise<HostMessage>;
  backends(): BackendInfo[];
}

/** A request the host refused or that the link lost (`code === "offline"`: outcome unknown). */
interface CodedError {
  code?: string;
  message?: string;
}

const LOCK = "nucleic-pending-flush";
const CHANNEL = "nucleic-pending";

/** Writes the action text for the list ("Send “…”", "Start …"). */
export function describe(a: PendingAction): string {
  const clip = (t: string) => (t.length > 80 ? `${t.slice(0, 79)}…` : t);
  switch (a.kind) {
    case "input":
      return `Send “${clip(a.text)}”`;
    case "queue":
      return `After this turn, send “${clip(a.text)}”`;
    case "resume":
      return `Resume with “${clip(a.text)}”`;
    case "start":
      return `Start a session: “${clip(a.session.prompt)}”`;
    case "rename":
      return `Rename to “${clip(a.title)}”`;
  }
}

export class PendingQueue {
  actions: PendingAction[] = [];
  /** The last flush's problem (e.g. the storage or the host refusing), for the tray. */
  lastError: string | null = null;
  /** Requests this queue sent (tests read it). */
  sent = 0;
  private listeners = new Set<() => void>();
  private ownTexts = new Map<string, Set<string>>();
  private channel: BroadcastChannel | null = null;
  private localChain: Promise<unknown> = Promise.resolve();
  private flushing = false;

  constructor(
    private readonly link: QueueLink,
    private readonly storage: PendingStorage = defaultStorage(),
    private readonly newID: () => string = () => `pending-${crypto.randomUUID()}`,
  ) {
    if (typeof BroadcastChannel !== "undefined") {
      this.channel = new BroadcastChannel(CHANNEL);
      // Another host's queue changing (another tab, or the fleet in this one) is not ours.
      this.channel.onmessage = (e: MessageEvent) => {
        if (e.data === this.scope) void this.load();
      };
    }
  }

  /** Reads the persisted actions (at start, and when another tab changed them). */
  async load(): Promise<void> {
    try {
      this.actions = (await this.storage.all()).sort((a, b) => a.createdAt - b.createdAt);
    } catch (e) {
      this.lastError = `The pending actions could not be read: ${String(e)}`;
    }
    this.emit();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Texts this client sent itself (its own `userText` is not another client's input). */
  noteSent(sessionID: string, text: string): void {
    let set = this.ownTexts.get(sessionID);
    if (!set) this.ownTexts.set(sessionID, (set = new Set()));
    set.add(text);
  }

  /** Queues a follow-up (`input`), one for after the running turn (`queue`) or a resume. */
  addInput(kind: PendingInput["kind"], sessionID: string, text: string, baseSeq: number, backendSessionID?: string | null) {
    return this.add({ id: this.newID(), kind, createdAt: Date.now(), state: "queued", sessionID, text, baseSeq, backendSessionID });
  }

  addStart(session: NewSession) {
    return this.add({ id: this.newID(), kind: "start", createdAt: Date.now(), state: "queued", session });
  }

  addRename(sessionID: string, title: string, baseSeq: number) {
    return this.add({ id: this.newID(), kind: "rename", createdAt: Date.now(), state: "queued", sessionID, title, baseSeq });
  }

  /** Persists first: when the browser refuses (quota), this throws and nothing is queued. */
  private async add(action: PendingAction): Promise<PendingAction> {
    await this.storage.put(action);
    this.actions.push(action);
    this.changed();
    return action;
  }

  /** A conflicted or failed action, sent anyway: re-based on what the person has now seen. */
  async resend(id: string, edit?: { text?: string; title?: string }): Promise<void> {
    const a = this.actions.find((x) => x.id === id);
    if (!a) return;
    const next = { ...a, state: "queued", reason: undefined } as PendingAction & { seenSeq?: number };
    if (next.kind !== "start" && typeof next.seenSeq === "number") next.baseSeq = next.seenSeq;
    if (edit?.text !== undefined && (next.kind === "input" || next.kind === "queue" || next.kind === "resume")) next.text = edit.text;
    if (edit?.title !== undefined && next.kind === "rename") next.title = edit.title;
    if (edit?.text !== undefined && next.kind === "start") next.session = { ...next.session, prompt: edit.text };
    // An edited action is a new request: a new id, so the host does not answer it with the
    // reply of the old one.
    if (edit) next.id = this.newID();
    await this.storage.put(next);
    if (next.id !== id) await this.storage.delete(id);
    this.actions = this.actions.map((x) => (x.id === id ? next : x));
    this.changed();
    await this.flush();
  }

  async drop(id: string): Promise<void> {
    await this.storage.delete(id);
    this.actions = this.actions.filter((x) => x.id !== id);
    this.changed();
  }

  /** Sends what may still be sent, one tab at a time; marks the rest for the person. */
  flush(): Promise<void> {
    const run = () => this.flushLocked();
    const locks = typeof navigator !== "undefined" ? (navigator as Navigator & { locks?: LockManager }).locks : undefined;
    // One lock per host: a host's queue is flushed by one tab at a time, another host's alongside.
    if (locks) return locks.request(`${LOCK}:${this.scope}`, run) as Promise<unknown> as Promise<void>;
    const next = this.localChain.then(run, run);
    this.localChain = next;
    return next;
  }

  private async flushLocked(): Promise<void> {
    if (this.flushing || !this.link.online()) return;
    this.flushing = true;
    try {
      // Another tab may have sent (and deleted) some while this one waited for the lock.
      this.actions = (await this.storage.all()).sort((a, b) => a.createdAt - b.createdAt);
      this.lastError = null;
      const work = this.actions.filter((a) => a.state === "queued" || a.state === "sending");
      if (work.length === 0) return this.emit();
      const view = await this.view(work);
      for (const id of supersededRenames(this.actions)) await this.finish(id);
      for (const a of this.actions.filter((x) => x.state === "queued" || x.state === "sending")) {
        if (!this.link.online()) break;
        // `sending`: a flush that lost the link after sending; the verdict was given, and the
        // host answers the same id without redoing it.
        if (a.state === "queued") {
          const v = verdict(a, view);
          if (!v.send) {
            await this.mark(a, v.state, v.reason, view.lastSeq(a));
            continue;
          }
        }
        await this.mark(a, "sending");
        try {
          await this.link.send(requestOf(a), a.id);
          this.sent++;
          if (a.kind !== "start" && a.kind !== "rename") this.noteSent(a.sessionID, a.text);
          await this.finish(a.id);
        } catch (e) {
          const err = e as CodedError;
          if (err.code === "offline") {
            // Outcome unknown: it stays `sending` and goes again under the same id (the host
            // answers a repeat from its memory), without a new verdict.
            break;
          }
          await this.mark(a, "failed", `The host refused it: ${err.message ?? String(e)}`);
        }
      }
    } catch (e) {
      const err = e as CodedError;
      if (err.code !== "offline") this.lastError = `Sending the pending actions failed: ${err.message ?? String(e)}`;
    } finally {
      this.flushing = false;
      this.changed();
    }
  }

  /** What the host looks like now: sessions, projects, branches, and each session's events
   *  since the oldest base of its actions. */
  private async view(work: PendingAction[]): Promise<HostView & { lastSeq(a: PendingAction): number | undefined }> {
    const sessionsReply = await this.link.send({ type: "listSessions", includeArchived: true }, this.newID());
    const sessions = new Set(sessionsReply.type === "sessions" ? sessionsReply.sessions.map((s) => s.sessionID) : []);
    const events = new Map<string, Event[]>();
    for (const a of work) {
      if (a.kind === "start" || a.state !== "queued" || !sessions.has(a.sessionID) || events.has(a.sessionID)) continue;
      events.set(a.sessionID, await this.eventsOf(a.sessionID));
    }
    const starts = work.filter((a) => a.kind === "start");
    const projects = new Set<string>();
    const branches = new Map<string, Set<string>>();
    if (starts.length > 0) {
      const p = await this.link.send({ type: "listProjects" }, this.newID());
      if (p.type === "projects") for (const x of p.projects) projects.add(x.projectID);
      for (const s of starts) {
        const pid = s.session.projectID;
        if (!s.session.baseRef || !projects.has(pid) || branches.has(pid)) continue;
        try {
          const b = await this.link.send({ type: "listBranches", projectID: pid }, this.newID());
          branches.set(pid, new Set(b.type === "branches" ? [...b.branches, b.defaultBranch] : []));
        } catch {
          branches.set(pid, new Set());
        }
      }
    }
    const backends = this.link.backends();
    return {
      sessionExists: (id) => sessions.has(id),
      eventsSince: (id, base) => (events.get(id) ?? []).filter((e) => e.seq > base),
      ownTexts: (id) => this.ownTexts.get(id) ?? new Set(),
      startProblem: (s) => {
        if (!projects.has(s.projectID)) return "The project no longer exists on the host.";
        if (s.backend) {
          const b = backends.find((x) => x.backend === s.backend);
          if (!b || !b.available) return `The ${s.backend} backend is not available on the host.`;
          if (s.permissionMode && b.permissionModes.length > 0 && !b.permissionModes.includes(s.permissionMode))
            return `The permission mode “${s.permissionMode}” is not one ${s.backend} accepts.`;
        }
        if (s.baseRef && !branches.get(s.projectID)?.has(s.baseRef)) return `The branch “${s.baseRef}” no longer exists.`;
        return null;
      },
      lastSeq: (a) => (a.kind === "start" ? undefined : (events.get(a.sessionID) ?? []).at(-1)?.seq),
    };
  }

  /** The session's events, from its export (one event per line). */
  private async eventsOf(sessionID: string): Promise<Event[]> {
    const reply = await this.link.send({ type: "exportSession", sessionID, format: "jsonl" }, this.newID());
    const text = resultOf(reply, "exported")?.text ?? "";
    const out: Event[] = [];
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as Event);
      } catch {
        /* a torn last line: not an event */
      }
    }
    return out;
  }

  private async mark(a: PendingAction, state: PendingAction["state"], reason?: string, seenSeq?: number): Promise<void> {
    const next = { ...a, state, reason, ...(seenSeq !== undefined ? { seenSeq } : {}) } as PendingAction;
    await this.storage.put(next);
    this.actions = this.actions.map((x) => (x.id === a.id ? next : x));
    this.changed();
  }

  private async finish(id: string): Promise<void> {
    await this.storage.delete(id);
    this.actions = this.actions.filter((x) => x.id !== id);
  }

  /** Which host's actions these are (the lock and the change notices are per host). */
  private get scope(): string {
    return this.storage.hostID ?? "";
  }

  private changed(): void {
    this.channel?.postMessage(this.scope);
    this.emit();
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }
}

/** The request an action becomes. */
export function requestOf(a: PendingAction): Request {
  switch (a.kind) {
    case "input":
    case "queue":
    case "resume":
      return { type: "sendInput", sessionID: a.sessionID, text: a.text };
    case "start":
      return { type: "intent", intent: { kind: "newSession", ...a.session } };
    case "rename":
      return { type: "intent", intent: { kind: "rename", sessionID: a.sessionID, title: a.title } };
  }
}
