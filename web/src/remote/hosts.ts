// The hosts this browser paired with through a relay, kept in IndexedDB (origin-scoped): each
// with its relay, host id and static key, and this device's own X25519 key for it — a
// non-extractable WebCrypto key, so its private half never reaches JavaScript. A device keeps
// several hosts and switches between them (the current one's id is in localStorage).
import type { RemoteHost } from "./socket";

const DB = "nucleic-remote";
const STORE = "hosts";
const CURRENT = "nucleic.remoteHost";

export interface PairedHost extends RemoteHost {
  /** The host's direct addresses (LAN listener, tunnel), tried before the relay. */
  lan?: string[];
  /** The name the host recorded this device under. */
  name: string;
  /** The host's machine name, from the pairing link (hosts paired before it have none). */
  hostName?: string;
  pairedAt: number;
  /** This device's key for that host. */
  privateKey: CryptoKey;
  publicKey: Uint8Array;
}

function db(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE, { keyPath: "hostID" });
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

export async function pairedHosts(): Promise<PairedHost[]> {
  try {
    return ((await tx("readonly", (s) => s.getAll())) as PairedHost[]).sort((a, b) => a.pairedAt - b.pairedAt);
  } catch {
    return [];
  }
}

export async function rememberHost(h: PairedHost): Promise<void> {
  await tx("readwrite", (s) => s.put(h));
  setCurrentHost(h.hostID);
}

export async function forgetHost(hostID: string): Promise<void> {
  try {
    await tx("readwrite", (s) => s.delete(hostID));
  } catch {
    /* nothing stored */
  }
  if (currentHostID() === hostID) {
    try {
      localStorage.removeItem(CURRENT);
    } catch {
      /* private mode */
    }
  }
}

export function currentHostID(): string | null {
  try {
    return localStorage.getItem(CURRENT);
  } catch {
    return null;
  }
}

export function setCurrentHost(hostID: string): void {
  try {
    localStorage.setItem(CURRENT, hostID);
  } catch {
    /* private mode: this page only */
  }
}
