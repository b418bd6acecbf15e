// Opt-in direct access (`nucleic serve --lan`): the same Noise channel without the relay, for a
// phone on the LAN or behind a tunnel (`--allow-host` names). Only allowed Host names are
// answered, only the channel is served there, and the relay never sees the device's frames.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";

import { Daemon, Device } from "./daemon";
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

/** The status of an upgrade to `url` with `host` as its Host header (101 when accepted). */
function upgradeStatus(url: string, host: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { Host: host } });
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", () => resolve(0));
  });
}

it("pairs and works directly on the LAN listener; other Host names and routes are refused", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false, lan: ["--lan", "127.0.0.1:0", "--allow-host", "box.tailnet.example"] });
  const out = JSON.parse(daemon.cli("pair", "--json"));
  const direct = (out.lan as string[]).find((l) => l.startsWith("ws://127.0.0.1:"))!;
  expect(out.lan).toContain("ws://box.tailnet.example");
  expect(out.link).toContain(`&l=${encodeURIComponent(direct)}`);

  const { device, secret } = Device.fromLink(out.link);
  const lanHost = { ...device.host, direct };
  await device.open({ mode: "pair", secret }, lanHost);
  expect((await device.ok({ type: "listProjects" })).type).toBe("projects");
  device.socket!.close();
  await device.open({ mode: "connect" }, lanHost);
  expect((await device.ok({ type: "listSessions" })).type).toBe("sessions");
  // Nothing of it went through the relay.
  expect(await relay.frames(out.hostID)).toEqual([]);

  const port = new URL(direct).port;
  expect(await upgradeStatus(`${direct}/v1/channel`, "evil.example")).toBe(403);
  expect(await upgradeStatus(`${direct}/v1/channel`, "box.tailnet.example")).toBe(101);
  // Only the channel: not the API, not the app, not /ws.
  for (const route of ["/ws", "/api/health", "/"]) {
    const r = await fetch(`http://127.0.0.1:${port}${route}`);
    expect(r.status, route).toBe(404);
  }

  const id = daemon.cli("device", "list").split("\n").find((l) => l.includes("paired device"))!.split(/\s+/)[0];
  daemon.cli("device", "revoke", id);
  await device.wait("close after revoke", 3000, () => device.closed);
  expect(device.closed!.code).toBe(4401);
  await expect(device.open({ mode: "connect" }, lanHost)).rejects.toThrow(/4401/);
}, 60_000);
