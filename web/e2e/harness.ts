/** Test support for the browser suite: start `nucleic demo` / `nucleic serve`, launch Debian's
 *  Chromium through playwright-core, sign a page in, and read what the host did. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { type Browser, type BrowserContext, type Page, chromium } from "playwright-core";

export const WEB = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const REPO = path.dirname(WEB);
/** Where cargo put the binaries: `CARGO_TARGET_DIR` when set (one per worktree), else `target/`. */
export const TARGET = process.env.CARGO_TARGET_DIR ?? path.join(REPO, "target");
export const NUCLEIC = process.env.NUCLEIC_BIN ?? path.join(TARGET, "debug", "nucleic");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const OUT = path.join(WEB, "e2e", "out");
mkdirSync(OUT, { recursive: true });

export interface Demo {
  url: string;
  home: string;
  repo: string;
  projectID: string;
  port: number;
  sessions: Array<{ sessionID: string; title?: string }>;
  process: ChildProcess;
  /** The origin, e.g. http://127.0.0.1:1234 */
  origin: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
  log(): string;
}

/** Reads the first JSON line a child prints. */
function firstJsonLine(child: ChildProcess, what: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`${what} printed no JSON line in ${timeoutMs} ms`)), timeoutMs);
    child.stdout?.on("data", (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split("\n")) {
        const t = line.trim();
        if (t.startsWith("{")) {
          try {
            const v = JSON.parse(t) as Record<string, unknown>;
            clearTimeout(timer);
            resolve(v);
            return;
          } catch {
            /* partial line */
          }
        }
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before printing its JSON line`));
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`${what} could not start: ${e.message}`));
    });
  });
}

function track(child: ChildProcess): () => string {
  let log = "";
  child.stderr?.on("data", (d: Buffer) => {
    log += d.toString();
  });
  return () => log;
}

function stopper(child: ChildProcess) {
  return (signal: NodeJS.Signals = "SIGTERM") =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      child.kill(signal);
    });
}

/** Starts `nucleic demo --json` (three simulated sessions unless `noSessions`). */
export async function startDemo(
  opts: { noSessions?: boolean; home?: string; port?: number; env?: Record<string, string>; args?: string[] } = {},
): Promise<Demo> {
  const args = ["demo", "--json", "--port", String(opts.port ?? 0), ...(opts.args ?? [])];
  if (opts.noSessions) args.push("--no-sessions");
  if (opts.home) args.push("--home", opts.home);
  const child = spawn(NUCLEIC, args, { env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
  const log = track(child);
  let info: Record<string, unknown>;
  try {
    info = await firstJsonLine(child, "nucleic demo");
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${log()}`);
  }
  const url = String(info.url);
  return {
    url,
    home: String(info.home),
    repo: String(info.repo),
    projectID: String(info.projectID),
    port: Number(info.port),
    sessions: (info.sessions as Demo["sessions"]) ?? [],
    process: child,
    origin: new URL(url).origin,
    stop: stopper(child),
    log,
  };
}

/** Starts `nucleic serve` on a given home and port (e.g. to bring a host back). */
export async function startServe(home: string, port: number, env: Record<string, string> = {}) {
  const child = spawn(NUCLEIC, ["serve", "--bind", `127.0.0.1:${port}`, "--home", home], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = track(child);
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/health`);
      if (r.status === 200 || r.status === 401) break;
    } catch {
      /* not yet */
    }
    if (child.exitCode !== null) throw new Error(`nucleic serve exited: ${log()}`);
    if (Date.now() > deadline) throw new Error(`nucleic serve did not come up: ${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { process: child, stop: stopper(child), log };
}

/** Debian's Chromium, headless; `extraArgs` for a test's own flags. */
export function launch(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
      ...extraArgs,
    ],
  });
}

/** A signed-in page: a fresh context (own cookies) named `name` (shown as who answered). */
export async function signedInPage(
  browser: Browser,
  loginURL: string,
  opts: { width?: number; height?: number; name?: string; slowResolutions?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    deviceScaleFactor: 1,
  });
  // CI has two cores shared with the host and its agents: be patient, not flaky.
  context.setDefaultTimeout(60_000);
  if (opts.name) {
    const name = opts.name;
    await context.addInitScript((n: string) => localStorage.setItem("nucleic.clientName", n), name);
  }
  const page = await context.newPage();
  if (opts.slowResolutions) {
    // A slow link: from an approval's resolution on, messages reach this page 1.5 s late (in
    // order — the protocol never reorders).
    await page.routeWebSocket(/\/ws$/, (ws) => {
      const server = ws.connectToServer();
      let chain = Promise.resolve();
      server.onMessage((m) => {
        const text = typeof m === "string" ? m : m.toString();
        const late = text.includes('"approvalResolved"');
        chain = chain.then(() => (late ? new Promise((r) => setTimeout(r, 1500)) : undefined)).then(() => ws.send(text));
      });
    });
  }
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // Kept for diagnosis when a page does not come online (see waitOnline).
  const consoleLines: string[] = [];
  page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  (page as unknown as { consoleLines: string[] }).consoleLines = consoleLines;
  (page as unknown as { errors: string[] }).errors = errors;
  await page.goto(loginURL);
  await waitOnline(page);
  return { context, page };
}

/** A fresh one-time sign-in URL from the host (the demo's first one is already used). */
export async function loginLink(demo: { home: string; origin: string }): Promise<string> {
  const token = execFileSync("cat", [path.join(demo.home, "token")]).toString().trim();
  const r = await fetch(`${demo.origin}/api/login-link`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, Host: new URL(demo.origin).host },
  });
  if (!r.ok) throw new Error(`login-link: ${r.status} ${await r.text()}`);
  const body = (await r.json()) as { url: string };
  return body.url;
}

/** Runs git in `cwd` and returns its stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd }).toString();
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Page errors (uncaught exceptions) collected since the page opened. */
export function pageErrors(page: Page): string[] {
  return (page as unknown as { errors: string[] }).errors ?? [];
}

/** A plain-JSONL Nucleic transcript of `n` events (importable as a read-only session). */
export function longTranscript(n: number): string {
  const lines: string[] = [];
  const at = "2026-11-29T00:00:00Z";
  let seq = 0;
  const push = (kind: object) => {
    seq += 1;
    lines.push(JSON.stringify({ seq, at, sessionID: "long-1", backend: "claudeCode", kind }));
  };
  push({ type: "sessionCreated", title: "A very long session", cwd: "/tmp/long" });
  let i = 0;
  while (seq < n) {
    const left = n - seq;
    if (left >= 4) {
      push({ type: "assistantText", isPartial: false, messageID: `m${i}`, text: `Step **${i}**: checking \`src/file${i}.rs\`.` });
      push({ type: "toolCallCompleted", toolCallID: `t${i}`, name: "Bash", input: { command: `cargo test -p crate${i % 10}` } });
      push({ type: "toolResult", toolCallID: `t${i}`, content: `test result: ok. ${i} passed`, isError: false });
      push({ type: "userText", isPartial: false, messageID: `u${i}`, text: `next ${i}` });
    } else push({ type: "stderr", text: `line ${i}` });
    i++;
  }
  return `${lines.join("\n")}\n`;
}

/** The pinned Claude Code CLI installed by scripts/install-agents.sh. */
export function pinnedClaude(): string {
  return pinned("claude-code-2.1.332", "claude");
}

/** An executable of scripts/install-agents.sh's cache (same lookup as testkit::agents). */
function pinned(dir: string, bin: string): string {
  const cache = process.env.NUCLEIC_AGENT_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "nucleic", "agents");
  const exe = path.join(cache, dir, "node_modules", ".bin", bin);
  if (!existsSync(exe)) throw new Error(`the pinned ${bin} is not installed at ${exe}: run scripts/install-agents.sh`);
  return exe;
}

/** Starts the Rust mock Anthropic server (crates/testkit, bin mock-anthropic). */
export async function startMockAnthropic(): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(path.join(TARGET, "debug", "mock-anthropic"), [], { stdio: ["ignore", "pipe", "pipe"] });
  const log = track(child);
  const info = await firstJsonLine(child, "mock-anthropic").catch((e) => {
    throw new Error(`${(e as Error).message}\n${log()}`);
  });
  return { url: String(info.url), stop: stopper(child) };
}

/** Starts the Rust mock OpenAI Responses server (crates/testkit, bin mock-openai). */
export async function startMockOpenAi(): Promise<{ url: string; config: string; keyEnv: string; stop(): Promise<void> }> {
  const child = spawn(path.join(TARGET, "debug", "mock-openai"), [], { stdio: ["ignore", "pipe", "pipe"] });
  const log = track(child);
  const info = await firstJsonLine(child, "mock-openai").catch((e) => {
    throw new Error(`${(e as Error).message}\n${log()}`);
  });
  return { url: String(info.url), config: String(info.config), keyEnv: String(info.keyEnv), stop: stopper(child) };
}

/** Waits until the page is online; on timeout says what the page and its console saw. */
export async function waitOnline(page: Page, timeout = 60_000): Promise<void> {
  try {
    await page.waitForSelector(".shell[data-link=online]", { timeout });
  } catch (e) {
    const link = await page.getAttribute(".shell", "data-link").catch(() => null);
    const lines = ((page as unknown as { consoleLines?: string[] }).consoleLines ?? []).slice(-20).join("\n");
    throw new Error(`${e}\nlink state: ${link}; url: ${page.url()}\nconsole:\n${lines}`);
  }
}

/** A pull request the mock GitHub created (crates/testkit, bin mock-github). */
export interface CreatedPullRequest {
  number: number;
  url: string;
  title: string;
  head: string;
  base: string;
  draft: boolean;
}

/** Starts the Rust mock of the GitHub API `gh pr create` calls (TLS, self-signed, in `dir`). */
export async function startMockGitHub(dir: string): Promise<{
  host: string;
  repo: string;
  caFile: string;
  token: string;
  created(): CreatedPullRequest[];
  stop(): Promise<void>;
}> {
  const child = spawn(path.join(TARGET, "debug", "mock-github"), ["--dir", dir], { stdio: ["ignore", "pipe", "pipe"] });
  const log = track(child);
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const info = await firstJsonLine(child, "mock-github").catch((e) => {
    throw new Error(`${(e as Error).message}\n${log()}`);
  });
  const created = () =>
    out
      .split("\n")
      .filter((l) => l.includes('"created"'))
      .map((l) => (JSON.parse(l) as { created: CreatedPullRequest }).created);
  return { host: String(info.host), repo: String(info.repo), caFile: String(info.caFile), token: String(info.token), created, stop: stopper(child) };
}
