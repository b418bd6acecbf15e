// What one Noise message carries between a device and the host (the host's side:
// crates/server/src/remote/framing.rs): a sync-protocol text frame, a close with code and
// reason, or a ping / pong — what a WebSocket's own opcodes carry on /ws.
export const TEXT = 0x00;
export const CLOSE = 0x01;
export const PING = 0x02;
export const PONG = 0x03;

export type ChannelFrame =
  | { kind: "text"; text: string }
  | { kind: "close"; code: number; reason: string }
  | { kind: "ping" }
  | { kind: "pong" };

export function encodeText(text: string): Uint8Array {
  const body = new TextEncoder().encode(text);
  const out = new Uint8Array(body.length + 1);
  out[0] = TEXT;
  out.set(body, 1);
  return out;
}

export function encodeClose(code: number, reason: string): Uint8Array {
  const body = new TextEncoder().encode(reason);
  const out = new Uint8Array(body.length + 3);
  out[0] = CLOSE;
  new DataView(out.buffer).setUint16(1, code);
  out.set(body, 3);
  return out;
}

/** Null for anything malformed (the caller closes the channel). */
export function decode(m: Uint8Array): ChannelFrame | null {
  if (m.length === 0) return null;
  switch (m[0]) {
    case TEXT:
      try {
        return { kind: "text", text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(m.subarray(1)) };
      } catch {
        return null;
      }
    case CLOSE:
      if (m.length < 3) return null;
      return { kind: "close", code: new DataView(m.buffer, m.byteOffset).getUint16(1), reason: new TextDecoder().decode(m.subarray(3)) };
    case PING:
      return m.length === 1 ? { kind: "ping" } : null;
    case PONG:
      return m.length === 1 ? { kind: "pong" } : null;
    default:
      return null;
  }
}
