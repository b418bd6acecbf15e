// @vitest-environment node
// The TypeScript end of the interoperability test driven by the Rust crate
// (crates/channel/tests/channel/interop.rs): the Rust test listens on a loopback port, starts
// this file under vitest with NUCLEIC_CHANNEL_PEER=127.0.0.1:PORT, and plays one scenario per
// connection (pairing / reconnect, either side initiating). Frames: u32 big-endian length + bytes.
// Skipped when run on its own (no peer to talk to).
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";

import { Handshake, prologue, type Transport } from "./channel";
import { keyPairFromPrivate, staticKey } from "./noise";

interface Scenario {
  done?: boolean;
  name: string;
  kind: "pairing" | "connect";
  ts_role: "initiator" | "responder";
  host_id: string;
  ts_private: string;
  rust_public: string;
  secret?: string;
  expect_handshake_failure?: boolean;
}

const hex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));

class FramedSocket {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private ended = false;

  constructor(readonly socket: Socket) {
    socket.on("data", (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake();
    });
    socket.on("close", () => {
      this.ended = true;
      this.wake();
    });
    socket.on("error", () => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next frame, or null at end of stream. */
  async read(): Promise<Uint8Array | null> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (this.buf.length >= 4) {
        const len = this.buf.readUInt32BE(0);
        if (this.buf.length >= 4 + len) {
          const frame = new Uint8Array(this.buf.subarray(4, 4 + len));
          this.buf = this.buf.subarray(4 + len);
          return frame;
        }
      }
      if (this.ended) return null;
      if (Date.now() > deadline) throw new Error("interop peer: no frame from the Rust side within 10 s");
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 1000);
      });
    }
  }

  write(frame: Uint8Array): void {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(frame.length);
    this.socket.write(Buffer.concat([len, frame]));
  }
}

function message(from: string, size: number): Uint8Array {
  const head = new TextEncoder().encode(`${from}:`);
  const out = new Uint8Array(size);
  out.set(head);
  for (let i = head.length; i < size; i++) out[i] = i % 251;
  return out;
}

async function expectMessage(t: Transport, sock: FramedSocket, from: string, size: number): Promise<void> {
  for (;;) {
    const frame = await sock.read();
    if (!frame) throw new Error("stream ended mid-message");
    const m = t.open(frame);
    if (m) {
      expect(Buffer.from(m).equals(Buffer.from(message(from, size)))).toBe(true);
      return;
    }
  }
}

async function play(sock: FramedSocket, s: Scenario): Promise<void> {
  const local = staticKey(keyPairFromPrivate(hex(s.ts_private)));
  const remote = hex(s.rust_public);
  const p = prologue(s.host_id);
  const initiator = s.ts_role === "initiator";
  const hs =
    s.kind === "pairing"
      ? initiator
        ? Handshake.pairInitiator(local, hex(s.secret!), remote, p)
        : Handshake.pairResponder(local, hex(s.secret!), p)
      : initiator
        ? Handshake.connectInitiator(local, remote, p)
        : Handshake.connectResponder(local, p);
  try {
    while (!hs.isFinished()) {
      if (hs.isMyTurn()) {
        sock.write(await hs.writeMessage());
      } else {
        const m = await sock.read();
        if (!m) throw new Error("stream ended mid-handshake");
        await hs.readMessage(m);
        if (hs.kind === "connect" && !initiator) {
          expect(Buffer.from(hs.remoteStatic()!).equals(Buffer.from(remote))).toBe(true);
          hs.acceptRemote();
        }
      }
    }
  } catch (e) {
    if (s.expect_handshake_failure) {
      sock.write(new TextEncoder().encode(`refused: ${(e as Error).message}`));
      return;
    }
    throw e;
  }
  if (s.expect_handshake_failure) {
    // The Rust side refuses; it closes the stream without a transport frame.
    expect(await sock.read()).toBeNull();
    return;
  }
  const t = hs.intoTransport();
  expect(Buffer.from(t.remoteStatic).equals(Buffer.from(remote))).toBe(true);
  if (initiator) {
    for (const f of t.seal(message("ts", 150_000))) sock.write(f);
    await expectMessage(t, sock, "rust", 70_000);
    // The Rust side replays its last frame: refused.
    const replay = await sock.read();
    expect(() => t.open(replay!)).toThrow(/decryption failed/);
    sock.write(new TextEncoder().encode("refused"));
  } else {
    await expectMessage(t, sock, "rust", 150_000);
    const frames = t.seal(message("ts", 70_000));
    for (const f of frames) sock.write(f);
    sock.write(frames[frames.length - 1]); // a replay for the Rust side to refuse
    const verdict = await sock.read();
    expect(new TextDecoder().decode(verdict!)).toBe("refused");
  }
}

describe.skipIf(!process.env.NUCLEIC_CHANNEL_PEER)("interop with the Rust crate", () => {
  it("plays every scenario the Rust side sends", async () => {
    const [host, port] = process.env.NUCLEIC_CHANNEL_PEER!.split(":");
    let played = 0;
    for (;;) {
      const socket = connect(Number(port), host);
      await new Promise<void>((resolve, reject) => {
        socket.once("connect", resolve);
        socket.once("error", reject);
      });
      const sock = new FramedSocket(socket);
      const header = await sock.read();
      const s: Scenario = JSON.parse(new TextDecoder().decode(header!));
      if (s.done) {
        socket.end();
        break;
      }
      await play(sock, s);
      socket.end();
      played += 1;
    }
    expect(played).toBeGreaterThanOrEqual(5);
  }, 60_000);
});
