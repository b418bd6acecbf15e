// Figures for docs/benchmarks.md (issue 12), in one run: the latency a relay adds between the
// host writing an event and a device receiving it (relay vs a direct loopback WebSocket), the
// catch-up of a 20,000-event session through the relay vs direct, and the relay's memory per
// idle connected host. Off by default: `NUCLEIC_BENCH=1 npm --prefix relay test -- test/remote.bench.test.ts`.
import { readFileSync, writeFileSync } from "node:fs";

import { expect, it } from "vitest";
import WebSocket from "ws";

import { Daemon, Device, until } from "./daemon";
import { Client, Relay, childWorkerds, data, hostKey, parse, readyHost } from "./support";

const on = process.env.NUCLEIC_BENCH === "1";

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** A direct client of the daemon's /ws with its token (what the CLI does). */
async function direct(d: Daemon): Promise<{ ws: WebSocket; got: (m: any) => void; messages: any[] }> {
  const ws = new WebSocket(`${d.origin().replace("http", "ws")}/ws`, { headers: { Authorization: `Bearer ${d.token()}` } });
  const messages: any[] = [];
  const r = { ws, messages, got: (_m: any) => {} };
  ws.on("message", (b: Buffer) => {
    const m = JSON.parse(b.toString());
    messages.push(m);
    r.got(m);
  });
  await new Promise((res) => ws.once("open", res));
  ws.send(JSON.stringify({ type: "hello", clientID: "bench-direct", clientName: "bench", protocolVersion: 1, features: ["eventBatches"] }));
  await until("welcome", 5000, () => messages.find((m) => m.type === "welcome"));
  return r;
}

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

/** The relay's own forwarding, timed on one clock: a test host sends a ~400-byte frame every
 * `paceMs` to a device stream; each arrival at the device is noted into `into`. */
async function relayAlone(relay: Relay, into: number[], paceMs: number): Promise<{ stop: () => void }> {
  const key = await hostKey();
  const host = await readyHost(relay, key);
  const dev = await Client.connect(relay.url(`/v1/rooms/${key.room}/device`));
  const stream = parse(await host.next("the device's OPEN")).stream;
  const sent = new Map<number, number>();
  dev.ws.on("message", (b: Buffer) => {
    const t = sent.get(b.readUInt32BE(0));
    if (t !== undefined) into.push(performance.now() - t);
  });
  let n = 0;
  const timer = setInterval(() => {
    const payload = new Uint8Array(400);
    new DataView(payload.buffer).setUint32(0, ++n);
    sent.set(n, performance.now());
    host.send(data(stream, payload));
  }, paceMs);
  return {
    stop: () => {
      clearInterval(timer);
      dev.close();
      host.close();
    },
  };
}

it.runIf(on)("relay vs direct: added latency, 20,000-event catch-up, memory per idle host", async () => {
  const relay = await Relay.start({ record: false });
  const daemon = await Daemon.start(relay.url(""), { lan: ["--lan", "127.0.0.1:0"] });
  try {
    const pairing = JSON.parse(daemon.cli("pair", "--json"));
    const { device, secret } = Device.fromLink(pairing.link);
    await device.open({ mode: "pair", secret });
    // The same device also on the host's LAN listener: the same Noise channel and host code,
    // without the relay — what the host's channel adds, apart from what the relay adds.
    const lan = new Device(device.key, { ...device.host, direct: (pairing.lan as string[])[0] });
    await lan.open({ mode: "connect" });
    const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo } });
    const start = async (prompt: string) =>
      (await device.ok({ type: "intent", intent: { kind: "newSession", projectID: project.result.projectID, prompt, backend: "simulated", permissionMode: "default" } }))
        .result.sessionID as string;

    // Latency: a stream of text deltas, all paths subscribed at once; each event's arrival
    // against its `at` (written by the host when it read the agent's line). Twice: paced one
    // delta every 250 ms, then `brisk`, one every 25 ms (a model's token pace: the connection
    // never idles long enough for the kernel to ACK at once, where Nagle's algorithm bites).
    // Hops apart, at the same time: the channel on the LAN listener (no relay), the relay alone (a node host client → workerd → a node
    // device client, a frame of an event's size at the same pace, one clock), and the device's
    // own work (raw frame in → events out of decrypt, reassembly and JSON).
    const d = await direct(daemon);
    const rawTimes: number[] = [];
    let rawAt = 0;
    device.raw!.on("message", () => rawTimes.push((rawAt = performance.now())));
    const measure = async (prompt: string, paceMs: number, within: number) => {
      const session = await start(prompt);
      const lat = { relay: [] as number[], lanChannel: [] as number[], direct: [] as number[], relayAlone: [] as number[], deviceWork: [] as number[] };
      const alone = await relayAlone(relay, lat.relayAlone, paceMs);
      const note = (into: number[]) => (events: any[]) => {
        const now = Date.now();
        for (const e of events) if (e.kind.type === "assistantText") into.push(now - Date.parse(e.at));
      };
      const onDirect = note(lat.direct);
      d.got = (m) => {
        if (m.type === "events" && m.sessionID === session) onDirect(m.events);
        if (m.type === "event" && m.event.sessionID === session) onDirect([m.event]);
      };
      const onRelay = note(lat.relay);
      const onLan = note(lat.lanChannel);
      lan.onEvents = (id, events) => id === session && onLan(events);
      device.onEvents = (id, events) => {
        if (id !== session) return;
        lat.deviceWork.push(performance.now() - rawAt);
        onRelay(events);
      };
      d.ws.send(JSON.stringify({ type: "subscribe", messageID: `s-${session}`, sessionID: session, fromSeq: 1, verbosity: "full" }));
      // Each client also sends a request every 500 ms, as a phone in use does (each frame from a
      // device crosses the host's relay loop, which once wrote its status file with an fsync).
      let asked = 0;
      const chatter = setInterval(() => {
        asked++;
        void device.request({ type: "listProjects" }).catch(() => {});
        void lan.request({ type: "listProjects" }).catch(() => {});
        d.ws.send(JSON.stringify({ type: "listProjects", messageID: `c-${asked}` }));
      }, 500);
      await device.ok({ type: "subscribe", sessionID: session, fromSeq: 1, verbosity: "full" });
      await lan.ok({ type: "subscribe", sessionID: session, fromSeq: 1, verbosity: "full" });
      await device.wait(`the turn of ${prompt}`, within, () => device.events.get(session)?.find((e) => e.kind.type === "turnCompleted"));
      await until("the other paths' last events", 5000, () => lat.direct.length >= lat.relay.length && lat.lanChannel.length >= lat.relay.length);
      clearInterval(chatter);
      device.onEvents = null;
      lan.onEvents = null;
      d.got = () => {};
      alone.stop();
      // `at` has millisecond resolution: the end-to-end figures are ±1 ms.
      const fig = (xs: number[]) => ({ n: xs.length, p50: +pct(xs, 50).toFixed(1), p90: +pct(xs, 90).toFixed(1), p99: +pct(xs, 99).toFixed(1), max: +Math.max(...xs).toFixed(1) });
      return {
        raw: lat,
        figures: { relay: fig(lat.relay), lanChannel: fig(lat.lanChannel), direct: fig(lat.direct), relayAlone: fig(lat.relayAlone), deviceWork: fig(lat.deviceWork) },
      };
    };
    const deltas = Number(process.env.NUCLEIC_BENCH_DELTAS ?? 400);
    const paced = await measure(`stream ${deltas}`, 250, 60_000 + deltas * 400);
    const brisk = await measure(`stream ${deltas * 10} brisk`, 25, 60_000 + deltas * 10 * 50);
    if (process.env.NUCLEIC_BENCH_DUMP) writeFileSync(process.env.NUCLEIC_BENCH_DUMP, JSON.stringify({ paced: paced.raw, brisk: brisk.raw, rawTimes }));
    const report = {
      loadavg: readFileSync("/proc/loadavg", "utf8").trim(),
      latencyPaced250ms: paced.figures,
      latencyBrisk25ms: brisk.figures,
    } as any;

    // Catch-up: a 20,000-event session read from seq 1, relay vs direct.
    const big = await start("stream 19990 fast");
    let seen = -1;
    let stableSince = Date.now();
    await until("the big session to reach 20,000 events and settle", 300_000, () => {
      const n = JSON.parse(daemon.cli("session", "show", big)).lastSeq as number;
      if (n !== seen) [seen, stableSince] = [n, Date.now()];
      return n >= 20_000 && Date.now() - stableSince > 2000;
    });
    const last = JSON.parse(daemon.cli("session", "show", big)).lastSeq as number;
    const t0 = performance.now();
    await device.ok({ type: "subscribe", sessionID: big, fromSeq: 1, verbosity: "full" });
    await device.wait("relay catch-up", 120_000, () => (device.events.get(big)?.length ?? 0) >= last);
    const viaRelay = performance.now() - t0;
    let count = 0;
    const t1 = performance.now();
    const done = new Promise<void>((res) => {
      d.got = (m) => {
        if (m.type === "events" && m.sessionID === big) count += m.events.length;
        if (count >= last) res();
      };
    });
    d.ws.send(JSON.stringify({ type: "subscribe", messageID: "s2", sessionID: big, fromSeq: 1, verbosity: "full" }));
    await done;
    const viaDirect = performance.now() - t1;
    report.catchUp = { events: last, relayMs: Math.round(viaRelay), directMs: Math.round(viaDirect), ratio: +(viaDirect / viaRelay).toFixed(2) };
    d.ws.close();
    lan.socket!.close();

    // Memory: 50 idle hosts connected to the relay.
    const pids = childWorkerds();
    expect(pids.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 2000));
    const before = pids.reduce((a, p) => a + rssKiB(p), 0);
    const hosts = [];
    for (let i = 0; i < 50; i++) hosts.push(await readyHost(relay, await hostKey()));
    await new Promise((r) => setTimeout(r, 2000));
    const after = childWorkerds().reduce((a, p) => a + rssKiB(p), 0);
    report.relayMemory = { idleHosts: 50, kibPerHost: Math.round((after - before) / 50), workerdRssKiB: after };
    for (const h of hosts) h.close();
    console.log(JSON.stringify(report, null, 2));
    expect(report.catchUp.events).toBeGreaterThanOrEqual(20_000);
  } finally {
    await daemon.stop();
    await relay.stop();
  }
}, 900_000);
