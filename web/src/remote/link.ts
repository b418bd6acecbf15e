// A pairing link (`nucleic pair`): `<app>/#pair&r=<relay>&h=<host id>&k=<host key>&s=<secret>&n=<name>[&l=<lan>…][&m=<machine>]`,
// keys in base64url. Everything is in the fragment, which a browser never sends to a server.

export interface PairingLink {
  relay: string;
  hostID: string;
  hostKey: Uint8Array;
  secret: Uint8Array;
  name: string;
  /** The host's direct (LAN or tunnel) addresses, `ws://…`, if it listens on one. */
  lan: string[];
  /** The host's machine name (to tell several hosts apart), if the link carried one. */
  hostName?: string;
}

export function fromBase64Url(s: string): Uint8Array {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4);
  const bin = atob(b64);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

export function toBase64Url(b: Uint8Array): string {
  let bin = "";
  for (const x of b) bin += String.fromCharCode(x);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The link's fields, or null when the fragment is not a well-formed pairing link. */
export function parsePairingLink(hash: string): PairingLink | null {
  const h = hash.replace(/^#/, "");
  if (!h.startsWith("pair&")) return null;
  const p = new URLSearchParams(h.slice(5));
  const relay = p.get("r") ?? "";
  const hostID = p.get("h") ?? "";
  try {
    const hostKey = fromBase64Url(p.get("k") ?? "");
    const secret = fromBase64Url(p.get("s") ?? "");
    if (!/^wss?:\/\/[^\s]+$/.test(relay) || !/^[0-9a-f]{64}$/.test(hostID)) return null;
    if (hostKey.length !== 32 || secret.length !== 32) return null;
    const lan = p.getAll("l").filter((l) => /^wss?:\/\/[^\s/]+$/.test(l));
    // Shown as text only; bounded and without control characters all the same.
    const machine = (p.get("m") ?? "").replace(/[\u0000-\u001f\u007f]/g, "").trim().slice(0, 64);
    return { relay, hostID, hostKey, secret, name: p.get("n") ?? "paired device", lan, ...(machine ? { hostName: machine } : {}) };
  } catch {
    return null;
  }
}
