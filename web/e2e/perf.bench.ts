/** Cockpit performance figures in real Chromium against a real host (docs/benchmarks.md):
 *  initial load with 50 sessions, first paint of a 20,000-event transcript (against a
 *  baseline of receiving and parsing the same events in the same page), scroll smoothness of
 *  the virtualized transcript, and the compressed bundle size. Prints a table; writes
 *  e2e/out/perf.json. Run with `npm --prefix web run bench` after `scripts/build-web.sh` and
 *  `cargo build -p nucleic-cli`. */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";

import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser } from "playwright-core";

import { type Demo, OUT, WEB, launch, loginLink, longTranscript, signedInPage, startDemo, tempDir } from "./harness";

let browser: Browser;
let demo: Demo;
const figures: Record<string, unknown> = {};
const RUNS = 5;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

beforeAll(async () => {
  browser = await launch();
  demo = await startDemo({ noSessions: true });
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  writeFileSync(path.join(OUT, "perf.json"), JSON.stringify(figures, null, 2));
  console.log(JSON.stringify(figures, null, 2));
});

it("bundle size", () => {
  const dir = path.join(WEB, "dist", "assets");
  let raw = 0;
  let gz = 0;
  let initialGz = 0;
  for (const f of readdirSync(dir)) {
    const b = readFileSync(path.join(dir, f));
    const z = gzipSync(b, { level: 9 }).length;
    raw += b.length;
    gz += z;
    // What the first page load fetches (the tool pane's chunk loads when it is opened).
    if (f.startsWith("index-")) initialGz += z;
  }
  figures.bundle = { rawKB: Math.round(raw / 1024), gzipKB: Math.round(gz / 1024), initialGzipKB: Math.round(initialGz / 1024) };
});

it("initial load with 50 sessions", async () => {
  const { context, page } = await signedInPage(browser, demo.url);
  // 50 sessions, each stopped once created (the host runs at most 20 agents at once).
  for (let i = 0; i < 50; i++) {
    await page.evaluate(async ([pid, n]) => {
      const store = (window as any).nucleic;
      const reply = await store.request({ type: "intent", intent: { kind: "newSession", projectID: pid, backend: "simulated", prompt: `think about task ${n}` } });
      await store.request({ type: "intent", intent: { kind: "stop", sessionID: reply.result.sessionID } });
    }, [demo.projectID, i] as const);
  }
  await context.close();
  const cold: number[] = [];
  const warm: number[] = [];
  const allRows = () => document.querySelectorAll("[data-testid=session-row]").length >= 50;
  for (let run = 0; run < RUNS; run++) {
    // Cold: a new browser profile opens the sign-in link; until all 50 sessions are listed.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    const link = await loginLink(demo);
    let t0 = Date.now();
    await page.goto(link);
    await page.waitForFunction(allRows, null, { timeout: 60_000 });
    cold.push(Date.now() - t0);
    // Warm: a new tab of the same profile (assets cached, cookie set).
    const tab = await ctx.newPage();
    t0 = Date.now();
    await tab.goto(`${demo.origin}/`);
    await tab.waitForFunction(allRows, null, { timeout: 60_000 });
    warm.push(Date.now() - t0);
    await ctx.close();
  }
  figures.load50 = { coldMedianMs: median(cold), coldRunsMs: cold, warmMedianMs: median(warm), warmRunsMs: warm };
  expect(cold.length).toBe(RUNS);
});

it("20,000-event transcript: first paint, full load, scroll", async () => {
  const file = path.join(tempDir("nucleic-bench-"), "long.jsonl");
  writeFileSync(file, longTranscript(20_000));
  const { context, page } = await signedInPage(browser, await loginLink(demo));
  const reply = await page.evaluate((p) => (window as any).nucleic.request({ type: "intent", intent: { kind: "import", path: p } }), file);
  const id = (reply as { result: { sessionID: string } }).result.sessionID;
  await context.close();

  const first: number[] = [];
  const full: number[] = [];
  const baseline: number[] = [];
  const baselineBatched: number[] = [];
  let scroll: Record<string, number> = {};
  for (let run = 0; run < RUNS; run++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    await page.goto(await loginLink(demo));
    await page.waitForSelector(".shell[data-link=online]");
    // Baselines in the same page: a bare WebSocket receiving the same 20,000 events and
    // JSON.parse-ing them, as single `event` frames and as `events` batches.
    for (const batched of [false, true]) (batched ? baselineBatched : baseline).push(
      await page.evaluate(
        ([sid, batched]) =>
          new Promise<number>((resolve) => {
            const ws = new WebSocket(`ws://${location.host}/ws`);
            let n = 0;
            let t0 = 0;
            ws.onopen = () => {
              ws.send(JSON.stringify({ type: "hello", clientID: `bench-${Math.random()}`, clientName: "bench", protocolVersion: 1, features: batched ? ["eventBatches"] : [] }));
              t0 = performance.now();
              ws.send(JSON.stringify({ type: "subscribe", messageID: "b1", sessionID: sid, fromSeq: 1, verbosity: "full" }));
            };
            ws.onmessage = (m) => {
              const msg = JSON.parse(m.data);
              n += msg.type === "event" ? 1 : msg.type === "events" ? msg.events.length : 0;
              if (n === 20000) {
                resolve(performance.now() - t0);
                ws.close();
              }
            };
          }),
        [id, batched] as const,
      ),
    );
    const t0 = Date.now();
    await page.goto(`${demo.origin}/#/s/${id}`);
    await page.waitForSelector("[data-testid=transcript] .row-wrap");
    first.push(Date.now() - t0);
    await page.waitForFunction(() => document.querySelector("[data-testid=transcript]")?.getAttribute("data-last-seq") === "20000", null, { timeout: 60_000 });
    full.push(Date.now() - t0);
    if (run === RUNS - 1) {
      scroll = await page.evaluate(
        () =>
          new Promise<Record<string, number>>((resolve) => {
            const el = document.querySelector("[data-testid=transcript]") as HTMLElement;
            el.scrollTop = 0;
            const frames: number[] = [];
            let last = performance.now();
            const end = last + 3000;
            const step = (now: number) => {
              frames.push(now - last);
              last = now;
              el.scrollTop += 600;
              if (now < end) requestAnimationFrame(step);
              else {
                frames.sort((a, b) => a - b);
                resolve({
                  frames: frames.length,
                  p50ms: Math.round(frames[Math.floor(frames.length * 0.5)] * 10) / 10,
                  p95ms: Math.round(frames[Math.floor(frames.length * 0.95)] * 10) / 10,
                  over50msPct: Math.round((frames.filter((f) => f > 50).length / frames.length) * 1000) / 10,
                  scrolledPx: el.scrollTop,
                });
              }
            };
            requestAnimationFrame(step);
          }),
      );
    }
    await ctx.close();
  }
  figures.transcript20k = {
    firstPaintMedianMs: median(first),
    fullyLoadedMedianMs: median(full),
    baselineSingleFramesMedianMs: Math.round(median(baseline)),
    baselineBatchedMedianMs: Math.round(median(baselineBatched)),
    fullVsBatchedBaseline: Math.round((median(full) / median(baselineBatched)) * 100) / 100,
    scroll,
  };
});
