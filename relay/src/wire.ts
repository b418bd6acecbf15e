// The relay's wire format. Devices send and receive raw binary frames (Noise messages, opaque to
// the relay). The host's socket carries every device's frames, each tagged with the device's
// stream id, plus a few control frames. All integers are big-endian.
//
// relay → host   CHALLENGE 0x01 | nonce (32)
// host → relay   AUTH      0x02 | spki length (u16) | SPKI DER of the host's P-256 relay key |
//                          ECDSA P-256 / SHA-256 signature (64, r‖s) over hostAuthMessage()
// relay → host   READY     0x03
// both ways      DATA      0x10 | stream (u32) | payload
// relay → host   OPEN      0x11 | stream (u32)        a device connected
// both ways      CLOSE     0x12 | stream (u32)        a device left / the host drops it
export const CHALLENGE = 0x01;
export const AUTH = 0x02;
export const READY = 0x03;
export const DATA = 0x10;
export const OPEN = 0x11;
export const CLOSE = 0x12;
export const NONCE_LEN = 32;
export const HEADER_LEN = 5;

/** What the host signs: the protocol's label, the room and the relay's fresh nonce. */
export function hostAuthMessage(room: string, nonce: Uint8Array): Uint8Array {
  const hex = Array.from(nonce, (b) => b.toString(16).padStart(2, "0")).join("");
  return new TextEncoder().encode(`nucleic-relay-host/1\n${room}\n${hex}`);
}

export function streamFrame(type: number, stream: number, payload?: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_LEN + (payload?.length ?? 0));
  out[0] = type;
  new DataView(out.buffer).setUint32(1, stream);
  if (payload) out.set(payload, HEADER_LEN);
  return out;
}

export type HostFrame =
  | { type: "auth"; spki: Uint8Array; signature: Uint8Array }
  | { type: "data"; stream: number; payload: Uint8Array }
  | { type: "close"; stream: number };

/** Parses a frame from the host; null for anything malformed. */
export function parseHostFrame(b: Uint8Array): HostFrame | null {
  if (b.length < 1) return null;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  switch (b[0]) {
    case AUTH: {
      if (b.length < 3) return null;
      const len = view.getUint16(1);
      if (b.length !== 3 + len + 64) return null;
      return { type: "auth", spki: b.subarray(3, 3 + len), signature: b.subarray(3 + len) };
    }
    case DATA:
      if (b.length < HEADER_LEN) return null;
      return { type: "data", stream: view.getUint32(1), payload: b.subarray(HEADER_LEN) };
    case CLOSE:
      if (b.length !== HEADER_LEN) return null;
      return { type: "close", stream: view.getUint32(1) };
    default:
      return null;
  }
}

/** A room is the lowercase hex SHA-256 of the host's relay key (SPKI DER). */
export const ROOM_PATTERN = /^[0-9a-f]{64}$/;

export async function roomOf(spki: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", spki));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether an AUTH frame proves `room` for the challenge `nonce`: the key hashes to the room and
 * signs hostAuthMessage(room, nonce). */
export async function verifyHostAuth(room: string, nonce: Uint8Array, bytes: Uint8Array): Promise<boolean> {
  const frame = parseHostFrame(bytes);
  if (!frame || frame.type !== "auth" || nonce.length !== NONCE_LEN) return false;
  try {
    if ((await roomOf(frame.spki)) !== room) return false;
    const key = await crypto.subtle.importKey("spki", frame.spki, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    return await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, frame.signature, hostAuthMessage(room, nonce));
  } catch {
    return false;
  }
}
