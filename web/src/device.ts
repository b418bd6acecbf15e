/** This browser's device identity: a non-extractable ECDSA P-256 key pair kept in IndexedDB
 *  (origin-scoped — no page on another local port can read or use it) and the id the host gave
 *  it when a one-time sign-in link registered it. Every connection proves the key by signing a
 *  single-use challenge in `hello`; nothing is ever kept in a cookie. */
import type { DeviceProof } from "./protocol.gen";

/** Must match `nucleic_protocol::HELLO_PROOF_CONTEXT`. */
const PROOF_CONTEXT = "nucleic-hello-proof/1";
const DB = "nucleic";
const STORE = "device";
const SELF = "self";
const TIMEOUT_MS = 5000;

export interface StoredDevice {
  deviceID: string;
  keys: CryptoKeyPair;
}

/** Why this browser cannot connect: no device, the host refused it, or the page's address. */
export class SignedOutError extends Error {
  constructor(readonly reason: "signedOut" | "refused" | "badLink", message: string) {
    super(message);
  }
}

function db(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

async function tx<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const d = await db();
  try {
    return await new Promise<T>((resolve, reject) => {
      const r = f(d.transaction(STORE, mode).objectStore(STORE));
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
  } finally {
    d.close();
  }
}

export async function loadDevice(): Promise<StoredDevice | null> {
  try {
    const d = (await tx("readonly", (s) => s.get(SELF))) as StoredDevice | undefined;
    return d && d.deviceID && d.keys ? d : null;
  } catch {
    return null;
  }
}

export async function forgetDevice(): Promise<void> {
  try {
    await tx("readwrite", (s) => s.delete(SELF));
  } catch {
    /* nothing stored */
  }
}

function b64(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)));
}

function b64url(bytes: ArrayBuffer): string {
  return b64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "omit",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
}

/** Trades a one-time sign-in token for a device: a fresh key pair whose private half can never
 *  be exported, registered with the host under `name` (or a name from the User-Agent). */
export async function registerDevice(token: string, name?: string): Promise<StoredDevice> {
  if (!crypto.subtle) {
    throw new SignedOutError("refused", "This page is not a secure context (use http://127.0.0.1 or localhost): the browser offers no WebCrypto here.");
  }
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const spki = await crypto.subtle.exportKey("spki", keys.publicKey);
  const r = await post("/api/devices", { token, publicKey: b64(spki), ...(name ? { name } : {}) });
  if (r.status === 403) throw new SignedOutError("refused", "The host refused this address.");
  if (!r.ok) {
    const why = ((await r.json().catch(() => ({}))) as { error?: string }).error;
    throw new SignedOutError("badLink", why ?? `The host refused the sign-in (${r.status}).`);
  }
  const { deviceID } = (await r.json()) as { deviceID: string };
  const device = { deviceID, keys };
  await forgetDevice();
  await tx("readwrite", (s) => s.put(device, SELF));
  return device;
}

/** A fresh proof for `hello`: a single-use challenge from the host, signed with the device key. */
export async function proveDevice(device: StoredDevice): Promise<DeviceProof> {
  const r = await post("/api/challenge", {});
  if (r.status === 403) throw new SignedOutError("refused", "The host refused this address.");
  if (!r.ok) throw new Error(`challenge: ${r.status}`);
  const { nonce } = (await r.json()) as { nonce: string };
  const message = new TextEncoder().encode(`${PROOF_CONTEXT}\n${nonce}\n${device.deviceID}`);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, device.keys.privateKey, message);
  return { deviceID: device.deviceID, nonce, signature: b64url(signature) };
}
