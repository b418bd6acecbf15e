// A real `nucleic serve --relay` (target/debug/nucleic, built by `cargo build -p nucleic-cli`)
// on a throwaway home and git repository, and a device speaking the sync protocol to it through
// the relay inside the Noise channel (web/src/remote/socket.ts), as the cockpit does.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, readlinkSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";

import { generateKeyPair, staticKey } from "../../web/src/channel/noise";
import type { StaticKey } from "../../web/src/channel/noise";
import { parsePairingLink } from "../../web/src/remote/link";
import { ChannelSocket, type Opening, type RawSocketCtor, type RemoteHost } from "../../web/src/remote/socket";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const NUCLEIC =
  process.env.NUCLEIC_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(repoRoot, "target"), "debug/nucleic");

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, ms: number, probe: () => T | undefined | null | false): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

export class Daemon {
  out = "";
  private constructor(
    readonly home: string,
    readonly repo: string,
    readonly child: ChildProcess,
  ) {}

  /** `tcp: false` runs it with `--no-tcp`: no TCP socket at all, the CLI on its Unix socket.
   *  `connected: false` returns once the daemon wrote its relay status, whatever the state. */
  static async start(
    relayUrl: string,
    opts: { tcp?: boolean; app?: string; lan?: string[]; args?: string[]; env?: Record<string, string>; connected?: boolean } = {},
  ): Promise<Daemon> {
    if (!existsSync(NUCLEIC)) throw new Error(`${NUCLEIC} is missing: cargo build -p nucleic-cli first`);
    const dir = mkdtempSync(path.join(tmpdir(), "nucleic-remote-"));
    const home = path.join(dir, "home");
    const repo = path.join(dir, "MARKER-repo");
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
    writeFileSync(path.join(repo, "README.md"), "MARKER-readme-content\n");
    execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "."]);
    execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]);
    const listen = opts.tcp === false ? ["--no-tcp"] : ["--bind", "127.0.0.1:0"];
    const app = opts.app ? ["--app-url", opts.app] : [];
    const child = spawn(NUCLEIC, ["serve", ...listen, "--relay", relayUrl, ...app, ...(opts.lan ?? []), ...(opts.args ?? [])], {
      env: { ...process.env, NUCLEIC_HOME: home, NUCLEIC_AGENT_KEEPERS: "off", NUCLEIC_AGENT_ISOLATION: "off", ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const d = new Daemon(home, repo, child);
    child.stdout!.on("data", (b: Buffer) => (d.out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (d.out += b.toString()));
    try {
      if (opts.connected === false) await until("the daemon's relay status", 15_000, () => d.relayState());
      else await until("the daemon's relay connection", 15_000, () => d.relayState() === "connected");
    } catch (e) {
      // Not left running when it never got there.
      await d.stop();
      throw new Error(`${(e as Error).message}; the daemon said: ${d.out.slice(-2000)}`);
    }
    return d;
  }

  relayStatus(): { relay: string; state: string; devices: number; lastError?: string; retryInMs?: number; attempts: number; since: number } | null {
    try {
      return JSON.parse(readFileSync(path.join(this.home, "relay-status.json"), "utf8"));
    } catch {
      return null;
    }
  }

  relayState(): string | undefined {
    return this.relayStatus()?.state;
  }

  cli(...args: string[]): string {
    return execFileSync(NUCLEIC, args, { env: { ...process.env, NUCLEIC_HOME: this.home }, encoding: "utf8", timeout: 15_000 });
  }

  /** `nucleic doctor`'s output, whatever its verdict (it exits 1 when a required tool is missing). */
  doctor(): string {
    const r = spawnSync(NUCLEIC, ["doctor"], { env: { ...process.env, NUCLEIC_HOME: this.home }, encoding: "utf8", timeout: 30_000 });
    if (r.error) throw r.error;
    return r.stdout;
  }

  /** The loopback origin of a daemon started with TCP. */
  origin(): string {
    const { port } = JSON.parse(readFileSync(path.join(this.home, "daemon.json"), "utf8"));
    return `http://127.0.0.1:${port}`;
  }

  token(): string {
    return readFileSync(path.join(this.home, "token"), "utf8").trim();
  }

  /** TCP sockets of the daemon in LISTEN state (from /proc/net/tcp{,6} and its fds). */
  listeningSockets(): string[] {
    const pid = this.child.pid!;
    const inodes = new Set(
      readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return "";
          }
        })
        .map((l) => /^socket:\[(\d+)\]$/.exec(l)?.[1])
        .filter((x): x is string => !!x),
    );
    const out: string[] = [];
    for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      if (!existsSync(table)) continue;
      for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length > 9 && f[3] === "0A" && inodes.has(f[9])) out.push(`${table} ${f[1]}`);
      }
    }
    return out;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      this.child.kill("SIGTERM");
      await until("the daemon to stop", 12_000, () => this.child.exitCode !== null || this.child.signalCode !== null);
    }
    rmSync(path.dirname(this.home), { recursive: true, force: true });
  }
}

type Message = Record<string, any>;

/** A device: its key, the host it paired with, and the sync protocol over a ChannelSocket. */
export class Device {
  socket: ChannelSocket | null = null;
  closed: { code: number; reason: string } | null = null;
  /** The raw WebSocket of the last open(), and the close code the relay gave it. */
  raw: WebSocket | null = null;
  rawClose: number | null = null;
  closedAt = 0;
  readonly events = new Map<string, Message[]>();
  readonly received: Message[] = [];
  private pending = new Map<string, (m: Message) => void>();
  private next = 1;
  private waiters: (() => void)[] = [];

  /** The WebSocket class the channel dials with (a `wss://` relay with a test CA needs one that
   *  passes it). */
  webSocket: RawSocketCtor = WebSocket as unknown as RawSocketCtor;
  /** How long the channel waits for anything from the host before giving up on it (the
   *  cockpit's default when unset). */
  silenceMs: number | undefined = undefined;

  constructor(
    readonly key: StaticKey,
    readonly host: RemoteHost,
  ) {}

  static fromLink(link: string): { device: Device; secret: Uint8Array } {
    const parsed = parsePairingLink(new URL(link).hash);
    if (!parsed) throw new Error(`not a pairing link: ${link}`);
    const device = new Device(staticKey(generateKeyPair()), { relay: parsed.relay, hostID: parsed.hostID, hostKey: parsed.hostKey });
    return { device, secret: parsed.secret };
  }

  /** Opens the channel (pairing or reconnect) and says hello; rejects with the close reason. */
  async open(opening: Opening, host: RemoteHost = this.host): Promise<void> {
    this.closed = null;
    this.rawClose = null;
    const device = this;
    const Base = this.webSocket as unknown as typeof WebSocket;
    // The raw WebSocket under the channel, kept to make the device fall silent (sleep()).
    class Tapped extends Base {
      constructor(url: string) {
        super(url);
        device.raw = this;
        this.on("close", (code) => (device.rawClose = code));
      }
    }
    const s = new ChannelSocket(host, this.key, opening, Tapped as unknown as RawSocketCtor, { silenceMs: this.silenceMs });
    this.socket = s;
    s.onmessage = (m) => this.receive(JSON.parse(m.data));
    s.onclose = (e) => {
      this.closed = e;
      this.closedAt = performance.now();
      this.wake();
    };
    await new Promise<void>((resolve, reject) => {
      s.onopen = () => resolve();
      const prev = s.onclose!;
      s.onclose = (e) => {
        prev(e);
        reject(new Error(`closed ${e.code}: ${e.reason}`));
      };
    });
    const welcome = this.wait("welcome", 5000, () => this.received.find((m) => m.type === "welcome"));
    s.send(JSON.stringify({ type: "hello", clientID: "test-device", clientName: "test device", protocolVersion: 1, features: ["eventBatches"] }));
    await welcome;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** A phone put to sleep: its app stops reading and writing, and no close frame or FIN is
   * sent. The kernel still acknowledges what arrives (as a suspended phone's OS does) until its
   * buffer fills; nothing reaches the page, so it answers no ping. */
  sleep(): void {
    const tcp = (this.raw as unknown as { _socket?: { pause(): void } })._socket;
    if (!tcp) throw new Error("sleep: the device has no open socket");
    tcp.pause();
  }

  /** Back from sleep: what the socket buffered meanwhile is read now. */
  awake(): void {
    (this.raw as unknown as { _socket?: { resume(): void } })._socket?.resume();
  }

  private receive(m: Message): void {
    this.received.push(m);
    if (m.type === "event") this.note(m.event.sessionID, [m.event]);
    else if (m.type === "events") this.note(m.sessionID, m.events);
    else if (m.messageID && this.pending.has(m.messageID)) {
      this.pending.get(m.messageID)!(m);
      this.pending.delete(m.messageID);
    }
    this.wake();
  }

  /** Called with every batch of events as it arrives (for timing). */
  onEvents: ((session: string, events: Message[]) => void) | null = null;

  private note(session: string, events: Message[]): void {
    this.onEvents?.(session, events);
    const list = this.events.get(session) ?? [];
    list.push(...events);
    this.events.set(session, list);
  }

  async wait<T>(what: string, ms: number, probe: () => T | undefined | null | false): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = probe();
      if (v) return v;
      if (this.closed && !what.startsWith("close")) throw new Error(`${what}: the channel closed (${this.closed.code} ${this.closed.reason})`);
      if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  request(m: Message, ms = 15_000): Promise<Message> {
    const messageID = `t-${this.next++}`;
    const reply = new Promise<Message>((resolve, reject) => {
      this.pending.set(messageID, resolve);
      setTimeout(() => reject(new Error(`${m.type} ${m.intent?.kind ?? ""}: no reply within ${ms} ms`)), ms);
    });
    this.socket!.send(JSON.stringify({ ...m, messageID }));
    return reply;
  }

  async ok(m: Message, ms?: number): Promise<Message> {
    const r = await this.request(m, ms);
    if (r.type === "error" || r.type === "unsupported") throw new Error(`${m.type}: ${JSON.stringify(r)}`);
    return r;
  }

  /** Seq numbers received for a session, in arrival order. */
  seqs(session: string): number[] {
    return (this.events.get(session) ?? []).map((e) => e.seq);
  }
}
