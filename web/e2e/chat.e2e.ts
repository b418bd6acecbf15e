/** The chat bridges in the cockpit: a bridge (here a client with the host's token speaking as
 *  `nucleic chat` does) reports its paired user; the devices sheet lists the bridge and the user,
 *  and "Unpair" there cuts the user off by effect — a connection acting for them is refused at
 *  hello, and one already open is closed. A bridge whose bot token was refused shows it. */
import { readFileSync } from "node:fs";
import path from "node:path";

import type { Browser } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";

import { launch, signedInPage, startDemo } from "./harness";

let browser: Browser;
beforeEach(async () => {
  browser = await launch();
});
afterEach(async () => {
  await browser?.close();
});

/** A token connection (the bridge's), optionally acting for `person`; resolves with the first
 *  reply to hello (welcome or an error) and keeps the socket for more. */
function connect(origin: string, token: string, person?: string): Promise<{ ws: WebSocket; first: Record<string, unknown>; next(): Promise<Record<string, unknown>>; closed: Promise<number> }> {
  const ws = new WebSocket(`${origin.replace("http", "ws")}/ws`, { headers: { Authorization: `Bearer ${token}` } });
  const queue: Record<string, unknown>[] = [];
  const waiters: Array<(m: Record<string, unknown>) => void> = [];
  ws.on("message", (data) => {
    const m = JSON.parse(String(data)) as Record<string, unknown>;
    if (m.type === "sessionChanged") return;
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  const next = () => new Promise<Record<string, unknown>>((resolve) => (queue.length ? resolve(queue.shift()!) : waiters.push(resolve)));
  const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.on("error", reject);
    ws.on("open", () => {
      const hello: Record<string, unknown> = { type: "hello", clientID: `bridge-${person ?? "own"}`, clientName: "chat bridge", protocolVersion: 1 };
      if (person) hello.onBehalfOf = person;
      ws.send(JSON.stringify(hello));
      void next().then((first) => resolve({ ws, first, next, closed }));
    });
  });
}

const report = (state: string, pairedAt: number, lastError?: string) => ({
  type: "intent",
  messageID: `r${pairedAt}${state}`,
  intent: {
    kind: "reportChatBridge",
    report: { bridge: "telegram:7001", state, ...(lastError ? { lastError } : {}), paired: [{ person: "telegram:42", chat: "42", pairedAt }], strangersIgnored: 3, outboxQueued: 0 },
  },
});

describe("chat bridges in the cockpit", () => {
  it("lists a bridge's users and unpairs one: the host stops acting for them at once", async () => {
    const demo = await startDemo({ noSessions: true });
    try {
      const token = readFileSync(path.join(demo.home, "token"), "utf8").trim();
      const bridge = await connect(demo.origin, token);
      expect(bridge.first.type).toBe("welcome");
      bridge.ws.send(JSON.stringify(report("running", Date.now() - 1000)));
      expect((await bridge.next()).type).toBe("ack");
      const acting = await connect(demo.origin, token, "telegram:42");
      expect(acting.first.type).toBe("welcome");

      const { context, page } = await signedInPage(browser, demo.url, { width: 1280, name: "desk" });
      await page.click("[data-testid=open-devices]");
      await page.waitForSelector("[data-testid=chat-bridge][data-state=running]");
      expect(await page.textContent("[data-testid=chat-bridge]")).toContain("3 messages from strangers ignored");
      expect(await page.textContent("[data-testid=chat-person]")).toContain("telegram:42");
      page.once("dialog", (d) => void d.accept());
      await page.click("[data-testid=unpair-chat-person]");
      await page.waitForSelector("[data-testid=chat-person]", { state: "detached" });

      // By effect: the open connection is closed, a new one refused at hello.
      expect(await acting.closed).toBeGreaterThanOrEqual(4000);
      const again = await connect(demo.origin, token, "telegram:42");
      expect(again.first.type).toBe("error");
      expect(String(again.first.message)).toContain("was unpaired");

      // A bridge whose bot token was refused says so in the sheet.
      bridge.ws.send(JSON.stringify(report("refused", Date.now() - 1000, "Telegram refused the bot token (401)")));
      await bridge.next();
      await page.click("[data-testid=close-devices]");
      await page.click("[data-testid=open-devices]");
      await page.waitForSelector("[data-testid=chat-bridge][data-state=refused]");
      expect(await page.textContent("[data-testid=chat-bridge-error]")).toContain("401");
      bridge.ws.close();
      await context.close();
    } finally {
      await demo.stop();
    }
  });
});
