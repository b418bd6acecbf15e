/** The link to the host: one WebSocket speaking the sync protocol, with replies matched by
 *  messageID, reconnects with backoff, and per-session seq cursors so a reconnect catches up
 *  with no gap and no duplicate. */
import type {
  BackendInfo,
  ClientMessage,
  DeviceProof,
  Event,
  HostMessage,
  SessionSummary,
} from "./protocol.gen";
import { FEATURE_EVENT_BATCHES, PROTOCOL_VERSION } from "./protocol.gen";

/** How long a connection may take from opening the socket to `welcome`. */
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** The host's close code for a connection without a valid credential, or revoked while open. */
const CLOSE_UNAUTHORIZED = 4401;

/** Proves this browser's device for the next `hello`; throws `{ reason: "signedOut" | … }`
 *  when there is no device to prove. */
export type Prover = () => Promise<DeviceProof>;

export type LinkState = "connecting" | "online" | "offline" | "signedOut";

/** Opens the carrier of one connection instead of a WebSocket to `url`: the Noise channel
 *  through the relay (web/src/remote/socket.ts) has the same shape. */
export type Dial = () => Pick<WebSocket, "send" | "close" | "readyState" | "onopen" | "onmessage" | "onclose">;

/** A request without its messageID (the connection assigns one). */
export type Request = ClientMessage extends infer M
  ? M extends { messageID: string }
    ? Omit<M, "messageID">
    : never
  : never;

/** A reply the host refused (`error` or `unsupported`). */
export class HostError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly resolvedBy?: string | null,
  ) {
    super(message);
  }
}

export interface ConnectionEvents {
  state(state: LinkState): void;
  /** The handshake is done: the host's backends, and its id at its relay if it has one. */
  welcome(backends: BackendInfo[], relayHostID: string | null): void;
  events(sessionID: string, events: Event[]): void;
  sessionChanged(session: SessionSummary): void;
  /** The host refused this app's protocol version in the handshake. */
  protocolMismatch?(message: string): void;
}

interface Pending {
  resolve(reply: HostMessage): void;
  reject(err: Error): void;
}

/** Who this browser is: a stable id and a readable name, kept in localStorage. */
export function clientIdentity(): { id: string; name: string } {
  const get = (k: string) => {
    try {
      return localStorage.getItem(k);
    } catch {
      return null;
    }
  };
  const set = (k: string, v: string) => {
    try {
      localStorage.setItem(k, v);
    } catch {
      /* private mode: identity lasts for this page only */
    }
  };
  let id = get("nucleic.clientID");
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    set("nucleic.clientID", id);
  }
  let name = get("nucleic.clientName");
  if (!name) {
    name = `browser ${id.slice(4, 8)}`;
    set("nucleic.clientName", name);
  }
  return { id, name };
}

export class HostConnection {
  private ws: WebSocket | null = null;
  private pending = new Map<string, Pending>();
  private nextID = 1;
  private retry = 0;
  private closed = false;
  /** sessionID → last seq received (the cursor). */
  private cursors = new Map<string, number>();
  private subscribed = new Set<string>();
  private handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  state: LinkState = "connecting";
  /** Events dropped because they were already received (expected after a reconnect). */
  duplicatesDropped = 0;
  /** Seq holes seen (must stay 0; tests assert it). */
  gaps = 0;

  constructor(
    private readonly url: string,
    private readonly identity: { id: string; name: string },
    private readonly on: ConnectionEvents,
    private readonly prove?: Prover,
    private readonly dial?: Dial,
  ) {}

  start(): void {
    this.closed = false;
    this.open();
  }

  close(): void {
    this.closed = true;
    this.ws?.close();
  }

  /** Sends a request and resolves with its reply (rejects on `error` / `unsupported`). A
   *  caller-chosen `messageID` (the pending queue's) makes a resend idempotent across reloads. */
  request(msg: Request, messageID = `${this.identity.id}-${Date.now().toString(36)}-${this.nextID++}`): Promise<HostMessage> {
    const full = { ...msg, messageID } as ClientMessage;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN || this.state !== "online") {
        reject(new HostError("offline", "Not connected to the host; nothing was sent."));
        return;
      }
      this.pending.set(messageID, { resolve, reject });
      this.ws.send(JSON.stringify(full));
    });
  }

  /** Streams a session's events from the cursor on, now and after every reconnect. */
  subscribe(sessionID: string): void {
    if (this.subscribed.has(sessionID)) return;
    this.subscribed.add(sessionID);
    if (this.state === "online") this.sendSubscribe(sessionID);
  }

  unsubscribe(sessionID: string): void {
    if (!this.subscribed.delete(sessionID)) return;
    if (this.state === "online") void this.request({ type: "unsubscribe", sessionID }).catch(() => {});
  }

  /** The last seq received for a session (0 = none). */
  cursor(sessionID: string): number {
    return this.cursors.get(sessionID) ?? 0;
  }

  private sendSubscribe(sessionID: string): void {
    const fromSeq = this.cursor(sessionID) + 1;
    this.request({ type: "subscribe", sessionID, fromSeq, verbosity: "full" }).catch((e) => {
      if (e instanceof HostError && e.code === "offline") return; // resubscribed on reconnect
      console.warn("subscribe failed", sessionID, e);
    });
  }

  private setState(state: LinkState): void {
    if (this.state === state) return;
    this.state = state;
    this.on.state(state);
  }

  private open(): void {
    this.setState("connecting");
    if (!this.prove) {
      this.connect(undefined);
      return;
    }
    this.prove().then(
      (proof) => {
        if (!this.closed) this.connect(proof);
      },
      (e: unknown) => {
        if (e && typeof e === "object" && "reason" in e) this.signOut();
        else this.scheduleReconnect();
      },
    );
  }

  /** The host no longer accepts this browser (no device, revoked, rotated): stop retrying. */
  private signOut(): void {
    this.closed = true;
    this.setState("signedOut");
    this.ws?.close();
  }

  private connect(device: DeviceProof | undefined): void {
    let ws: WebSocket;
    try {
      ws = (this.dial ? this.dial() : new WebSocket(this.url)) as WebSocket;
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    // A handshake that does not finish (a host half-gone, a stalled connect) is abandoned and
    // retried rather than waited on forever.
    clearTimeout(this.handshakeTimer);
    this.handshakeTimer = setTimeout(() => {
      if (this.ws === ws && this.state !== "online") ws.close();
    }, HANDSHAKE_TIMEOUT_MS);
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          clientID: this.identity.id,
          clientName: this.identity.name,
          protocolVersion: PROTOCOL_VERSION,
          // Catch-ups arrive as batches: a browser pays per WebSocket message.
          features: [FEATURE_EVENT_BATCHES],
          ...(device ? { device } : {}),
        } satisfies ClientMessage),
      );
    };
    ws.onmessage = (m) => this.receive(String(m.data));
    ws.onclose = (e: CloseEvent) => {
      if (this.ws !== ws) return;
      if (e?.code === CLOSE_UNAUTHORIZED) {
        this.ws = null;
        for (const p of this.pending.values()) p.reject(new HostError("unauthorized", "This browser was signed out."));
        this.pending.clear();
        this.signOut();
        return;
      }
      this.ws = null;
      for (const p of this.pending.values()) {
        p.reject(new HostError("offline", "The connection to the host was lost before it answered."));
      }
      this.pending.clear();
      if (this.closed) return;
      this.setState("offline");
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    const delay = Math.min(5000, 250 * 2 ** this.retry) * (0.75 + Math.random() / 2);
    this.retry = Math.min(this.retry + 1, 5);
    setTimeout(() => {
      if (this.closed) return;
      this.open();
    }, delay);
  }

  private receive(text: string): void {
    let msg: HostMessage;
    try {
      msg = JSON.parse(text) as HostMessage;
    } catch {
      console.warn("host sent a non-JSON frame", text.slice(0, 200));
      return;
    }
    switch (msg.type) {
      case "welcome":
        clearTimeout(this.handshakeTimer);
        this.retry = 0;
        this.setState("online");
        this.on.welcome(msg.backends ?? [], msg.relayHostID ?? null);
        for (const id of this.subscribed) this.sendSubscribe(id);
        return;
      case "event":
        this.accept(msg.event.sessionID, [msg.event]);
        return;
      case "events":
        this.accept(msg.sessionID, msg.events);
        return;
      case "sessionChanged":
        this.on.sessionChanged(msg.session);
        return;
      case "error":
      case "unsupported":
      case "ack":
      case "projects":
      case "sessions":
      case "gitFacts":
      case "files":
      case "branches":
      case "devices":
      case "push":
      case "fileContent": {
        const id = msg.messageID;
        const p = id ? this.pending.get(id) : undefined;
        if (!p || !id) {
          if (msg.type === "error" && msg.code === "unauthorized") this.signOut();
          else if (msg.type === "error" && msg.code === "badHandshake" && msg.message.includes("protocol version"))
            this.on.protocolMismatch?.(msg.message);
          else if (msg.type === "error") console.warn("host error", msg.code, msg.message);
          return;
        }
        this.pending.delete(id);
        if (msg.type === "error") p.reject(new HostError(msg.code, msg.message, msg.resolvedBy));
        else if (msg.type === "unsupported")
          p.reject(new HostError("unsupported", `The host does not support "${msg.messageType}".`));
        else p.resolve(msg);
        return;
      }
      default: {
        // Every known type is handled above (a new one fails to compile here); a host newer
        // than this app may still send others.
        const unknown: never = msg;
        console.warn("host sent an unknown message type", (unknown as { type?: unknown }).type);
      }
    }
  }

  /** Keeps only the events past the session's cursor (a reconnect replays some), counts any
   *  seq hole, and hands the rest over at once: folding is cheap; views repaint at most once
   *  per frame (the store coalesces). */
  private accept(sessionID: string, events: Event[]): void {
    const fresh: Event[] = [];
    for (const event of events) {
      const last = this.cursor(event.sessionID);
      if (event.seq <= last) {
        this.duplicatesDropped++;
        continue;
      }
      if (event.seq !== last + 1) {
        // Full verbosity never skips a seq: a hole means lost events. Say so loudly.
        this.gaps++;
        console.error(`seq gap in ${event.sessionID}: ${last} → ${event.seq}`);
      }
      this.cursors.set(event.sessionID, event.seq);
      fresh.push(event);
    }
    if (fresh.length > 0) this.on.events(sessionID, fresh);
  }
}
