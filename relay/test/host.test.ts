// The daemon through the relay, end to end: a real `nucleic serve --relay` and the relay under
// workerd; a device pairs by the link `nucleic pair` prints and speaks the unchanged sync
// protocol inside its Noise channel — sessions, a stream, an approval, the diff, the merge —
// until `nucleic device revoke` cuts it off. The relay's record of every forwarded frame holds
// none of the test's markers. Attacks on pairing and reconnects are refused.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { Daemon, Device, sleep, until } from "./daemon";
import { Relay } from "./support";

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

function pairLink(d: Daemon, name = "MARKER-phone"): { link: string; secret: string; hostID: string } {
  const out = JSON.parse(d.cli("pair", "--json", "--name", name));
  const secret = new URL(out.link).hash.match(/[&]s=([^&]+)/)![1];
  return { link: out.link, secret, hostID: out.hostID };
}

async function newSession(device: Device, prompt: string, title: string): Promise<string> {
  const project = await device.ok({ type: "intent", intent: { kind: "addProject", path: daemon!.repo, name: "MARKER-project" } });
  const session = await device.ok({
    type: "intent",
    intent: { kind: "newSession", projectID: project.result.projectID, prompt, backend: "simulated", permissionMode: "default", title },
  });
  return session.result.sessionID;
}

it("pairs by the link through the relay, works a session, and loses access at once on revoke", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false });
  // The host listens on nothing: no TCP socket of its own in LISTEN (its CLI uses a Unix socket).
  expect(daemon.listeningSockets()).toEqual([]);
  const { link, secret, hostID } = pairLink(daemon);
  const { device, secret: parsed } = Device.fromLink(link);
  await device.open({ mode: "pair", secret: parsed });
  expect(daemon.cli("device", "list")).toContain("MARKER-phone");
  // The host names its relay id in its welcome (a page on its own address lists it once).
  expect(device.received.find((m) => m.type === "welcome")?.relayHostID).toBe(hostID);

  const sessionID = await newSession(device, "write MARKER-notes.txt containing MARKER-content", "MARKER-title");
  const listed = await device.ok({ type: "listSessions" });
  expect(listed.sessions.map((s: { sessionID: string }) => s.sessionID)).toContain(sessionID);
  await device.ok({ type: "subscribe", sessionID, fromSeq: 1, verbosity: "full" });
  const ask = await device.wait("approvalRequested", 20_000, () =>
    device.events.get(sessionID)?.find((e) => e.kind.type === "approvalRequested"),
  );
  await device.ok({ type: "decide", sessionID, requestID: ask.kind.requestID, decision: { type: "allow" } });
  await device.wait("turnCompleted", 20_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "turnCompleted"));
  const facts = await device.ok({ type: "gitFacts", sessionID, includePatch: true });
  expect(facts.facts.patch).toContain("+MARKER-content");
  await device.ok({ type: "intent", intent: { kind: "finish", sessionID, action: { action: "merge", message: "MARKER-merge", updateCheckout: true } } });
  const seqs = device.seqs(sessionID);
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));

  // Revoked from the host's CLI: the open channel closes with 4401 at once.
  const id = daemon.cli("device", "list").split("\n").find((l) => l.includes("MARKER-phone"))!.split(/\s+/)[0];
  const t0 = performance.now();
  daemon.cli("device", "revoke", id);
  await device.wait("close after revoke", 3000, () => device.closed);
  expect(device.closed!.code).toBe(4401);
  const revokeMs = device.closedAt - t0;
  console.log(`revoked device closed ${revokeMs.toFixed(0)} ms after \`nucleic device revoke\` was started`);
  // … and its key is refused on reconnect.
  await expect(device.open({ mode: "connect" })).rejects.toThrow(/4401/);

  // The relay saw ciphertext only.
  const needles = [
    "MARKER-notes",
    "MARKER-content",
    "MARKER-title",
    "MARKER-project",
    "MARKER-repo",
    "MARKER-readme",
    "MARKER-merge",
    "MARKER-phone",
    "write MARKER",
    daemon.token(),
  ].map((m) => Buffer.from(m));
  needles.push(Buffer.from(parsed), Buffer.from(secret));
  const frames = await relay.frames(hostID);
  expect(frames.length).toBeGreaterThan(20);
  let bytes = 0;
  for (const f of frames) {
    const b = Buffer.from(f.base64, "base64");
    bytes += b.length;
    for (const n of needles) expect(b.indexOf(n)).toBe(-1);
  }
  expect(bytes).toBeGreaterThan(2000);
}, 90_000);

it("a paired device reconnects with IK after a relay restart and catches up with no gap and no duplicate", async () => {
  daemon = await Daemon.start(relay.url(""));
  // The listening check sees a TCP listener when there is one.
  expect(daemon.listeningSockets().length).toBe(1);
  const { link } = pairLink(daemon);
  const { device, secret } = Device.fromLink(link);
  await device.open({ mode: "pair", secret });
  const sessionID = await newSession(device, "stream 80 and say hi", "restart");
  await device.ok({ type: "subscribe", sessionID, fromSeq: 1, verbosity: "full" });
  await device.wait("some streaming", 20_000, () => device.seqs(sessionID).length > 20);
  await relay.restart();
  await device.wait("close on relay restart", 5000, () => device.closed);
  // The host notices, backs off and comes back; the device reconnects (IK) and resumes.
  await until("the host back at the relay", 20_000, () => daemon!.relayState() === "connected");
  for (let i = 0; ; i++) {
    try {
      await device.open({ mode: "connect" });
      break;
    } catch (e) {
      if (i > 40) throw e;
      await sleep(250);
    }
  }
  const cursor = Math.max(...device.seqs(sessionID));
  await device.ok({ type: "subscribe", sessionID, fromSeq: cursor + 1, verbosity: "full" });
  await device.wait("turnCompleted", 60_000, () => device.events.get(sessionID)?.find((e) => e.kind.type === "turnCompleted"));
  const seqs = device.seqs(sessionID);
  expect(seqs.length).toBeGreaterThan(cursor);
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
}, 120_000);
