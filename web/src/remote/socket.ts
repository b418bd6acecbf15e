// A WebSocket look-alike that reaches the host through the relay inside a Noise channel: the
// cockpit's HostConnection speaks the unchanged sync protocol over it exactly as over /ws.
// Opening dials `<relay>/v1/rooms/<host id>/device` and makes the handshake — pairing
// (XXpsk3, the link's secret as PSK) or reconnect (IK) — then every text frame is sealed into
// the channel (framing.ts). A replayed, reordered or forged frame poisons the channel: it is
// closed, and the caller reconnects (a fresh handshake) and resumes from its seq cursors.
import { Handshake, MODE_CONNECT, MODE_PAIR, type Transport, prologue } from "../channel/channel";
import type { StaticKey } from "../channel/noise";
import { CLOSE, decode, encodeText } from "./framing";

/** What the host's close code means to the page (same as /ws). */
export const CLOSE_UNAUTHORIZED = 4401;
/** The relay closes a device the host dropped with this code. */
const CLOSED_BY_HOST = 4000;
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** The host pings inside every open channel (every 20 s by default): nothing at all for this long
 * means the connection is dead though it may look open — a phone that slept while a NAT or the
 * relay dropped it, the close never delivered. The channel is then closed so the page
 * reconnects (a fresh handshake) and resumes from its cursors. */
export const SILENCE_MS = 50_000;
/** The close code of a channel given up for silence (the page reconnects). */
export const CLOSE_SILENT = 4408;

/** The parts of a WebSocket this uses (the browser's, or `ws` in node tests). */
export interface RawSocket {
  binaryType: string;
  readyState: number;
  onopen: ((e: unknown) => void) | null;
  onmessage: ((e: { data: unknown }) => void) | null;
  onclose: ((e: { code: number; reason: string }) => void) | null;
  onerror: ((e: unknown) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}
export type RawSocketCtor = new (url: string) => RawSocket;

/** A host as a paired device knows it. */
export interface RemoteHost {
  relay: string;
  hostID: string;
  hostKey: Uint8Array;
  /** Connect directly to the host's LAN listener (`ws://…`) instead of the relay. */
  direct?: string;
}

export type Opening = { mode: "pair"; secret: Uint8Array } | { mode: "connect" };

function bytesOf(data: unknown): Uint8Array | null {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return null;
}

export class ChannelSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 3;
  readyState = ChannelSocket.CONNECTING;
  onopen: ((e: unknown) => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  /** The device's key as the host authenticated it, once open. */
  handshakeHash: Uint8Array | null = null;
  private transport: Transport | null = null;
  private readonly ws: RawSocket;
  private handshake: Handshake;
  private closedWith: { code: number; reason: string } | null = null;
  /** Whether the host sent anything over the channel yet: a pairing handshake finishes on the
   * device's side before the host checked the secret (message 3), so a close before that is a
   * refusal too. */
  private heard = false;
  /** True once the host answered over the open channel (a pairing then surely succeeded);
   * false if it closed before. */
  readonly accepted: Promise<boolean>;
  private settle: (ok: boolean) => void = () => {};
  private timer: ReturnType<typeof setTimeout>;
  private silence: ReturnType<typeof setTimeout> | undefined;
  private readonly silenceMs: number;

  constructor(
    host: RemoteHost,
    key: StaticKey,
    opening: Opening,
    Ctor: RawSocketCtor = WebSocket as unknown as RawSocketCtor,
    options: { silenceMs?: number } = {},
  ) {
    this.silenceMs = options.silenceMs ?? SILENCE_MS;
    this.accepted = new Promise((resolve) => (this.settle = resolve));
    const p = prologue(host.hostID);
    this.handshake =
      opening.mode === "pair" ? Handshake.pairInitiator(key, opening.secret, host.hostKey, p) : Handshake.connectInitiator(key, host.hostKey, p);
    const mode = opening.mode === "pair" ? MODE_PAIR : MODE_CONNECT;
    this.ws = new Ctor(host.direct ? `${host.direct}/v1/channel` : `${host.relay}/v1/rooms/${host.hostID}/device`);
    this.ws.binaryType = "arraybuffer";
    this.timer = setTimeout(() => this.fail(4408, "the host did not finish the handshake in time"), HANDSHAKE_TIMEOUT_MS);
    this.ws.onopen = () => {
      void this.handshake.writeMessage().then(
        (m1) => {
          const first = new Uint8Array(m1.length + 1);
          first[0] = mode;
          first.set(m1, 1);
          this.ws.send(first);
        },
        (e) => this.fail(4400, String(e)),
      );
    };
    let queue = Promise.resolve();
    this.ws.onmessage = (e) => {
      if (this.readyState === ChannelSocket.OPEN) this.heardNow();
      const bytes = bytesOf(e.data);
      // Handshake steps are async (WebCrypto DH): keep frames in order.
      queue = queue.then(() => this.receive(bytes)).catch((err) => this.fail(4400, err instanceof Error ? err.message : String(err)));
    };
    this.ws.onclose = (e) => {
      const refused = e.code === CLOSED_BY_HOST && (this.readyState === ChannelSocket.CONNECTING || !this.heard);
      // The host closing a handshake means it does not accept this device (revoked, never
      // paired, a used or expired link).
      this.finish(refused ? { code: CLOSE_UNAUTHORIZED, reason: "the host refused this device" } : { code: e.code, reason: e.reason });
    };
    this.ws.onerror = () => {};
  }

  private async receive(bytes: Uint8Array | null): Promise<void> {
    if (this.readyState === ChannelSocket.CLOSED) return;
    if (!bytes) throw new Error("the relay sent a text frame");
    if (!this.transport) {
      await this.handshake.readMessage(bytes);
      if (this.handshake.isMyTurn()) this.ws.send(await this.handshake.writeMessage());
      if (!this.handshake.isFinished()) throw new Error("the handshake did not finish");
      this.transport = this.handshake.intoTransport();
      this.handshakeHash = this.transport.handshakeHash;
      clearTimeout(this.timer);
      this.readyState = ChannelSocket.OPEN;
      this.heardNow();
      this.onopen?.({});
      return;
    }
    const message = this.transport.open(bytes);
    this.heard = true;
    this.settle(true);
    if (!message) return;
    const frame = decode(message);
    if (!frame) throw new Error("malformed channel message");
    switch (frame.kind) {
      case "text":
        this.onmessage?.({ data: frame.text });
        return;
      case "ping":
        this.sendRaw(Uint8Array.of(0x03));
        return;
      case "pong":
        return;
      case "close":
        this.closedWith = { code: frame.code, reason: frame.reason };
        this.ws.close(1000, "closed by the host");
        this.finish(this.closedWith);
        return;
    }
  }

  /** Something came from the host: the silence deadline starts again. */
  private heardNow(): void {
    clearTimeout(this.silence);
    this.silence = setTimeout(() => this.fail(CLOSE_SILENT, `nothing from the host for ${Math.round(this.silenceMs / 1000)} s`), this.silenceMs);
  }

  private sendRaw(message: Uint8Array): void {
    if (!this.transport || this.readyState !== ChannelSocket.OPEN) throw new Error("the channel is not open");
    for (const f of this.transport.seal(message)) this.ws.send(f);
  }

  /** Sends one sync-protocol message. */
  send(text: string): void {
    this.sendRaw(encodeText(text));
  }

  close(code = 1000, reason = "closed"): void {
    if (this.readyState === ChannelSocket.OPEN) {
      try {
        const body = new TextEncoder().encode(reason);
        const m = new Uint8Array(body.length + 3);
        m[0] = CLOSE;
        new DataView(m.buffer).setUint16(1, code);
        m.set(body, 3);
        this.sendRaw(m);
      } catch {
        /* poisoned: just close */
      }
    }
    this.ws.close(1000, reason);
    this.finish({ code, reason });
  }

  private fail(code: number, reason: string): void {
    this.ws.close(1000, reason.slice(0, 120));
    this.finish({ code, reason });
  }

  private finish(e: { code: number; reason: string }): void {
    if (this.readyState === ChannelSocket.CLOSED) return;
    clearTimeout(this.timer);
    clearTimeout(this.silence);
    this.readyState = ChannelSocket.CLOSED;
    this.transport = null;
    this.settle(false);
    this.onclose?.(this.closedWith ?? e);
  }
}

