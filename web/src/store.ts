/** The cockpit's state: link status, backends, projects, session summaries and the transcripts
 *  of opened sessions, kept live from the host connection. Views read it through hooks. */
import { useEffect, useState } from "preact/hooks";

import { HostConnection, HostError, clientIdentity, type LinkState, type Prover, type Request } from "./connection";
import { forgetDevice } from "./device";
import { notifyTransition } from "./notify";
import { PendingQueue } from "./pending/queue";
import { type PendingStorage, hostStorage } from "./pending/storage";
import { LOCAL_HOST } from "./remote/local";
import type { RemoteDialer } from "./remote/boot";
import type { BackendInfo, Event, HostMessage, ProjectSummary, SessionSummary } from "./protocol.gen";
import { Transcript } from "./transcript";

type Listener = () => void;

export class CockpitStore {
  link: LinkState = "connecting";
  /** When the link last went down (data older than this may be stale). */
  offlineSince: number | null = null;
  /** When the lists on screen were saved, while they come from this device's offline snapshot
   *  (`offline/snapshot.ts`) rather than the host; null once the host answered. */
  restoredAt: number | null = null;
  /** Called with every batch of events folded into an open transcript (the offline snapshot
   *  keeps the recent ones). */
  readonly eventTaps = new Set<(sessionID: string, events: Event[]) => void>();
  /** Set when the host refused this app's protocol version (an older app from the cache). */
  protocolRefused: string | null = null;
  /** After a protocol refusal: looking for a newer app, or none was found. */
  protocolUpdate: "checking" | "none" | null = null;
  /** Called once when the host refuses this app's protocol version; resolves true when a newer
   *  app takes over (the page reloads). */
  onProtocolMismatch: ((message: string) => Promise<boolean>) | null = null;
  /** Sessions whose transcript came from the snapshot: replaced by the host's on reconnect. */
  private restoredTranscripts = new Set<string>();
  backends: BackendInfo[] = [];
  /** The host's id at its relay, as its welcome said (null: it has none, or not said yet). */
  relayHostID: string | null = null;
  projects: ProjectSummary[] = [];
  sessions = new Map<string, SessionSummary>();
  /** Bumped on every change of the lists above. */
  version = 0;
  readonly identity = clientIdentity();
  readonly connection: HostConnection;
  /** Actions written while offline, sent on reconnect (`pending/`). */
  readonly pending: PendingQueue;
  private transcripts = new Map<string, Transcript>();
  private listeners = new Set<Listener>();
  private transcriptListeners = new Map<string, Set<Listener>>();
  private notifyScheduled = false;
  private dirty = new Set<string>();
  private repaintScheduled = false;

  /** `deviceID`: this browser's device (marked in the devices list); `prove` signs each hello. */
  /** `remote`: the host is reached through the relay (the carrier and what revocation forgets). */
  /** `queue`: where offline actions are kept: by default this host's share of the origin's
   *  stored actions, adopting those stored before actions had a host (the page's host); the
   *  fleet's stores of other hosts pass their own host's share. */
  constructor(url: string, prove?: Prover, readonly deviceID?: string, readonly remote?: RemoteDialer, queue?: PendingStorage) {
    this.connection = new HostConnection(url, this.identity, {
      state: (s) => {
        this.link = s;
        // Revoked, rotated out or signed out: the key is useless now; a new link starts over.
        if (s === "signedOut") void (remote ? remote.forget() : forgetDevice());
        if (s === "online") this.offlineSince = null;
        else if (this.offlineSince === null) this.offlineSince = Date.now();
        this.changed();
      },
      welcome: (backends, relayHostID) => {
        this.backends = backends;
        this.relayHostID = relayHostID;
        this.changed();
        // Snapshot transcripts are partial: the host's catch-up replaces them from seq 1.
        for (const id of this.restoredTranscripts) this.transcripts.set(id, new Transcript());
        this.restoredTranscripts.clear();
        void this.refresh();
        void this.pending.flush();
      },
      events: (id, events) => {
        const t = this.transcripts.get(id);
        if (!t) return;
        t.fold(events);
        for (const tap of this.eventTaps) tap(id, events);
        this.repaint(id);
      },
      protocolMismatch: (message) => {
        // Never retried with a protocol the host does not speak: the page updates or says so.
        this.connection.close();
        if (this.protocolRefused === null && this.onProtocolMismatch) {
          this.protocolUpdate = "checking";
          void this.onProtocolMismatch(message).then((updated) => {
            if (!updated) this.protocolUpdate = "none";
            this.changed();
          });
        }
        this.protocolRefused = message;
        this.changed();
      },
      sessionChanged: (s) => {
        const before = this.sessions.get(s.sessionID);
        this.sessions.set(s.sessionID, s);
        notifyTransition(before, s);
        this.changed();
      },
    }, prove, remote ? () => remote.dial() : undefined);
    this.pending = new PendingQueue({
      online: () => this.link === "online",
      send: (msg, id) => this.connection.request(msg, id),
      backends: () => this.backends,
    }, queue ?? hostStorage(this.hostID, true));
    this.pending.subscribe(() => this.changed());
  }

  /** The relay id of this store's host, or `LOCAL_HOST` for the page's own origin. */
  get hostID(): string {
    return this.remote?.host.hostID ?? LOCAL_HOST;
  }

  start(): void {
    void this.pending.load();
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
      this.restoredAt = null;
      this.changed();
    } catch (e) {
      console.warn("refresh failed", e);
    }
  }

  /** Shows a saved snapshot (lists and recent events) until the host answers; marked stale. */
  restore(savedAt: number, projects: ProjectSummary[], sessions: SessionSummary[], events: Record<string, Event[]>): void {
    if (this.link === "online") return;
    this.projects = projects;
    this.sessions = new Map(sessions.map((x) => [x.sessionID, x]));
    for (const [id, evs] of Object.entries(events)) {
      // A view may already hold this session's (still empty) transcript: fill that one.
      const t = this.transcripts.get(id) ?? new Transcript();
      if (t.facts.lastSeq > 0) continue;
      t.fold(evs);
      this.transcripts.set(id, t);
      this.restoredTranscripts.add(id);
      this.repaint(id);
    }
    this.restoredAt = savedAt;
    this.changed();
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
  // A counter of its own, not `t.version`: after a switch to another session (the same view,
  // another transcript) the new transcript's version may equal the old one's, and setting an
  // equal state would skip the repaint (the phone showed "Waiting for events…" for good).
  useEffect(() => store.watch(sessionID, () => setV((v) => v + 1)), [store, sessionID, t]);
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
