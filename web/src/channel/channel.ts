// The device's end of Nucleic's encrypted channel to a host (the host's end is the Rust crate
// `nucleic-channel`): pairing (XXpsk3) and reconnect (IK) handshakes, then a strictly ordered
// transport that frames messages up to a size cap. Every error poisons the object: close the
// connection and make a fresh handshake.
import { CipherState, HandshakeState, MAX_MESSAGE, NoiseError, TAGLEN, type StaticKey } from "./noise";

export { NoiseError } from "./noise";
export const PAIRING_PROTOCOL = "Noise_XXpsk3_25519_ChaChaPoly_SHA256";
export const CONNECT_PROTOCOL = "Noise_IK_25519_ChaChaPoly_SHA256";
/** The device's first frame on a relay stream is one of these and the handshake's message 1
 * (the host's side: nucleic_channel::streams). */
export const MODE_PAIR = 0x01;
export const MODE_CONNECT = 0x02;
/** Largest frame on the wire. */
export const MAX_FRAME = MAX_MESSAGE;
/** Default cap on one reassembled message. */
export const DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024;
const MAX_CHUNK = MAX_FRAME - TAGLEN - 1;
const FINAL = 0;
const MORE = 1;

/** The prologue both sides mix in: the channel's version and the host's id. */
export function prologue(hostId: string): Uint8Array {
  return new TextEncoder().encode(`nucleic-channel/1\n${hostId}`);
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

export type HandshakeKind = "pairing" | "connect";

export class Handshake {
  private poisoned = false;
  private remoteAccepted: boolean;

  private constructor(
    readonly kind: HandshakeKind,
    private readonly state: HandshakeState,
    private readonly expectedRemote: Uint8Array | undefined,
  ) {
    this.remoteAccepted = !(kind === "connect" && !state.initiator);
  }

  /** The device pairing with a host: the host key and secret come from the pairing link. */
  static pairInitiator(local: StaticKey, secret: Uint8Array, hostKey: Uint8Array, prologue: Uint8Array): Handshake {
    return new Handshake("pairing", new HandshakeState({ protocol: PAIRING_PROTOCOL, initiator: true, prologue, s: local, psk: secret }), hostKey);
  }

  static pairResponder(local: StaticKey, secret: Uint8Array, prologue: Uint8Array): Handshake {
    return new Handshake("pairing", new HandshakeState({ protocol: PAIRING_PROTOCOL, initiator: false, prologue, s: local, psk: secret }), undefined);
  }

  /** A paired device reconnecting to the host whose static key it knows. */
  static connectInitiator(local: StaticKey, hostKey: Uint8Array, prologue: Uint8Array): Handshake {
    return new Handshake("connect", new HandshakeState({ protocol: CONNECT_PROTOCOL, initiator: true, prologue, s: local, rs: hostKey }), hostKey);
  }

  /** The same handshakes with a fixed ephemeral key, for the published test vectors only
   * (docs/channel.md, "Test vectors"). Never for a connection: a reused ephemeral key gives up
   * forward secrecy. */
  static forTestVectorsOnly(
    kind: HandshakeKind,
    initiator: boolean,
    local: StaticKey,
    opts: { prologue: Uint8Array; ephemeral: Uint8Array; secret?: Uint8Array; hostKey?: Uint8Array },
  ): Handshake {
    const protocol = kind === "pairing" ? PAIRING_PROTOCOL : CONNECT_PROTOCOL;
    const rs = kind === "connect" && initiator ? opts.hostKey : undefined;
    const state = new HandshakeState({ protocol, initiator, prologue: opts.prologue, s: local, rs, psk: opts.secret, fixedEphemeral: opts.ephemeral });
    return new Handshake(kind, state, initiator ? opts.hostKey : undefined);
  }

  /** The host's role (for tests and a TypeScript host): accept the device before answering. */
  static connectResponder(local: StaticKey, prologue: Uint8Array): Handshake {
    return new Handshake("connect", new HandshakeState({ protocol: CONNECT_PROTOCOL, initiator: false, prologue, s: local }), undefined);
  }

  isMyTurn(): boolean {
    return !this.poisoned && this.state.isMyTurn();
  }

  isFinished(): boolean {
    return !this.poisoned && this.state.isFinished();
  }

  remoteStatic(): Uint8Array | undefined {
    return this.state.rs;
  }

  acceptRemote(): void {
    if (this.poisoned) throw new NoiseError("the handshake failed earlier");
    if (!this.state.rs) throw new NoiseError("no remote static key to accept yet");
    this.remoteAccepted = true;
  }

  writeMessage(payload: Uint8Array = new Uint8Array(0)): Promise<Uint8Array> {
    return this.guard(async () => {
      if (!this.remoteAccepted) throw new NoiseError("the remote's static key was not accepted");
      return this.state.writeMessage(payload);
    });
  }

  readMessage(message: Uint8Array): Promise<Uint8Array> {
    return this.guard(async () => {
      const payload = await this.state.readMessage(message);
      const rs = this.state.rs;
      if (this.expectedRemote && rs && !equal(rs, this.expectedRemote)) {
        throw new NoiseError("the host's static key is not the one in the pairing link");
      }
      return payload;
    });
  }

  intoTransport(maxMessage = DEFAULT_MAX_MESSAGE): Transport {
    if (this.poisoned) throw new NoiseError("the handshake failed earlier");
    const rs = this.state.rs;
    if (!this.state.isFinished() || !rs) throw new NoiseError("the handshake is not finished");
    const [i2r, r2i] = this.state.split();
    this.poisoned = true; // used up
    return this.state.initiator
      ? new Transport(i2r, r2i, rs, this.state.handshakeHash(), maxMessage)
      : new Transport(r2i, i2r, rs, this.state.handshakeHash(), maxMessage);
  }

  private async guard<T>(step: () => Promise<T>): Promise<T> {
    if (this.poisoned) throw new NoiseError("the handshake failed earlier");
    try {
      return await step();
    } catch (e) {
      this.poisoned = true;
      throw e;
    }
  }
}

/** An established channel: frames in order, each a Noise transport message. */
export class Transport {
  private poisoned = false;
  private partial: Uint8Array[] = [];
  private partialLen = 0;

  constructor(
    private readonly send: CipherState,
    private readonly recv: CipherState,
    readonly remoteStatic: Uint8Array,
    readonly handshakeHash: Uint8Array,
    private readonly maxMessage: number,
  ) {}

  /** Seals one message into frames to send in order. */
  seal(message: Uint8Array): Uint8Array[] {
    return this.guard(() => {
      if (message.length > this.maxMessage) throw new NoiseError(`message of more than ${this.maxMessage} bytes refused`);
      const frames: Uint8Array[] = [];
      let at = 0;
      do {
        const chunk = message.subarray(at, at + MAX_CHUNK);
        at += chunk.length;
        const plain = new Uint8Array(chunk.length + 1);
        plain[0] = at < message.length ? MORE : FINAL;
        plain.set(chunk, 1);
        frames.push(this.send.encryptWithAd(new Uint8Array(0), plain));
      } while (at < message.length);
      return frames;
    });
  }

  /** Opens the next frame; returns the message once its last frame arrived, else null. */
  open(frame: Uint8Array): Uint8Array | null {
    return this.guard(() => {
      if (frame.length > MAX_FRAME) throw new NoiseError(`frame of ${frame.length} bytes is over the ${MAX_FRAME}-byte cap`);
      if (frame.length < TAGLEN + 1) throw new NoiseError("malformed frame: shorter than a tag and a flag");
      const plain = this.recv.decryptWithAd(new Uint8Array(0), frame);
      const flag = plain[0];
      const chunk = plain.subarray(1);
      if (this.partialLen + chunk.length > this.maxMessage) throw new NoiseError(`message of more than ${this.maxMessage} bytes refused`);
      this.partial.push(chunk);
      this.partialLen += chunk.length;
      if (flag === MORE) return null;
      if (flag !== FINAL) throw new NoiseError("malformed frame: unknown flag");
      const out = new Uint8Array(this.partialLen);
      let at = 0;
      for (const p of this.partial) {
        out.set(p, at);
        at += p.length;
      }
      this.partial = [];
      this.partialLen = 0;
      return out;
    });
  }

  private guard<T>(step: () => T): T {
    if (this.poisoned) throw new NoiseError("the channel failed earlier and refuses further use");
    try {
      return step();
    } catch (e) {
      this.poisoned = true;
      this.partial = [];
      throw e;
    }
  }
}
