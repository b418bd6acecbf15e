// The relay under workerd: forwarding, isolation of rooms and streams, host authentication,
// caps and rate limits, restarts, and the debug record (off by default).
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { CLOSE, OPEN } from "../src/wire";
import { Client, Relay, TEST_LIMITS, connectHost, data, hostKey, parse, readyHost, sleep } from "./support";

let relay: Relay;

beforeAll(async () => {
  relay = await Relay.start();
});

afterAll(async () => {
  await relay?.stop();
});

const enc = (s: string) => new TextEncoder().encode(s);

async function device(room: string): Promise<Client> {
  return Client.connect(relay.url(`/v1/rooms/${room}/device`));
}

describe("forwarding", () => {
  it("carries frames both ways, each device its own stream", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const d1 = await device(key.room);
    const open1 = parse(await host.next("open 1"));
    const d2 = await device(key.room);
    const open2 = parse(await host.next("open 2"));
    expect([open1.type, open2.type]).toEqual([OPEN, OPEN]);
    expect(open1.stream).not.toBe(open2.stream);

    d1.send(enc("from one"));
    d2.send(enc("from two"));
    // Two sockets: no order between them, but each frame is tagged with its device's stream.
    const got = new Map<number, string>();
    for (let i = 0; i < 2; i++) {
      const f = parse(await host.next(`data ${i}`));
      got.set(f.stream, f.payload.toString());
    }
    expect(got).toEqual(new Map([[open1.stream, "from one"], [open2.stream, "from two"]]));

    host.send(data(open1.stream, enc("to one")));
    expect((await d1.next("to one")).toString()).toBe("to one");
    await sleep(200);
    expect(d2.messages).toEqual([]); // never the other device's frames

    // The host drops device 2; device 1 leaves and the host is told.
    const closeFrame = new Uint8Array(5);
    closeFrame[0] = CLOSE;
    new DataView(closeFrame.buffer).setUint32(1, open2.stream);
    host.send(closeFrame);
    expect(await d2.closed("device 2 dropped")).toBe(4000);
    const dropped = parse(await host.next("close 2 confirmed"));
    expect([dropped.type, dropped.stream]).toEqual([CLOSE, open2.stream]);
    d1.close();
    const gone = parse(await host.next("close 1"));
    expect([gone.type, gone.stream]).toEqual([CLOSE, open1.stream]);
    host.close();
  });

  it("a frame for another host's room is never delivered", async () => {
    const [a, b] = [await hostKey(), await hostKey()];
    const hostA = await readyHost(relay, a);
    const hostB = await readyHost(relay, b);
    const dA = await device(a.room);
    const dB = await device(b.room);
    const sA = parse(await hostA.next("open A")).stream;
    const sB = parse(await hostB.next("open B")).stream;
    dA.send(enc("marker-for-A"));
    expect(parse(await hostA.next("A's frame")).payload.toString()).toBe("marker-for-A");
    // Host B addresses A's device by its stream id: it is not in B's room.
    hostB.send(data(sA, enc("B reaching into A")));
    expect(parse(await hostB.next("B told the stream is unknown")).type).toBe(CLOSE);
    hostB.send(data(sB, enc("for B's own device")));
    expect((await dB.next("B's device")).toString()).toBe("for B's own device");
    await sleep(200);
    expect(hostB.messages).toEqual([]);
    expect(dA.messages).toEqual([]);
    for (const c of [hostA, hostB, dA, dB]) c.close();
  });
});

describe("bad input", () => {
  it("refuses text, garbage and oversized frames", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const d = await device(key.room);
    await host.next("open");
    d.send("a text frame");
    expect(await d.closed("text from a device")).toBe(1003);
    const d2 = await device(key.room);
    await host.next("open 2");
    d2.send(new Uint8Array(65_536));
    expect(await d2.closed("oversized device frame")).toBe(1009);
    host.send(Uint8Array.of(0xff, 1, 2, 3));
    expect(await host.closed("garbage from the host")).toBe(4400);

    const host2 = await readyHost(relay, key);
    host2.send(new Uint8Array(65_535 + 6).fill(0x10));
    expect(await host2.closed("oversized host frame")).toBe(1009);

    expect(await relay.httpStatus("/v1/rooms/not-a-room/device")).toBe(400);
    expect(await relay.httpStatus(`/v1/rooms/${key.room}/device`)).toBe(426);
    const nobody = await hostKey();
    await expect(device(nobody.room)).rejects.toThrow(/status 503/);
  });

  it("refuses a device claiming to be the host", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    // Its own key: the room is not the hash of that key.
    const claimant = await hostKey();
    const fake = await connectHost(relay, claimant, key.room);
    expect(await fake.closed("signed with another key")).toBe(4401);
    // No signature at all, just data.
    const fake2 = await Client.connect(relay.url(`/v1/rooms/${key.room}/host`));
    await fake2.next("challenge");
    fake2.send(data(1, enc("I am the host")));
    expect(await fake2.closed("unsigned")).toBe(4401);
    // A captured authentication replayed on a new connection: the challenge differs.
    const spy = await Client.connect(relay.url(`/v1/rooms/${key.room}/host`));
    const challenge = await spy.next("challenge");
    const { authFrame } = await import("./support");
    const captured = await authFrame(key, key.room, new Uint8Array(challenge.subarray(1)));
    spy.close();
    const replayer = await Client.connect(relay.url(`/v1/rooms/${key.room}/host`));
    await replayer.next("challenge");
    replayer.send(captured);
    expect(await replayer.closed("replayed authentication")).toBe(4401);
    // The real host was never displaced: its device still reaches it.
    const d = await device(key.room);
    await host.next("open");
    d.send(enc("still mine"));
    expect(parse(await host.next("data")).payload.toString()).toBe("still mine");
    expect(host.closeCode).toBeNull();
    host.close();
    d.close();
  });

  it("caps a flood of connections to one room", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const attempts = await Promise.allSettled(Array.from({ length: 20 }, () => device(key.room)));
    const open = attempts.filter((a) => a.status === "fulfilled");
    const refused = attempts.filter((a) => a.status === "rejected");
    expect(open.length).toBe(TEST_LIMITS.maxDevices);
    expect(refused.every((r) => /status 429/.test(String((r as PromiseRejectedResult).reason)))).toBe(true);
    for (const a of open) (a as PromiseFulfilledResult<Client>).value.close();
    await sleep(200);
    // Attempts themselves are rate limited per room, even when each closes at once.
    const statuses: string[] = [];
    for (let i = 0; i < 20; i++) {
      try {
        (await device(key.room)).close();
        statuses.push("open");
      } catch (e) {
        statuses.push(String(e));
      }
    }
    expect(statuses.some((s) => /status 429/.test(s))).toBe(true);
    // Unauthenticated host connections are capped and time out.
    const other = await hostKey();
    const pending = await Promise.allSettled(
      Array.from({ length: 4 }, () => Client.connect(relay.url(`/v1/rooms/${other.room}/host`))),
    );
    expect(pending.filter((p) => p.status === "fulfilled").length).toBe(TEST_LIMITS.maxPendingHosts);
    const first = (pending.find((p) => p.status === "fulfilled") as PromiseFulfilledResult<Client>).value;
    // Squatters cannot lock the real host out: once their time is up, its connection gets in.
    await expect(readyHost(relay, other)).rejects.toThrow(/status 429/);
    await sleep(TEST_LIMITS.authTimeoutMs + 100);
    const real = await readyHost(relay, other);
    // A squatter that answers after its time never becomes the host, even with a valid
    // signature (it was closed, or is refused with 4408): the real host keeps the room.
    const { authFrame } = await import("./support");
    first.send(await authFrame(other, other.room, new Uint8Array(first.messages[0].subarray(1))));
    await sleep(300);
    expect(first.messages.map((m) => m[0])).toEqual([0x01]);
    const d = await device(other.room);
    expect(parse(await real.next("open on the real host")).type).toBe(OPEN);
    expect(real.closeCode).toBeNull();
    real.close();
    d.close();
    host.close();
  });

  it("closes a device that floods frames", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const d = await device(key.room);
    await host.next("open");
    for (let i = 0; i < TEST_LIMITS.deviceFrameBurst + 20; i++) d.send(Uint8Array.of(i & 0xff));
    expect(await d.closed("flooding device")).toBe(4429);
    host.close();
  });
});

describe("restarts and the record", () => {
  it("a new connection of the same host replaces the old one; its devices reconnect", async () => {
    const key = await hostKey();
    const old = await readyHost(relay, key);
    const d = await device(key.room);
    await old.next("open");
    // A device's first frame is its handshake message (workerd here does not deliver a close to
    // a client that never sent a frame: see docs/security.md).
    d.send(enc("noise message 1"));
    await old.next("message 1");
    const fresh = await readyHost(relay, key);
    expect(await old.closed("replaced host")).toBe(4409);
    expect(await d.closed("device of the replaced host")).toBe(4503);
    const d2 = await device(key.room);
    // The new connection may first hear CLOSE for the old connection's device.
    let f = parse(await fresh.next("open on the new connection"));
    while (f.type !== OPEN) f = parse(await fresh.next("open on the new connection"));
    const s = f.stream;
    fresh.send(data(s, enc("hello again")));
    expect((await d2.next("from the new connection")).toString()).toBe("hello again");
    fresh.close();
    d2.close();
  });

  it("clients reconnect after a relay restart", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const d = await device(key.room);
    await host.next("open");
    await relay.restart();
    await host.closed("host at restart", 5000);
    await d.closed("device at restart", 5000);
    const host2 = await readyHost(relay, key);
    const d2 = await device(key.room);
    const s = parse(await host2.next("open after restart")).stream;
    d2.send(enc("after restart"));
    expect(parse(await host2.next("data after restart")).payload.toString()).toBe("after restart");
    host2.send(data(s, enc("back")));
    expect((await d2.next("back")).toString()).toBe("back");
    host2.close();
    d2.close();
  });

  it("records forwarded frames only when the debug hook is on", async () => {
    const key = await hostKey();
    const host = await readyHost(relay, key);
    const d = await device(key.room);
    const s = parse(await host.next("open")).stream;
    d.send(enc("recorded-up"));
    await host.next("data");
    host.send(data(s, enc("recorded-down")));
    await d.next("down");
    const frames = await relay.frames(key.room);
    const decoded = frames.map((f) => [f.direction, Buffer.from(f.base64, "base64").toString()]);
    expect(decoded).toEqual([
      ["to-host", "recorded-up"],
      ["to-device", "recorded-down"],
    ]);
    host.close();
    d.close();

    const quiet = await Relay.start({ record: false });
    try {
      expect(await quiet.httpStatus(`/v1/rooms/${key.room}/debug/frames`)).toBe(404);
    } finally {
      await quiet.stop();
    }
  });
});
