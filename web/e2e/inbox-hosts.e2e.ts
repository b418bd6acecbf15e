// One inbox across hosts: a phone-sized Chromium, the app loaded from the relay's own origin,
// paired through that relay (workerd) with two real daemons that listen on no TCP port. Sessions on both wait for a person; the phone's
// inbox lists them all, names each one's host, and answers each in place over that host's own
// Noise channel (an allow on each, a deny with a reason on one) without opening any session,
// and the agents go on. (The simulated agent's requests carry no risk class; the critical second
// confirmation through another host's store is covered by components/Inbox.test.tsx.) A host
// that stops shows as unreachable, not as "nothing pending".
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";

import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";

import { Daemon, until } from "../../relay/test/daemon";
import { Relay } from "../../relay/test/support";
import { WEB, launch, pageErrors, waitOnline } from "./harness";

const DIST = path.join(WEB, "dist");

let relay: Relay;
let appURL: string;
let browser: Browser;
const daemons: Daemon[] = [];

beforeAll(async () => {
  if (!existsSync(path.join(DIST, "index.html"))) throw new Error("web/dist is not built: npm --prefix web run build");
  relay = await Relay.start({ app: DIST });
  appURL = relay.origin();
});
afterAll(async () => {
  await relay?.stop();
});
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
  for (const d of daemons.splice(0)) await d.stop();
});

async function host(): Promise<{ daemon: Daemon; project: string; hostID: string; link: string }> {
  const daemon = await Daemon.start(relay.url(""), { tcp: false });
  daemons.push(daemon);
  const project = daemon.cli("project", "add", daemon.repo).trim();
  const { link, hostID } = JSON.parse(daemon.cli("pair", "--json", "--name", "phone"));
  return { daemon, project, hostID, link };
}

/** A simulated session started from the host's CLI (the phone never opens it). */
function session(d: Daemon, project: string, prompt: string): string {
  return d.cli("session", "new", "--project", project, "--agent", "sim", prompt).split(/\s+/)[0];
}

function status(d: Daemon, id: string): string {
  return JSON.parse(d.cli("session", "show", id)).status;
}

async function settled(d: Daemon, id: string, want: string): Promise<void> {
  await until(`session ${id} to be ${want}`, 30_000, () => status(d, id) === want);
}

it("answers approvals of two hosts from one inbox without opening a session; a stopped host is unreachable", async () => {
  const a = await host();
  const b = await host();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(60_000);
  const page: Page = await context.newPage();
  const errors: string[] = [];
  (page as unknown as { errors: string[] }).errors = errors;
  page.on("pageerror", (e) => errors.push(String(e)));
  const lines: string[] = [];
  (page as unknown as { consoleLines: string[] }).consoleLines = lines;
  page.on("console", (m) => lines.push(m.text()));
  // The phone pairs with A, then with B (B is now the page's host; A is remembered).
  await page.goto(a.link);
  await waitOnline(page, 30_000);
  await page.goto(b.link);
  await page.reload();
  await waitOnline(page, 30_000);
  expect(await page.evaluate(() => (window as any).nucleic.remote.host.hostID)).toBe(b.hostID);

  // Work waiting for a person on both hosts: a write on each, and a command on A.
  const onA = session(a.daemon, a.project, "write alpha.txt containing one");
  const denied = session(a.daemon, a.project, "run ls -la");
  const onB = session(b.daemon, b.project, "write beta.txt containing two");
  await settled(a.daemon, onA, "awaiting-approval");
  await settled(a.daemon, denied, "awaiting-approval");
  await settled(b.daemon, onB, "awaiting-approval");

  await page.goto(`${appURL}/#/inbox`);
  const item = (h: string, s: string) => `[data-testid=inbox-item][data-host="${h}"][data-session="${s}"]`;
  for (const [h, s] of [
    [a.hostID, onA],
    [a.hostID, denied],
    [b.hostID, onB],
  ])
    await page.waitForSelector(item(h, s), { timeout: 30_000 });
  // Each entry names its host; the badge counts every host.
  expect(await page.textContent(`${item(a.hostID, onA)} [data-testid=inbox-item-host]`)).toContain(a.hostID.slice(0, 8));
  expect(await page.textContent(`${item(b.hostID, onB)} [data-testid=inbox-item-host]`)).toBe(`${hostname()} · ${b.hostID.slice(0, 8)}`);
  expect(await page.textContent(`${item(a.hostID, onA)}`)).toContain("alpha.txt");
  await page.waitForFunction(() => document.title.startsWith("(3) "));

  // Answered in place, each over its own host's channel.
  await page.click(`${item(b.hostID, onB)} [data-testid=allow]`);
  await page.click(`${item(a.hostID, onA)} [data-testid=allow]`);
  // Denied with a reason the agent gets.
  await page.click(`${item(a.hostID, denied)} [data-testid=deny]`);
  await page.fill(`${item(a.hostID, denied)} [data-testid=deny-reason]`, "not on this machine");
  await page.click(`${item(a.hostID, denied)} [data-testid=send-deny]`);

  // The agents go on to the end of their turns.
  await settled(b.daemon, onB, "awaiting-input");
  await settled(a.daemon, onA, "awaiting-input");
  await settled(a.daemon, denied, "awaiting-input");
  await page.waitForSelector("[data-testid=inbox-item]", { state: "detached", timeout: 30_000 });
  expect(await page.textContent("[data-testid=inbox-count]")).toBe("0");
  // No session was ever opened.
  expect(new URL(page.url()).hash).toBe("#/inbox");
  expect(await page.$("[data-testid=session-pane]")).toBeNull();

  // A new request on A, then A stops: its entry says unreachable, not "nothing pending".
  const later = session(a.daemon, a.project, "write gamma.txt containing three");
  await settled(a.daemon, later, "awaiting-approval");
  await page.waitForSelector(item(a.hostID, later), { timeout: 30_000 });
  await page.waitForFunction(() => document.title.startsWith("(1) "));
  const t0 = Date.now();
  await a.daemon.stop();
  daemons.splice(daemons.indexOf(a.daemon), 1);
  const gone = `[data-testid=inbox-host][data-host="${a.hostID}"][data-state=unreachable]`;
  await page.waitForSelector(gone, { timeout: 30_000 });
  console.log(`host A shown unreachable ${Date.now() - t0} ms after its stop began`);
  expect(await page.textContent(gone)).toContain("unreachable");
  expect(await page.textContent("[data-testid=inbox]")).not.toContain("Nothing waits for you.");
  // Its last-known request is withdrawn from the list and the badge (it may be answered elsewhere).
  expect(await page.$(item(a.hostID, later))).toBeNull();
  await page.waitForFunction(() => !/^\(\d+\) /.test(document.title));
  // B, still in reach, is not marked.
  expect(await page.$(`[data-testid=inbox-host][data-host="${b.hostID}"]`)).toBeNull();
  expect(pageErrors(page)).toEqual([]);
});
