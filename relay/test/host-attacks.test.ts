// Attacks on a real daemon through the relay: a used or expired pairing link, a wrong
// pre-shared key, a replayed handshake and replayed frames, garbage and oversized frames, a
// device that claims to be the host, a paired phone minting pairing links. Each is refused, and the paired device keeps working.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import WebSocket from "ws";

import { ChannelSocket, type RawSocketCtor } from "../../web/src/remote/socket";
import { Daemon, Device, sleep, until } from "./daemon";
import { Client, Relay, authFrame, hostKey } from "./support";

let relay: Relay;
let daemon: Daemon | null = null;
beforeAll(async () => {
  relay = await Relay.start();
});
afterAll(async () => {
  await relay?.stop();
});
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
});

function link(d: Daemon, ...extra: string[]): { link: string; hostID: string } {
  return JSON.parse(d.cli("pair", "--json", ...extra));
}

/** The paired device still gets answers. */
async function stillWorks(device: Device): Promise<void> {
  const r = await device.ok({ type: "listProjects" });
  expect(r.type).toBe("projects");
}

it("a used link, an expired link and a wrong pre-shared key are refused", async () => {
  daemon = await Daemon.start(relay.url(""));
  const first = link(daemon);
  const a = Device.fromLink(first.link);
  await a.device.open({ mode: "pair", secret: a.secret });
  // The same link again (another device): single use.
  const b = Device.fromLink(first.link);
  await expect(b.device.open({ mode: "pair", secret: b.secret })).rejects.toThrow(/4401/);

  // A wrong PSK: refused, and the link's right secret still pairs afterwards.
  const second = link(daemon);
  const c = Device.fromLink(second.link);
  const wrong = Uint8Array.from(c.secret);
  wrong[0] ^= 1;
  await expect(c.device.open({ mode: "pair", secret: wrong })).rejects.toThrow(/4401/);
  await c.device.open({ mode: "pair", secret: c.secret });

  // Expired: a link of 1 s, used after 1.5 s.
  const third = link(daemon, "--ttl-secs", "1");
  const e = Device.fromLink(third.link);
  await sleep(1500);
  await expect(e.device.open({ mode: "pair", secret: e.secret })).rejects.toThrow(/4401/);

  const names = daemon.cli("device", "list");
  expect(names.split("\n").filter((l) => l.includes("paired device")).length).toBe(2);
  await stillWorks(a.device);
  await stillWorks(c.device);
}, 60_000);

it("a replayed handshake and replayed frames get no working channel", async () => {
  daemon = await Daemon.start(relay.url(""));
  const l = link(daemon);
  const { device, secret } = Device.fromLink(l.link);
  await device.open({ mode: "pair", secret });
  device.socket!.close();
  await device.open({ mode: "connect" });
  await stillWorks(device);
  // What the relay forwarded to the host on the device's IK stream: message 1, then frames.
  const frames = (await relay.frames(l.hostID)).filter((f) => f.direction === "to-host");
  const ik = frames.findIndex((f) => Buffer.from(f.base64, "base64")[0] === 0x02);
  expect(ik).toBeGreaterThan(-1);
  const stream = frames[ik].stream;
  const recorded = frames.filter((f) => f.stream === stream).map((f) => Buffer.from(f.base64, "base64"));
  expect(recorded.length).toBeGreaterThan(2);

  const replayer = await Client.connect(relay.url(`/v1/rooms/${l.hostID}/device`));
  replayer.send(recorded[0]);
  // The host answers a replayed message 1 with a fresh ephemeral: keys nobody else holds …
  const answer = await replayer.next("message 2");
  expect(answer.length).toBeGreaterThan(32);
  // … so the recorded frames that follow fail to open and the host drops the stream.
  for (const f of recorded.slice(1)) replayer.send(f);
  expect(await replayer.closed("the replayer's stream closed by the host", 5000)).toBe(4000);
  expect(replayer.messages.length).toBe(0);
  await stillWorks(device);
}, 60_000);

it("garbage and oversized frames, and a device claiming to be the host, are refused", async () => {
  daemon = await Daemon.start(relay.url(""));
  const l = link(daemon);
  const { device, secret } = Device.fromLink(l.link);
  await device.open({ mode: "pair", secret });

  const garbage = await Client.connect(relay.url(`/v1/rooms/${l.hostID}/device`));
  garbage.send(Uint8Array.of(0x09, 1, 2, 3));
  expect(await garbage.closed("garbage mode byte", 5000)).toBe(4000);
  const noise = await Client.connect(relay.url(`/v1/rooms/${l.hostID}/device`));
  noise.send(Uint8Array.of(0x02, ...crypto.getRandomValues(new Uint8Array(96))));
  expect(await noise.closed("a random IK message 1", 5000)).toBe(4000);
  const big = await Client.connect(relay.url(`/v1/rooms/${l.hostID}/device`));
  big.send(new Uint8Array(70_000));
  expect(await big.closed("an oversized frame", 5000)).toBe(1009);

  // Someone who knows the room connects as its host with a key of its own.
  const impostor = await Client.connect(relay.url(`/v1/rooms/${l.hostID}/host`));
  const challenge = await impostor.next("challenge");
  impostor.send(await authFrame(await hostKey(), l.hostID, new Uint8Array(challenge.subarray(1))));
  expect(await impostor.closed("the impostor", 5000)).toBe(4401);
  expect(daemon.relayState()).toBe("connected");
  await stillWorks(device);
  // A paired phone cannot mint pairing links (a stolen phone must not invite more devices).
  const mint = await device.request({ type: "intent", intent: { kind: "pairDevice" } });
  expect(mint).toMatchObject({ type: "error", code: "unauthorized" });
}, 60_000);

it("a revoked device is cut off even when its connection never said hello", async () => {
  daemon = await Daemon.start(relay.url(""));
  const l = link(daemon, "--name", "MARKER-silent");
  const { device, secret } = Device.fromLink(l.link);
  await device.open({ mode: "pair", secret });
  device.socket!.close();
  // A channel opened with IK that sends nothing: its connection still waits for hello.
  const silent = new ChannelSocket(device.host, device.key, { mode: "connect" }, WebSocket as unknown as RawSocketCtor);
  let closed: { code: number; reason: string } | null = null;
  silent.onclose = (e) => (closed = e);
  await new Promise<void>((resolve, reject) => {
    silent.onopen = () => resolve();
    setTimeout(() => reject(new Error("the IK channel did not open")), 5000);
  });
  const id = daemon.cli("device", "list").split("\n").find((line) => line.includes("MARKER-silent"))!.split(/\s+/)[0];
  const t0 = performance.now();
  daemon.cli("device", "revoke", id);
  await until("the silent channel closed", 6000, () => closed);
  const ms = performance.now() - t0;
  expect(closed!.code).toBe(4401);
  // Cut by the relay loop after its grace (3 s), well before the hello deadline (10 s).
  expect(ms).toBeLessThan(5000);
  console.log(`a revoked device that never said hello was cut ${ms.toFixed(0)} ms after the revoke`);
}, 60_000);
