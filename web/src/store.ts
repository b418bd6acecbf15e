/** The cockpit's state: link status, backends, projects, session summaries and the transcripts
 *  of opened sessions, kept live from the host connection. Views read it through hooks. */
import { useEffect, useState } from "preact/hooks";

import { HostConnection, HostError, clientIdentity, type LinkState, type Prover, type Request } from "./connection";
import { forgetDevice } from "./device";
import { notifyTransition } from "./notify";
import type { RemoteDialer } from "./remote/boot";
import type { BackendInfo, HostMessage, ProjectSummary, SessionSummary } from "./protocol.gen";
import { Transcript } from "./transcript";

type Listener = () => void;

export class CockpitStore {
  link: LinkState = "connecting";
  /** When the link last went down (data older than this may be stale). */
  offlineSince: number | null = null;
  backends: BackendInfo[] = [];
  projects: ProjectSummary[] = [];
  sessions = new Map<string, SessionSummary>();
  /** Bumped on every change of the lists above. */
  version = 0;
  readonly identity = clientIdentity();
  readonly connection: HostConnection;
  private transcripts = new Map<string, Transcript>();
  private listeners = new Set<Listener>();
  private transcriptListeners = new Map<string, Set<Listener>>();
  private notifyScheduled = false;
  private dirty = new Set<string>();
  private repaintScheduled = false;

  /** `deviceID`: this browser's device (marked in the devices list); `prove` signs each hello. */
  /** `remote`: the host is reached through the relay (the carrier and what revocation forgets). */
  constructor(url: string, prove?: Prover, readonly deviceID?: string, readonly remote?: RemoteDialer) {
    this.connection = new HostConnection(url, this.identity, {
      state: (s) => {
        this.link = s;
        // Revoked, rotated out or signed out: the key is useless now; a new link starts over.
        if (s === "signedOut") void (remote ? remote.forget() : forgetDevice());
        if (s === "online") this.offlineSince = null;
        else if (this.offlineSince === null) this.offlineSince = Date.now();
        this.changed();
      },
      welcome: (backends) => {
        this.backends = backends;
        void this.refresh();
      },
      events: (id, events) => {
        const t = this.transcripts.get(id);
        if (!t) return;
        t.fold(events);
        this.repaint(id);
      },
      sessionChanged: (s) => {
        const before = this.sessions.get(s.sessionID);
        this.sessions.set(s.sessionID, s);
        notifyTransition(before, s);
        this.changed();
      },
    }, prove, remote ? () => remote.dial() : undefined);
  }

  start(): void {
    this.connection.start();
  }

  /** Reloads projects and sessions (after every (re)connect). */
  async refresh(): Promise<void> {
    try {
      const [p, s] = await Promise.all([
        this.connection.request({ type: "listProjects" }),
        this.connection.request({ type: "listSessions", includeArchived: false }),
      ]);
      if (p.type === "projects") this.projects = p.projects;
      if (s.type === "sessions") {
        this.sessions = new Map(s.sessions.map((x) => [x.sessionID, x]));
      }
      this.changed();
    } catch (e) {
      console.warn("refresh failed", e);
    }
  }

  request(msg: Request): Promise<HostMessage> {
    return this.connection.request(msg);
  }

  /** The transcript of a session, subscribing to its events while `hold` is in use. */
  transcript(sessionID: string): Transcript {
    let t = this.transcripts.get(sessionID);
    if (!t) {
      t = new Transcript();
      this.transcripts.set(sessionID, t);
    }
    return t;
  }

  watch(sessionID: string, listener: Listener): () => void {
    let set = this.transcriptListeners.get(sessionID);
    if (!set) this.transcriptListeners.set(sessionID, (set = new Set()));
    set.add(listener);
    this.transcript(sessionID);
    this.connection.subscribe(sessionID);
    return () => {
      set.delete(listener);
      if (set.size === 0) {
        this.transcriptListeners.delete(sessionID);
        this.connection.unsubscribe(sessionID);
      }
    };
  }

  backend(b: string): BackendInfo | undefined {
    return this.backends.find((x) => x.backend === b);
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells a transcript's views it changed — at most once per frame, however many messages
   *  arrived (a catch-up is dozens of batches; rendering each would starve the socket). */
  private repaint(sessionID: string): void {
    this.dirty.add(sessionID);
    if (this.repaintScheduled) return;
    this.repaintScheduled = true;
    const run = () => {
      this.repaintScheduled = false;
      const dirty = [...this.dirty];
      this.dirty.clear();
      for (const id of dirty) for (const l of this.transcriptListeners.get(id) ?? []) l();
    };
    if (typeof requestAnimationFrame === "function" && !document.hidden) requestAnimationFrame(run);
    else setTimeout(run, 16);
  }

  private changed(): void {
    this.version++;
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      for (const l of this.listeners) l();
    });
  }
}

/** Re-renders the caller whenever the store's lists change. */
export function useStore(store: CockpitStore): CockpitStore {
  const [, setV] = useState(store.version);
  useEffect(() => store.subscribe(() => setV(store.version)), [store]);
  return store;
}

/** The transcript of a session, live while the caller is mounted. */
export function useTranscript(store: CockpitStore, sessionID: string): Transcript {
  const t = store.transcript(sessionID);
  const [, setV] = useState(0);
  useEffect(() => store.watch(sessionID, () => setV(t.version)), [store, sessionID, t]);
  return t;
}

/** A readable message for a failed request. */
export function errorText(e: unknown): string {
  if (e instanceof HostError) return e.resolvedBy ? `${e.message} (answered by ${e.resolvedBy})` : e.message;
  return e instanceof Error ? e.message : String(e);
}

/** Sessions sorted so what needs a person comes first, then by last activity. */
export function byUrgency(a: SessionSummary, b: SessionSummary): number {
  return urgency(a) - urgency(b) || b.updatedAt - a.updatedAt;
}

export function urgency(s: SessionSummary): number {
  if (s.pendingApprovals > 0 || s.status === "awaiting-approval") return 0;
  if (s.status === "error") return 1;
  if (s.status === "awaiting-input") return 2;
  if (s.status === "running") return 3;
  if (s.status === "idle") return 4;
  return 5;
}
