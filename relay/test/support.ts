// Starts the relay under workerd (miniflare, from npm) on loopback, and WebSocket clients for
// hosts and devices.
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import WebSocket from "ws";
import { readFileSync, readdirSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

import { AUTH, CHALLENGE, DATA, HEADER_LEN, READY, hostAuthMessage, roomOf } from "../src/wire";

export const TEST_LIMITS = {
  maxDevices: 8,
  maxPendingHosts: 2,
  connectBurst: 30,
  connectPerSecond: 1,
  deviceFrameBurst: 50,
  deviceFramesPerSecond: 10,
  authTimeoutMs: 1500,
};

let script: string | undefined;

async function workerScript(): Promise<string> {
  if (!script) {
    const out = await build({
      entryPoints: [fileURLToPath(new URL("../src/index.ts", import.meta.url))],
      bundle: true,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      write: false,
      external: ["cloudflare:workers"],
    });
    script = out.outputFiles[0].text;
  }
  return script;
}

/** A PEM certificate (chain) and its key, for a relay served over TLS. */
export interface TlsFiles {
  cert: string;
  key: string;
}

export interface RelayOptions {
  port?: number;
  record?: boolean;
  /** Serve over HTTPS with this certificate (then `url()` is `wss://localhost:<port>`). */
  tls?: TlsFiles;
  /** Serve this directory (a built web/dist) as the app shell, as `[assets]` in wrangler.toml. */
  app?: string;
  /** More worker variables (`[vars]`). */
  vars?: Record<string, string>;
}

/** workerd's output, minus the two lines it logs for every TLS handshake a client refused (the
 *  attack tests make many on purpose). */
function quietTlsRefusals(stdout: Readable, stderr: Readable): void {
  stdout.pipe(process.stdout);
  let skipStack = false;
  createInterface({ input: stderr }).on("line", (line) => {
    const refused = line.includes("error accepting tls connection");
    if (!refused && !(skipStack && line.startsWith("stack:"))) process.stderr.write(`${line}\n`);
    skipStack = refused;
  });
}

export class Relay {
  private constructor(
    private mf: Miniflare,
    readonly port: number,
    private readonly opts: RelayOptions,
  ) {}

  static async start(opts: RelayOptions = {}): Promise<Relay> {
    const record = opts.record ?? true;
    const tls = opts.tls ? { https: true, httpsCert: opts.tls.cert, httpsKey: opts.tls.key, handleRuntimeStdio: quietTlsRefusals } : {};
    const mf = new Miniflare({
      ...tls,
      modules: true,
      script: await workerScript(),
      compatibilityDate: "2026-04-20",
      durableObjects: { ROOMS: "Room" },
      bindings: { RELAY_LIMITS: JSON.stringify(TEST_LIMITS), ...(record ? { RELAY_DEBUG_RECORD: "1" } : {}), ...opts.vars },
      // wrangler.toml's `[assets]` with `run_worker_first = true`: the worker routes every request.
      ...(opts.app
        ? { assets: { directory: opts.app, binding: "ASSETS", routerConfig: { has_user_worker: true, invoke_user_worker_ahead_of_assets: true } } }
        : {}),
      host: "127.0.0.1",
      port: opts.port ?? 0,
    });
    const url = await mf.ready;
    return new Relay(mf, Number(url.port), opts);
  }

  url(path: string): string {
    return this.opts.tls ? `wss://localhost:${this.port}${path}` : `ws://127.0.0.1:${this.port}${path}`;
  }

  async restart(): Promise<void> {
    await this.mf.dispose();
    const next = await Relay.start({ ...this.opts, port: this.port });
    this.mf = next.mf;
  }

  /** Kills the relay's workerd with SIGKILL — no close frames, as a crash or a lost machine
   * would — then lets miniflare clean up what is left. `restart()` brings it back. */
  async kill(): Promise<void> {
    const pids = childWorkerds();
    if (pids.length === 0) throw new Error("kill: no workerd child of this process");
    for (const pid of pids) process.kill(pid, "SIGKILL");
    await this.mf.dispose().catch(() => {});
  }

  async frames(room: string): Promise<{ direction: string; stream: number; base64: string }[]> {
    const r = await fetch(`http://127.0.0.1:${this.port}/v1/rooms/${room}/debug/frames`);
    if (r.status !== 200) throw new Error(`debug/frames: ${r.status}`);
    return r.json();
  }

  /** The relay's http(s) origin (the app's, when it serves one). */
  origin(): string {
    return this.opts.tls ? `https://localhost:${this.port}` : `http://127.0.0.1:${this.port}`;
  }

  async httpStatus(path: string, init?: RequestInit): Promise<number> {
    return (await this.http(path, init)).status;
  }

  http(path: string, init?: RequestInit): Promise<Response> {
    return fetch(`http://127.0.0.1:${this.port}${path}`, init);
  }

  stop(): Promise<void> {
    return this.mf.dispose();
  }
}

/** The workerd processes this process started (miniflare spawns them directly). */
export function childWorkerds(): number[] {
  const out: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${p}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[1]);
      if (ppid === process.pid && readFileSync(`/proc/${p}/cmdline`, "utf8").includes("workerd")) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** A WebSocket client with a queue of received frames and the close code. */
export class Client {
  readonly messages: Buffer[] = [];
  closeCode: number | null = null;
  private waiters: (() => void)[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.messages.push(data);
      this.wake();
    });
    ws.on("close", (code) => {
      this.closeCode = code;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Connects; rejects with `status <n>` when the relay refuses the upgrade. */
  static connect(url: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const client = new Client(ws);
      const timer = setTimeout(() => reject(new Error(`connecting to ${url}: timed out after 5 s`)), 5000);
      ws.once("open", () => {
        clearTimeout(timer);
        resolve(client);
      });
      ws.once("unexpected-response", (_req, res) => {
        clearTimeout(timer);
        reject(new Error(`status ${res.statusCode}`));
      });
      ws.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  async next(what: string, ms = 3000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (this.messages.length === 0) {
      if (this.closeCode !== null) throw new Error(`${what}: closed (${this.closeCode}) before a frame came`);
      if (Date.now() > deadline) throw new Error(`${what}: no frame within ${ms} ms`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.messages.shift()!;
  }

  async closed(what: string, ms = 3000): Promise<number> {
    const deadline = Date.now() + ms;
    while (this.closeCode === null) {
      if (Date.now() > deadline) throw new Error(`${what}: not closed within ${ms} ms`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.closeCode;
  }

  send(data: Uint8Array | string): void {
    this.ws.send(data);
  }

  close(): void {
    this.ws.close();
  }
}

/** A host's relay key (ECDSA P-256) and the room it owns. */
export interface HostKey {
  keys: CryptoKeyPair;
  spki: Uint8Array;
  room: string;
}

export async function hostKey(): Promise<HostKey> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
  const spki = new Uint8Array((await crypto.subtle.exportKey("spki", keys.publicKey)) as ArrayBuffer);
  return { keys, spki, room: await roomOf(spki) };
}

export async function authFrame(key: HostKey, room: string, nonce: Uint8Array): Promise<Uint8Array> {
  const sig = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.keys.privateKey, hostAuthMessage(room, nonce)));
  const out = new Uint8Array(3 + key.spki.length + sig.length);
  out[0] = AUTH;
  new DataView(out.buffer).setUint16(1, key.spki.length);
  out.set(key.spki, 3);
  out.set(sig, 3 + key.spki.length);
  return out;
}

/** Connects as `room`'s host, signing the challenge with `key` (by default the room's own). */
export async function connectHost(relay: Relay, key: HostKey, room = key.room): Promise<Client> {
  const c = await Client.connect(relay.url(`/v1/rooms/${room}/host`));
  const challenge = await c.next("challenge");
  if (challenge[0] !== CHALLENGE) throw new Error("expected a challenge");
  c.send(await authFrame(key, room, new Uint8Array(challenge.subarray(1))));
  return c;
}

export async function readyHost(relay: Relay, key: HostKey): Promise<Client> {
  const c = await connectHost(relay, key);
  const ready = await c.next("ready");
  if (ready[0] !== READY) throw new Error(`expected READY, got ${ready[0]}`);
  return c;
}

export function parse(frame: Buffer): { type: number; stream: number; payload: Buffer } {
  return { type: frame[0], stream: frame.readUInt32BE(1), payload: frame.subarray(HEADER_LEN) };
}

export function data(stream: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_LEN + payload.length);
  out[0] = DATA;
  new DataView(out.buffer).setUint32(1, stream);
  out.set(payload, HEADER_LEN);
  return out;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
