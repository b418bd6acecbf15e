// Nucleic's relay: a Cloudflare Worker with one Durable Object ("room") per host. It pairs
// WebSockets and forwards opaque frames — Noise messages it cannot read — between one host and
// its devices. No accounts, no plaintext, nothing stored. The host proves it owns the room by
// signing a fresh challenge with the key the room's id is the hash of; devices can only talk to
// the host, each as its own stream. Everything outside /v1/ is the cockpit's app shell (app.ts),
// which never touches a room.
import { DurableObject } from "cloudflare:workers";

import { serveApp } from "./app";
import { Bucket, type Limits, limitsFrom } from "./limits";
import {
  AUTH,
  CHALLENGE,
  CLOSE,
  DATA,
  HEADER_LEN,
  NONCE_LEN,
  OPEN,
  READY,
  ROOM_PATTERN,
  parseHostFrame,
  streamFrame,
  verifyHostAuth,
} from "./wire";

export interface Env {
  ROOMS: DurableObjectNamespace<Room>;
  /** JSON overriding some of src/limits.ts's defaults. */
  RELAY_LIMITS?: string;
  /** "1" keeps every forwarded frame in memory, readable at /v1/rooms/<room>/debug/frames.
   * For tests only: never set it in a deployment. */
  RELAY_DEBUG_RECORD?: string;
  /** The built cockpit (web/dist), `[assets]` in wrangler.toml; without it the relay serves no app. */
  ASSETS?: Fetcher;
  /** More connect-src sources for the app (space-separated ws(s):// origins: a LAN or tunnel
   *  address of a host that pairing links offer). */
  APP_CONNECT_SRC?: string;
}

/** WebSocket close codes the relay uses. */
export const CLOSE_CODES = {
  unsupported: 1003,
  tooBig: 1009,
  malformed: 4400,
  unauthorized: 4401,
  authTimeout: 4408,
  replaced: 4409,
  rateLimited: 4429,
  closedByHost: 4000,
  hostGone: 4503,
} as const;

const ROUTE = /^\/v1\/rooms\/([^/]+)\/(host|device|debug\/frames)$/;

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok\n");
    // The app and the rooms never share a path: /v1/ is rooms only, the rest the app only.
    if (!url.pathname.startsWith("/v1/")) return serveApp(request, url, env.ASSETS, env.APP_CONNECT_SRC);
    const m = ROUTE.exec(url.pathname);
    if (!m) return new Response("not found\n", { status: 404 });
    const [, room, what] = m;
    if (!ROOM_PATTERN.test(room)) return new Response("a room id is 64 lowercase hex digits\n", { status: 400 });
    if (what === "debug/frames") {
      if (env.RELAY_DEBUG_RECORD !== "1") return new Response("not found\n", { status: 404 });
    } else if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade\n", { status: 426 });
    }
    return env.ROOMS.get(env.ROOMS.idFromName(room)).fetch(request);
  },
} satisfies ExportedHandler<Env>;

type Attachment =
  | { role: "pending"; room: string; nonce: number[]; since: number }
  | { role: "host" }
  | { role: "device"; stream: number };

interface Recorded {
  direction: "to-host" | "to-device";
  stream: number;
  base64: string;
}

function bytesOf(message: ArrayBuffer | string): Uint8Array | null {
  return typeof message === "string" ? null : new Uint8Array(message);
}

function safeClose(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closing
  }
}

function safeSend(ws: WebSocket, data: Uint8Array): void {
  try {
    ws.send(data);
  } catch {
    // the peer is gone; its close handler cleans up
  }
}

/** One host's room. Uses the WebSocket hibernation API, so an idle room costs no memory. */
export class Room extends DurableObject<Env> {
  private readonly limits: Limits;
  private readonly connects: Bucket;
  private readonly roomFrames: Bucket;
  private readonly roomBytes: Bucket;
  private readonly deviceBuckets = new Map<number, { frames: Bucket; bytes: Bucket }>();
  private readonly record: Recorded[] | null;
  private room = "";

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.limits = limitsFrom(env.RELAY_LIMITS);
    this.connects = new Bucket(this.limits.connectBurst, this.limits.connectPerSecond);
    this.roomFrames = new Bucket(this.limits.roomFrameBurst, this.limits.roomFramesPerSecond);
    this.roomBytes = new Bucket(this.limits.roomByteBurst, this.limits.roomBytesPerSecond);
    this.record = env.RELAY_DEBUG_RECORD === "1" ? [] : null;
  }

  async fetch(request: Request): Promise<Response> {
    const m = ROUTE.exec(new URL(request.url).pathname);
    if (!m) return new Response("not found\n", { status: 404 });
    this.room = m[1];
    if (m[2] === "debug/frames") return Response.json(this.record ?? []);
    if (!this.connects.take()) return new Response("too many connections to this room\n", { status: 429 });
    return m[2] === "host" ? this.acceptHost() : this.acceptDevice();
  }

  private open(tag: string): WebSocket[] {
    return this.ctx.getWebSockets(tag).filter((ws) => ws.readyState === WebSocket.OPEN);
  }

  private acceptHost(): Response {
    if (this.pendingHosts().length >= this.limits.maxPendingHosts) {
      return new Response("too many unauthenticated host connections\n", { status: 429 });
    }
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, ["host"]);
    const nonce = crypto.getRandomValues(new Uint8Array(NONCE_LEN));
    // The room travels with the socket: after hibernation the object is constructed anew.
    server.serializeAttachment({ role: "pending", room: this.room, nonce: Array.from(nonce), since: Date.now() } satisfies Attachment);
    const challenge = new Uint8Array(1 + NONCE_LEN);
    challenge[0] = CHALLENGE;
    challenge.set(nonce, 1);
    server.send(challenge);
    // Past its time, a pending connection no longer counts against the cap (squatters cannot lock
    // the real host out), is refused if it answers late, and is closed by an alarm (which also
    // fires after the object hibernated; under miniflare 4.20260424 a close from an alarm does
    // not reach a client that never sent a frame, so the tests check the first two only).
    void this.ctx.storage.setAlarm(Date.now() + this.limits.authTimeoutMs + 50);
    return new Response(null, { status: 101, webSocket: client });
  }

  async alarm(): Promise<void> {
    this.expirePending();
  }

  private expirePending(): void {
    for (const ws of this.expiredHosts()) safeClose(ws, CLOSE_CODES.authTimeout, "no host authentication in time");
  }

  private acceptDevice(): Response {
    const host = this.hostSocket();
    if (!host) return new Response("the host is not connected\n", { status: 503 });
    if (this.open("device").length >= this.limits.maxDevices) {
      return new Response("too many devices in this room\n", { status: 429 });
    }
    let stream: number;
    do {
      stream = crypto.getRandomValues(new Uint32Array(1))[0];
    } while (this.ctx.getWebSockets(`d:${stream}`).length > 0);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, ["device", `d:${stream}`]);
    server.serializeAttachment({ role: "device", stream } satisfies Attachment);
    safeSend(host, streamFrame(OPEN, stream));
    return new Response(null, { status: 101, webSocket: client });
  }

  async webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): Promise<void> {
    const a = ws.deserializeAttachment() as Attachment;
    const bytes = bytesOf(message);
    if (!bytes) return safeClose(ws, CLOSE_CODES.unsupported, "binary frames only");
    switch (a.role) {
      case "pending":
        return this.authenticate(ws, a, bytes);
      case "host":
        return this.fromHost(ws, bytes);
      case "device":
        return this.fromDevice(ws, a.stream, bytes);
    }
  }

  private async authenticate(ws: WebSocket, a: { room: string; nonce: number[]; since: number }, bytes: Uint8Array): Promise<void> {
    if (Date.now() - a.since > this.limits.authTimeoutMs) {
      return safeClose(ws, CLOSE_CODES.authTimeout, "no host authentication in time");
    }
    const frame = bytes[0] === AUTH ? parseHostFrame(bytes) : null;
    if (!frame || frame.type !== "auth") return safeClose(ws, CLOSE_CODES.unauthorized, "expected a signed challenge");
    // Spend the challenge first: one attempt per connection.
    ws.serializeAttachment({ role: "pending", room: a.room, nonce: [], since: 0 } satisfies Attachment);
    const ok = await verifyHostAuth(a.room, Uint8Array.from(a.nonce), bytes);
    if (!ok) return safeClose(ws, CLOSE_CODES.unauthorized, "not this room's host");
    // A host that proves the key replaces an older connection of the same host (a half-open
    // socket after a network change); its devices must reconnect and handshake again.
    for (const old of this.open("host").filter((h) => h !== ws && this.roleOf(h) === "host")) safeClose(old, CLOSE_CODES.replaced, "replaced by a new host connection");
    for (const d of this.open("device")) safeClose(d, CLOSE_CODES.hostGone, "the host reconnected");
    // Tags are fixed at accept time: a host connection's attachment says whether it proved the key.
    ws.serializeAttachment({ role: "host" } satisfies Attachment);
    safeSend(ws, Uint8Array.of(READY));
  }

  private fromHost(ws: WebSocket, bytes: Uint8Array): void {
    if (bytes.length > this.limits.maxPayload + HEADER_LEN) return safeClose(ws, CLOSE_CODES.tooBig, "frame too big");
    if (!this.roomFrames.take() || !this.roomBytes.take(bytes.length)) {
      return safeClose(ws, CLOSE_CODES.rateLimited, "room rate limit");
    }
    const frame = parseHostFrame(bytes);
    if (!frame || frame.type === "auth") return safeClose(ws, CLOSE_CODES.malformed, "malformed frame");
    const device = this.ctx.getWebSockets(`d:${frame.stream}`).find((d) => d.readyState === WebSocket.OPEN);
    if (!device) {
      // The device left meanwhile: tell the host (unless it was closing it anyway).
      if (frame.type === "data") safeSend(ws, streamFrame(CLOSE, frame.stream));
      return;
    }
    if (frame.type === "close") return safeClose(device, CLOSE_CODES.closedByHost, "closed by the host");
    this.note("to-device", frame.stream, frame.payload);
    safeSend(device, frame.payload);
  }

  private fromDevice(ws: WebSocket, stream: number, bytes: Uint8Array): void {
    if (bytes.length > this.limits.maxPayload) return safeClose(ws, CLOSE_CODES.tooBig, "frame too big");
    let b = this.deviceBuckets.get(stream);
    if (!b) {
      b = {
        frames: new Bucket(this.limits.deviceFrameBurst, this.limits.deviceFramesPerSecond),
        bytes: new Bucket(this.limits.deviceByteBurst, this.limits.deviceBytesPerSecond),
      };
      this.deviceBuckets.set(stream, b);
    }
    if (!b.frames.take() || !b.bytes.take(bytes.length) || !this.roomFrames.take() || !this.roomBytes.take(bytes.length)) {
      return safeClose(ws, CLOSE_CODES.rateLimited, "device rate limit");
    }
    const host = this.hostSocket();
    if (!host) return safeClose(ws, CLOSE_CODES.hostGone, "the host is not connected");
    this.note("to-host", stream, bytes);
    safeSend(host, streamFrame(DATA, stream, bytes));
  }

  private roleOf(ws: WebSocket): Attachment["role"] {
    return (ws.deserializeAttachment() as Attachment).role;
  }

  /** The authenticated host's connection, if any. */
  private hostSocket(): WebSocket | undefined {
    return this.open("host").find((ws) => this.roleOf(ws) === "host");
  }

  /** Host connections still inside their time to authenticate (the cap counts only these). */
  private pendingHosts(): WebSocket[] {
    const now = Date.now();
    return this.open("host").filter((ws) => {
      const a = ws.deserializeAttachment() as Attachment;
      return a.role === "pending" && now - a.since <= this.limits.authTimeoutMs;
    });
  }

  private expiredHosts(): WebSocket[] {
    const now = Date.now();
    return this.open("host").filter((ws) => {
      const a = ws.deserializeAttachment() as Attachment;
      return a.role === "pending" && now - a.since > this.limits.authTimeoutMs;
    });
  }

  private note(direction: Recorded["direction"], stream: number, payload: Uint8Array): void {
    if (!this.record) return;
    if (this.record.length >= 100_000) this.record.shift();
    let binary = "";
    for (let i = 0; i < payload.length; i += 8192) binary += String.fromCharCode(...payload.subarray(i, i + 8192));
    this.record.push({ direction, stream, base64: btoa(binary) });
  }

  async webSocketClose(ws: WebSocket): Promise<void> {
    this.gone(ws);
    safeClose(ws, 1000, "closed");
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    this.gone(ws);
  }

  private gone(ws: WebSocket): void {
    const a = ws.deserializeAttachment() as Attachment;
    if (a.role === "device") {
      this.deviceBuckets.delete(a.stream);
      const host = this.hostSocket();
      if (host) safeSend(host, streamFrame(CLOSE, a.stream));
    } else if (a.role === "host" && !this.hostSocket()) {
      for (const d of this.open("device")) safeClose(d, CLOSE_CODES.hostGone, "the host left");
    }
  }
}
