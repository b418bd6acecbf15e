// The relay serving the cockpit's app shell (Workers static assets under workerd): the files of
// a built app with the daemon's security headers (the CSP compared with a live daemon's, the
// relay's WebSocket origin added to connect-src), the daemon's caching, and a strict split from
// the rooms: /v1/ never serves a file, a WebSocket or a POST never reaches the assets, and a
// relay without assets says it serves no app.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";

import { contentSecurityPolicy } from "../src/app";
import { Daemon } from "./daemon";
import { OPEN } from "../src/wire";
import { Client, Relay, hostKey, readyHost } from "./support";

let dist: string;
let relay: Relay;

beforeAll(async () => {
  // A stand-in for web/dist (the browser suite serves the real build: web/e2e/remote.e2e.ts).
  dist = mkdtempSync(path.join(tmpdir(), "nucleic-relay-app-"));
  mkdirSync(path.join(dist, "assets"));
  mkdirSync(path.join(dist, "v1", "rooms"), { recursive: true });
  writeFileSync(path.join(dist, "index.html"), "<!doctype html><title>shell-marker</title>");
  writeFileSync(path.join(dist, "sw.js"), "self.addEventListener('fetch', () => {});");
  writeFileSync(path.join(dist, "assets", "main-0123abcd.js"), "console.log('main');");
  writeFileSync(path.join(dist, "manifest.webmanifest"), "{}");
  // A file where a room path is: the relay must never serve it.
  writeFileSync(path.join(dist, "v1", "rooms", "leak.txt"), "file-under-v1");
  relay = await Relay.start({ app: dist, record: false });
});
afterAll(async () => {
  await relay?.stop();
  rmSync(dist, { recursive: true, force: true });
});

function expectHardened(r: Response): void {
  expect(r.headers.get("content-security-policy")).toBe(contentSecurityPolicy(new URL(relay.origin())));
  expect(r.headers.get("content-security-policy")).toContain(`connect-src 'self' ws://127.0.0.1:${relay.port};`);
  expect(r.headers.get("x-frame-options")).toBe("DENY");
  expect(r.headers.get("referrer-policy")).toBe("no-referrer");
  expect(r.headers.get("x-content-type-options")).toBe("nosniff");
}

it("serves the app shell with the daemon's headers and caching", async () => {
  const index = await relay.http("/");
  expect(index.status).toBe(200);
  expect(await index.text()).toContain("shell-marker");
  expect(index.headers.get("content-type")).toMatch(/^text\/html/);
  expect(index.headers.get("cache-control")).toBe("no-cache");
  expectHardened(index);

  const sw = await relay.http("/sw.js");
  expect(sw.status).toBe(200);
  expect(sw.headers.get("content-type")).toMatch(/javascript/);
  expect(sw.headers.get("cache-control")).toBe("no-cache");
  expect(sw.headers.get("service-worker-allowed")).toBe("/");
  expectHardened(sw);

  const asset = await relay.http("/assets/main-0123abcd.js");
  expect(asset.status).toBe(200);
  expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  expectHardened(asset);
  // Revalidation works (the assets' ETag).
  const etag = sw.headers.get("etag");
  expect(etag).toBeTruthy();
  expect((await relay.http("/sw.js", { headers: { "if-none-match": etag! } })).status).toBe(304);

  // App routes (no dot) get the shell; a missing file is 404, hardened too.
  const route = await relay.http("/sessions/abc");
  expect(route.status).toBe(200);
  expect(await route.text()).toContain("shell-marker");
  const missing = await relay.http("/missing.js");
  expect(missing.status).toBe(404);
  expectHardened(missing);
});

it("keeps the app and the rooms apart", async () => {
  // Nothing under /v1/ is ever a file, even one that exists in the assets.
  for (const p of ["/v1/rooms/leak.txt", "/v1/", "/v1/index.html", "/v1/rooms/x/y/z"]) {
    const r = await relay.http(p);
    expect(r.status, p).toBe(404);
    expect(await r.text(), p).toBe("not found\n");
  }
  // The app takes no WebSocket and no other method: a room's socket cannot be opened off /v1/.
  await expect(Client.connect(relay.url("/"))).rejects.toThrow(/status 426/);
  await expect(Client.connect(relay.url("/rooms/x/host"))).rejects.toThrow(/status 426/);
  expect(await relay.httpStatus("/", { method: "POST", body: "x" })).toBe(405);
  expect(await relay.httpStatus("/sw.js", { method: "PUT", body: "x" })).toBe(405);
  // The rooms work as before beside the app.
  const key = await hostKey();
  const host = await readyHost(relay, key);
  const device = await Client.connect(relay.url(`/v1/rooms/${key.room}/device`));
  expect((await host.next("open"))[0]).toBe(OPEN);
  device.close();
  host.close();
});

it("a relay without assets says it serves no app", async () => {
  const bare = await Relay.start({ record: false });
  try {
    const r = await bare.http("/");
    expect(r.status).toBe(404);
    expect(await r.text()).toContain("does not serve the app");
    expect(await bare.httpStatus("/healthz")).toBe(200);
  } finally {
    await bare.stop();
  }
});

it("the relay's policy is the daemon's with the relay in connect-src", async () => {
  const daemon = await Daemon.start(relay.url(""));
  try {
    const own = (await fetch(`${daemon.origin()}/`)).headers.get("content-security-policy")!;
    expect(own).toContain("connect-src 'self';");
    const https = new URL("https://relay.example/");
    expect(contentSecurityPolicy(https)).toBe(own.replace("connect-src 'self';", "connect-src 'self' wss://relay.example;"));
  } finally {
    await daemon.stop();
  }
});

it("APP_CONNECT_SRC adds origins and nothing else", async () => {
  const url = new URL("https://relay.example:8443/");
  const csp = contentSecurityPolicy(url, " wss://box.tailnet.ts.net  ws://192.168.1.5:7879 'unsafe-inline' wss://x;script-src * https://[::1]:9 ");
  expect(csp).toContain("connect-src 'self' wss://relay.example:8443 wss://box.tailnet.ts.net ws://192.168.1.5:7879 https://[::1]:9;");
  expect(csp.split(";").length).toBe(9);
  expect(csp).not.toContain("unsafe");
  const withVar = await Relay.start({ app: dist, record: false, vars: { APP_CONNECT_SRC: "wss://box.tailnet.ts.net" } });
  try {
    const r = await withVar.http("/");
    expect(r.headers.get("content-security-policy")).toContain(`connect-src 'self' ws://127.0.0.1:${withVar.port} wss://box.tailnet.ts.net;`);
  } finally {
    await withVar.stop();
  }
});
