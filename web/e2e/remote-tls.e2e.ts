// A hosted relay is https/wss only: here the relay (workerd) serves the app and the rooms over
// TLS with a certificate made in the test, the daemon dials `wss://` trusting the test CA
// (NUCLEIC_RELAY_CA), and Chromium trusts only that certificate's key
// (--ignore-certificate-errors-spki-list). The phone opens the pairing link on the relay's
// `https://` origin, pairs over `wss://`, and works a session through it.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

import { makeCert, spkiHash } from "../../relay/test/certs";
import { Daemon } from "../../relay/test/daemon";
import { Relay } from "../../relay/test/support";
import { WEB, launch, pageErrors, waitOnline } from "./harness";

const DIST = path.join(WEB, "dist");
let dir: string;
let relay: Relay;
let daemon: Daemon | null = null;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(path.join(DIST, "index.html"))) throw new Error("web/dist is not built: npm --prefix web run build");
  dir = mkdtempSync(path.join(tmpdir(), "nucleic-e2e-tls-"));
  makeCert(dir, "ca", "DNS:ca.invalid");
  const leaf = makeCert(dir, "relay", "DNS:localhost", "ca");
  relay = await Relay.start({ app: DIST, tls: leaf, record: false });
  browser = await launch([`--ignore-certificate-errors-spki-list=${spkiHash(dir, "relay")}`]);
});
afterEach(async () => {
  // Also after a failed try, before a retry starts another daemon.
  await daemon?.stop();
  daemon = null;
});
afterAll(async () => {
  await browser?.close();
  await relay?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("the phone loads the app from the relay over https and reaches the host over wss", async () => {
  daemon = await Daemon.start(relay.url(""), { tcp: false, env: { NUCLEIC_RELAY_CA: path.join(dir, "ca.pem") } });
  daemon.cli("project", "add", daemon.repo);
  const { link } = JSON.parse(daemon.cli("pair", "--json", "--name", "tls-phone"));
  const origin = `https://localhost:${relay.port}`;
  expect(link.startsWith(`${origin}/#pair&r=wss%3A%2F%2Flocalhost%3A${relay.port}&`)).toBe(true);

  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  const lines: string[] = [];
  (page as unknown as { consoleLines: string[] }).consoleLines = lines;
  page.on("console", (m) => lines.push(m.text()));
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  const shell = await page.goto(link);
  expect(shell!.headers()["content-security-policy"]).toContain(`connect-src 'self' wss://localhost:${relay.port};`);
  await waitOnline(page, 30_000);
  expect(daemon.cli("device", "list")).toContain("tls-phone");
  expect(await page.evaluate(() => (window as any).nucleic.remote.host.relay)).toBe(`wss://localhost:${relay.port}`);

  await page.click("[data-testid=new-session]");
  await page.waitForSelector("[data-testid=new-session-sheet]");
  await page.selectOption("select[name=backend]", "simulated");
  await page.fill("textarea[name=prompt]", "write over-tls.txt containing hello");
  await page.click("[data-testid=create-session]");
  await page.waitForSelector("[data-testid=approval-bar]", { timeout: 60_000 });
  expect(await page.textContent("[data-testid=approval-bar]")).toContain("over-tls.txt");
  await page.click("[data-testid=allow]");
  await page.waitForSelector("[data-testid=approval-bar]", { state: "detached" });
  // The service worker registered on the https origin (a secure context with a trusted certificate).
  const worker = await page.waitForFunction(
    () => navigator.serviceWorker.getRegistration("/").then((r) => (r?.active ?? r?.waiting ?? r?.installing)?.scriptURL),
    null,
    { timeout: 10_000 },
  );
  expect(await worker.jsonValue()).toBe(`${origin}/sw.js`);
  expect(lines.filter((l) => /Content Security Policy|Refused to|Mixed Content/.test(l))).toEqual([]);
  expect(pageErrors(page)).toEqual([]);
  await context.close();
});
