// The Noise Protocol Framework (revision 34) for 25519 / ChaChaPoly / SHA256, on audited
// primitives (@noble/*): CipherState, SymmetricState and a HandshakeState that interprets the
// patterns Nucleic uses (XX, IK) and their PSK modifiers (plus NN for the test vectors).
import { x25519 } from "@noble/curves/ed25519.js";
import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hmac } from "@noble/hashes/hmac.js";

export const DHLEN = 32;
export const HASHLEN = 32;
export const TAGLEN = 16;
/** Noise's largest message. */
export const MAX_MESSAGE = 65535;

export class NoiseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoiseError";
  }
}

/** A static key: its public half, and Diffie-Hellman with it. `dh` may be async so that a
 * non-extractable WebCrypto X25519 key can stand in for raw bytes. */
export interface StaticKey {
  readonly publicKey: Uint8Array;
  dh(remotePublic: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

/** A key pair held as bytes (@noble/curves). */
export interface KeyPair {
  privateKey: Uint8Array;
  publicKey: Uint8Array;
}

export function generateKeyPair(): KeyPair {
  const privateKey = x25519.utils.randomSecretKey();
  return { privateKey, publicKey: x25519.getPublicKey(privateKey) };
}

export function keyPairFromPrivate(privateKey: Uint8Array): KeyPair {
  return { privateKey, publicKey: x25519.getPublicKey(privateKey) };
}

export function staticKey(kp: KeyPair): StaticKey {
  return { publicKey: kp.publicKey, dh: (remote) => dh(kp.privateKey, remote) };
}

function dh(privateKey: Uint8Array, remote: Uint8Array): Uint8Array {
  if (remote.length !== DHLEN) throw new NoiseError(`a public key must be ${DHLEN} bytes`);
  try {
    return x25519.getSharedSecret(privateKey, remote);
  } catch {
    throw new NoiseError("invalid (low-order) public key");
  }
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function hkdf(ck: Uint8Array, ikm: Uint8Array, n: 2 | 3): Uint8Array[] {
  const temp = hmac(sha256, ck, ikm);
  const o1 = hmac(sha256, temp, Uint8Array.of(1));
  const o2 = hmac(sha256, temp, concat(o1, Uint8Array.of(2)));
  if (n === 2) return [o1, o2];
  return [o1, o2, hmac(sha256, temp, concat(o2, Uint8Array.of(3)))];
}

function nonceBytes(n: bigint): Uint8Array {
  const out = new Uint8Array(12);
  new DataView(out.buffer).setBigUint64(4, n, true);
  return out;
}

const MAX_NONCE = 2n ** 64n - 1n;

/** A key and a counter nonce; the nonce advances only on success. */
export class CipherState {
  private key: Uint8Array | null = null;
  private n = 0n;

  initializeKey(key: Uint8Array | null): void {
    this.key = key;
    this.n = 0n;
  }

  hasKey(): boolean {
    return this.key !== null;
  }

  nonce(): bigint {
    return this.n;
  }

  encryptWithAd(ad: Uint8Array, plaintext: Uint8Array): Uint8Array {
    if (!this.key) return plaintext;
    if (this.n >= MAX_NONCE) throw new NoiseError("nonce exhausted");
    const out = chacha20poly1305(this.key, nonceBytes(this.n), ad).encrypt(plaintext);
    this.n += 1n;
    return out;
  }

  decryptWithAd(ad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
    if (!this.key) return ciphertext;
    if (this.n >= MAX_NONCE) throw new NoiseError("nonce exhausted");
    let out: Uint8Array;
    try {
      out = chacha20poly1305(this.key, nonceBytes(this.n), ad).decrypt(ciphertext);
    } catch {
      throw new NoiseError("decryption failed (wrong key, replayed, reordered or forged)");
    }
    this.n += 1n;
    return out;
  }
}

class SymmetricState {
  ck: Uint8Array;
  h: Uint8Array;
  cipher = new CipherState();

  constructor(protocolName: string) {
    const name = new TextEncoder().encode(protocolName);
    this.h = name.length <= HASHLEN ? concat(name, new Uint8Array(HASHLEN - name.length)) : sha256(name);
    this.ck = this.h;
  }

  mixKey(ikm: Uint8Array): void {
    const [ck, k] = hkdf(this.ck, ikm, 2);
    this.ck = ck;
    this.cipher.initializeKey(k);
  }

  mixHash(data: Uint8Array): void {
    this.h = sha256(concat(this.h, data));
  }

  mixKeyAndHash(ikm: Uint8Array): void {
    const [ck, th, k] = hkdf(this.ck, ikm, 3);
    this.ck = ck;
    this.mixHash(th);
    this.cipher.initializeKey(k);
  }

  encryptAndHash(plaintext: Uint8Array): Uint8Array {
    const c = this.cipher.encryptWithAd(this.h, plaintext);
    this.mixHash(c);
    return c;
  }

  decryptAndHash(ciphertext: Uint8Array): Uint8Array {
    const p = this.cipher.decryptWithAd(this.h, ciphertext);
    this.mixHash(ciphertext);
    return p;
  }

  split(): [CipherState, CipherState] {
    const [k1, k2] = hkdf(this.ck, new Uint8Array(0), 2);
    const c1 = new CipherState();
    const c2 = new CipherState();
    c1.initializeKey(k1);
    c2.initializeKey(k2);
    return [c1, c2];
  }
}

type Token = "e" | "s" | "ee" | "es" | "se" | "ss" | "psk";
interface Pattern {
  /** Pre-messages: keys the responder's / initiator's peer knows in advance. */
  preInitiator: Token[];
  preResponder: Token[];
  messages: Token[][];
}

const BASE_PATTERNS: Record<string, Pattern> = {
  NN: { preInitiator: [], preResponder: [], messages: [["e"], ["e", "ee"]] },
  XX: { preInitiator: [], preResponder: [], messages: [["e"], ["e", "ee", "s", "es"], ["s", "se"]] },
  IK: { preInitiator: [], preResponder: ["s"], messages: [["e", "es", "s", "ss"], ["e", "ee", "se"]] },
};

/** Parses `Noise_<pattern>_25519_ChaChaPoly_SHA256`. */
export function parseProtocol(name: string): { pattern: Pattern; psk: boolean } {
  const parts = name.split("_");
  if (parts.length !== 5 || parts[0] !== "Noise" || parts[2] !== "25519" || parts[3] !== "ChaChaPoly" || parts[4] !== "SHA256") {
    throw new NoiseError(`unsupported protocol ${name} (only *_25519_ChaChaPoly_SHA256)`);
  }
  const m = /^([A-Z]+)((?:psk\d)(?:\+psk\d)*)?$/.exec(parts[1]);
  const base = m ? BASE_PATTERNS[m[1]] : undefined;
  if (!m || !base) throw new NoiseError(`unsupported handshake pattern ${parts[1]}`);
  const messages = base.messages.map((tokens) => [...tokens]);
  const psks = m[2] ? m[2].split("+").map((p) => Number(p.slice(3))) : [];
  for (const at of psks) {
    if (at === 0) messages[0].unshift("psk");
    else if (at - 1 < messages.length) messages[at - 1].push("psk");
    else throw new NoiseError(`psk${at} is past the pattern's last message`);
  }
  return { pattern: { ...base, messages }, psk: psks.length > 0 };
}

export interface HandshakeOptions {
  protocol: string;
  initiator: boolean;
  prologue: Uint8Array;
  s?: StaticKey;
  /** The remote's static key when known in advance (IK's initiator). */
  rs?: Uint8Array;
  psk?: Uint8Array;
  /** Test vectors only: a fixed ephemeral key. */
  fixedEphemeral?: Uint8Array;
}

/** One Noise handshake, either role: a faithful interpreter of the spec's HandshakeState. */
export class HandshakeState {
  readonly initiator: boolean;
  private readonly ss: SymmetricState;
  private readonly messages: Token[][];
  private readonly isPsk: boolean;
  private readonly s?: StaticKey;
  private e?: KeyPair;
  private readonly fixedEphemeral?: Uint8Array;
  rs?: Uint8Array;
  private re?: Uint8Array;
  private readonly psk?: Uint8Array;
  private index = 0;

  constructor(opts: HandshakeOptions) {
    const { pattern, psk } = parseProtocol(opts.protocol);
    if (psk && opts.psk?.length !== 32) throw new NoiseError("the pre-shared key must be 32 bytes");
    this.initiator = opts.initiator;
    this.ss = new SymmetricState(opts.protocol);
    this.messages = pattern.messages;
    this.isPsk = psk;
    this.s = opts.s;
    this.rs = opts.rs;
    this.psk = opts.psk;
    this.fixedEphemeral = opts.fixedEphemeral;
    this.ss.mixHash(opts.prologue);
    for (const t of pattern.preInitiator) this.mixPre(t, this.initiator ? this.s?.publicKey : this.rs);
    for (const t of pattern.preResponder) this.mixPre(t, this.initiator ? this.rs : this.s?.publicKey);
  }

  private mixPre(token: Token, key: Uint8Array | undefined): void {
    if (token !== "s" || !key) throw new NoiseError("a pre-message key is missing");
    this.ss.mixHash(key);
  }

  isFinished(): boolean {
    return this.index >= this.messages.length;
  }

  isMyTurn(): boolean {
    return !this.isFinished() && (this.index % 2 === 0) === this.initiator;
  }

  handshakeHash(): Uint8Array {
    return this.ss.h;
  }

  async writeMessage(payload: Uint8Array): Promise<Uint8Array> {
    if (!this.isMyTurn()) throw new NoiseError("not this side's turn");
    const out: Uint8Array[] = [];
    for (const t of this.messages[this.index]) {
      switch (t) {
        case "e": {
          this.e = this.fixedEphemeral ? keyPairFromPrivate(this.fixedEphemeral) : generateKeyPair();
          out.push(this.e.publicKey);
          this.ss.mixHash(this.e.publicKey);
          if (this.isPsk) this.ss.mixKey(this.e.publicKey);
          break;
        }
        case "s":
          out.push(this.ss.encryptAndHash(this.need(this.s, "s").publicKey));
          break;
        case "psk":
          this.ss.mixKeyAndHash(this.need(this.psk, "psk"));
          break;
        default:
          this.ss.mixKey(await this.dhToken(t));
      }
    }
    out.push(this.ss.encryptAndHash(payload));
    this.index += 1;
    const msg = concat(...out);
    if (msg.length > MAX_MESSAGE) throw new NoiseError("handshake message over 65535 bytes");
    return msg;
  }

  async readMessage(message: Uint8Array): Promise<Uint8Array> {
    if (this.isFinished() || this.isMyTurn()) throw new NoiseError("not the remote's turn");
    if (message.length > MAX_MESSAGE) throw new NoiseError("handshake message over 65535 bytes");
    let at = 0;
    const take = (n: number): Uint8Array => {
      if (at + n > message.length) throw new NoiseError("handshake message too short");
      const part = message.subarray(at, at + n);
      at += n;
      return part;
    };
    for (const t of this.messages[this.index]) {
      switch (t) {
        case "e": {
          this.re = take(DHLEN).slice();
          this.ss.mixHash(this.re);
          if (this.isPsk) this.ss.mixKey(this.re);
          break;
        }
        case "s": {
          const len = this.ss.cipher.hasKey() ? DHLEN + TAGLEN : DHLEN;
          this.rs = this.ss.decryptAndHash(take(len));
          break;
        }
        case "psk":
          this.ss.mixKeyAndHash(this.need(this.psk, "psk"));
          break;
        default:
          this.ss.mixKey(await this.dhToken(t));
      }
    }
    const payload = this.ss.decryptAndHash(message.subarray(at));
    this.index += 1;
    return payload;
  }

  /** After the last message: (initiator→responder, responder→initiator) cipher states. */
  split(): [CipherState, CipherState] {
    if (!this.isFinished()) throw new NoiseError("the handshake is not finished");
    return this.ss.split();
  }

  private async dhToken(t: "ee" | "es" | "se" | "ss"): Promise<Uint8Array> {
    // The first letter is the initiator's key, the second the responder's.
    const [mine, theirs] = this.initiator ? [t[0], t[1]] : [t[1], t[0]];
    const remote = theirs === "e" ? this.need(this.re, "re") : this.need(this.rs, "rs");
    if (mine === "e") return dh(this.need(this.e, "e").privateKey, remote);
    return this.need(this.s, "s").dh(remote);
  }

  private need<T>(v: T | undefined, what: string): T {
    if (v === undefined) throw new NoiseError(`the handshake needs ${what}, which is missing`);
    return v;
  }
}
