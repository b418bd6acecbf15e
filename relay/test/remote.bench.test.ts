// Figures for docs/benchmarks.md (issue 12), in one run: the latency a relay adds between the
// host writing an event and a device receiving it (relay vs a direct loopback WebSocket), the
// catch-up of a 20,000-event session through the relay vs direct, and the relay's memory per
// idle connected host. Off by default: `NUCLEIC_BENCH=1 npm --prefix relay test -- test/remote.bench.test.ts`.
import { readFileSync, readdirSync } from "node:fs";

import { expect, it } from "vitest";
import WebSocket from "ws";

import { Daemon, Device, until } from "./daemon";
import { Relay, readyHost, hostKey } from "./support";

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

function workerdPids(): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8").includes("workerd");
      } catch {
        return false;
      }
    })
    .map(Number);
}

it.runIf(on)("relay vs direct: added latency, 20,000-event catch-up, memory per idle host", async () => {
  const relay = await Relay.start({ record: false });
  const daemon = await Daemon.start(relay.url(""));
  try {
    const { device, secret } = Device.fromLink(JSON.parse(daemon.cli("pair", "--json")).link);
    await device.open({ mode: "pair", secret });
    const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon.repo } });
    const start = async (prompt: string) =>
      (await device.ok({ type: "intent", intent: { kind: "newSession", projectID: project.result.projectID, prompt, backend: "simulated", permissionMode: "default" } }))
        .result.sessionID as string;

    // Latency: a paced stream (one delta every 250 ms), both paths subscribed at once; each
    // event's arrival against its `at` (written by the host when it read the agent's line).
    const d = await direct(daemon);
    const paced = await start("stream 120");
    const lat = { relay: [] as number[], direct: [] as number[] };
    const note = (into: number[]) => (events: any[]) => {
      const now = Date.now();
      for (const e of events) if (e.kind.type === "assistantText") into.push(now - Date.parse(e.at));
    };
    const onDirect = note(lat.direct);
    d.got = (m) => {
      if (m.type === "events") onDirect(m.events);
      if (m.type === "event") onDirect([m.event]);
    };
    const onRelay = note(lat.relay);
    device.onEvents = (session, events) => session === paced && onRelay(events);
    d.ws.send(JSON.stringify({ type: "subscribe", messageID: "s1", sessionID: paced, fromSeq: 1, verbosity: "full" }));
    await device.ok({ type: "subscribe", sessionID: paced, fromSeq: 1, verbosity: "full" });
    await device.wait("the paced turn", 90_000, () => device.events.get(paced)?.find((e) => e.kind.type === "turnCompleted"));
    device.onEvents = null;
    // `at` has millisecond resolution: each figure is ±1 ms.
    const report = {
      latency: {
        relay: { n: lat.relay.length, p50: pct(lat.relay, 50), p99: pct(lat.relay, 99) },
        direct: { n: lat.direct.length, p50: pct(lat.direct, 50), p99: pct(lat.direct, 99) },
      },
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

    // Memory: 50 idle hosts connected to the relay.
    const pids = workerdPids();
    const before = pids.reduce((a, p) => a + rssKiB(p), 0);
    const hosts = [];
    for (let i = 0; i < 50; i++) hosts.push(await readyHost(relay, await hostKey()));
    await new Promise((r) => setTimeout(r, 2000));
    const after = workerdPids().reduce((a, p) => a + rssKiB(p), 0);
    report.relayMemory = { idleHosts: 50, kibPerHost: Math.round((after - before) / 50), workerdRssKiB: after };
    for (const h of hosts) h.close();
    console.log(JSON.stringify(report, null, 2));
    expect(report.catchUp.events).toBeGreaterThanOrEqual(20_000);
  } finally {
    await daemon.stop();
    await relay.stop();
  }
}, 600_000);
