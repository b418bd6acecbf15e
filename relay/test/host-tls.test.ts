// The daemon and a `wss://` relay: the relay under workerd served over HTTPS with certificates
// made here (openssl), the real `nucleic serve --relay wss://…` trusting the test CA through
// NUCLEIC_RELAY_CA. A device pairs and works a session through it. Attacks: a certificate for
// another name, one from a CA the daemon does not trust, and the test CA not given — each
// refused with its reason in `nucleic doctor`, retried with backoff, and never sent in plaintext
// (a TCP proxy in front of the relay sees a TLS ClientHello open every connection). A plain
// `ws://` relay on another machine is refused at startup unless explicitly allowed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";

import type { RawSocketCtor } from "../../web/src/remote/socket";
import { makeCert } from "./certs";
import { Daemon, Device, NUCLEIC, until } from "./daemon";
import { Relay, type TlsFiles } from "./support";

let dir: string;
let caPath: string;
let certs: Record<"good" | "otherName" | "rogue", TlsFiles>;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), "nucleic-relay-tls-"));
  makeCert(dir, "ca", "DNS:ca.invalid");
  makeCert(dir, "rogue-ca", "DNS:ca.invalid");
  certs = {
    good: makeCert(dir, "good", "DNS:localhost", "ca"),
    otherName: makeCert(dir, "other", "DNS:other.example", "ca"),
    rogue: makeCert(dir, "rogue", "DNS:localhost", "rogue-ca"),
  };
  caPath = path.join(dir, "ca.pem");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let relay: Relay | null = null;
let daemon: Daemon | null = null;
let proxy: net.Server | null = null;
afterEach(async () => {
  await daemon?.stop();
  await relay?.stop();
  await new Promise((r) => (proxy ? proxy.close(r) : r(null)));
  [daemon, relay, proxy] = [null, null, null];
});

/** A `ws` WebSocket that trusts the test CA (the device's side of a `wss://` relay). */
function trustingTestCA(): RawSocketCtor {
  const ca = readFileSync(caPath);
  return class extends WebSocket {
    constructor(url: string) {
      super(url, { ca });
    }
  } as unknown as RawSocketCtor;
}

/** A TCP proxy on loopback in front of `port`, keeping the first byte of every connection. */
function recordingProxy(port: number): Promise<{ server: net.Server; port: number; firstBytes: number[] }> {
  const firstBytes: number[] = [];
  const server = net.createServer((client) => {
    client.on("error", () => {});
    client.once("data", (chunk: Buffer) => {
      firstBytes.push(chunk[0]);
      const upstream = net.connect(port, "127.0.0.1", () => {
        upstream.write(chunk);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as net.AddressInfo).port, firstBytes })),
  );
}

/** `nucleic doctor`'s relay line (doctor exits 1 when an agent CLI is missing: not our concern). */
function doctorRelayLine(d: Daemon): string {
  const r = spawnSync(NUCLEIC, ["doctor"], { env: { ...process.env, NUCLEIC_HOME: d.home }, encoding: "utf8", timeout: 15_000 });
  return r.stdout.split("\n").find((l) => l.startsWith("relay")) ?? `(no relay line in: ${r.stdout}${r.stderr})`;
}

it("pairs a device and works a session through a wss:// relay whose certificate the test CA signed", async () => {
  relay = await Relay.start({ tls: certs.good, record: false });
  daemon = await Daemon.start(relay.url(""), { tcp: false, env: { NUCLEIC_RELAY_CA: caPath } });
  expect(daemon.relayStatus()!.relay).toBe(`wss://localhost:${relay.port}`);
  expect(doctorRelayLine(daemon)).toContain("connected");
  const { link } = JSON.parse(daemon.cli("pair", "--json", "--name", "tls-phone"));
  expect(new URL(link).origin).toBe(`https://localhost:${relay.port}`);
  const { device, secret } = Device.fromLink(link);
  expect(device.host.relay).toBe(`wss://localhost:${relay.port}`);
  device.webSocket = trustingTestCA();
  await device.open({ mode: "pair", secret });
  expect(daemon.cli("device", "list")).toContain("tls-phone");

  const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo, name: "tls" } });
  const created = await device.ok({
    type: "intent",
    intent: { kind: "newSession", projectID: project.result.projectID, prompt: "write tls.txt containing over-tls", backend: "simulated", permissionMode: "default", title: "tls" },
  });
  const sessionID = created.result.sessionID;
  await device.ok({ type: "subscribe", sessionID, fromSeq: 1, verbosity: "full" });
  const ask = await device.wait("approvalRequested", 20_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "approvalRequested"));
  await device.ok({ type: "decide", sessionID, requestID: ask.kind.requestID, decision: { type: "allow" } });
  await device.wait("turnCompleted", 20_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "turnCompleted"));
  const facts = await device.ok({ type: "gitFacts", sessionID, includePatch: true });
  expect(facts.facts.patch).toContain("+over-tls");
  // A reconnect (IK) goes through TLS again.
  device.socket!.close();
  await device.wait("close", 5000, () => device.closed);
  await device.open({ mode: "connect" });
}, 90_000);

const refusals: { what: string; cert: () => TlsFiles; ca: boolean; reason: RegExp }[] = [
  { what: "a certificate for another name", cert: () => certs.otherName, ca: true, reason: /certificate is not valid for "localhost"/ },
  { what: "a certificate from a CA the daemon does not trust", cert: () => certs.rogue, ca: true, reason: /not signed by a trusted CA/ },
  { what: "the test CA's certificate without --relay-ca", cert: () => certs.good, ca: false, reason: /not signed by a trusted CA.*--relay-ca/ },
];

for (const r of refusals) {
  it(`refuses ${r.what}: the reason in doctor, retries with backoff, never plaintext`, async () => {
    relay = await Relay.start({ tls: r.cert(), record: false });
    const front = await recordingProxy(relay.port);
    proxy = front.server;
    const env: Record<string, string> = r.ca ? { NUCLEIC_RELAY_CA: caPath } : {};
    daemon = await Daemon.start(`wss://localhost:${front.port}`, { tcp: false, env, connected: false });
    const d = daemon;
    // Backoff 0.5 s, 1 s, 2 s (±20 %): the third failure comes after ~1.5 s of waiting.
    await until("three refused attempts", 15_000, () => (d.relayStatus()?.attempts ?? 0) >= 3);
    const status = d.relayStatus()!;
    expect(status.state).toBe("retrying");
    expect(status.lastError).toMatch(r.reason);
    expect(status.lastError).toContain("no plaintext fallback");
    expect(status.retryInMs).toBeGreaterThan(1000);
    const line = doctorRelayLine(d);
    expect(line).toContain("UNREACHABLE");
    expect(line).toMatch(r.reason);
    // Every connection the daemon made opened with a TLS handshake record (0x16): never a
    // plaintext HTTP upgrade ("G" of GET).
    expect(front.firstBytes.length).toBeGreaterThanOrEqual(3);
    expect(front.firstBytes.every((b) => b === 0x16)).toBe(true);
    // The host never reached its room: a device is told it is away.
    const room = JSON.parse(readFileSync(path.join(d.home, "relay-status.json"), "utf8")).hostID;
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`wss://localhost:${relay!.port}/v1/rooms/${room}/device`, { ca: readFileSync(caPath), rejectUnauthorized: false });
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => reject(new Error("the room accepted a device: the host got in")));
      ws.once("error", reject);
    });
    expect(refused).toBe(503);
  }, 40_000);
}

it("refuses a plain ws:// relay on another machine unless --allow-plain-relay", async () => {
  const home = mkdtempSync(path.join(tmpdir(), "nucleic-plain-"));
  try {
    const env = { ...process.env, NUCLEIC_HOME: home, NUCLEIC_AGENT_KEEPERS: "off", NUCLEIC_AGENT_ISOLATION: "off" };
    const r = spawnSync(NUCLEIC, ["serve", "--no-tcp", "--relay", "ws://10.255.255.1:8787"], { env, encoding: "utf8", timeout: 15_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/plain ws:\/\/ to another machine.*use wss:\/\//);
    // A CA file for a plain relay is a mistake, said as such.
    const ca = spawnSync(NUCLEIC, ["serve", "--no-tcp", "--relay", "ws://127.0.0.1:9", "--relay-ca", caPath], { env, encoding: "utf8", timeout: 15_000 });
    expect(ca.status).not.toBe(0);
    expect(ca.stderr).toContain("a CA applies to a wss:// relay only");
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  // Opted in, it starts and dials (nothing answers in this namespace: it retries).
  daemon = await Daemon.start("ws://10.255.255.1:8787", { tcp: false, connected: false, args: ["--allow-plain-relay"] });
  const d = daemon;
  await until("a failed attempt", 15_000, () => d.relayStatus()?.state === "retrying");
  expect(d.relayStatus()!.lastError).toContain("cannot reach the relay");
}, 30_000);
