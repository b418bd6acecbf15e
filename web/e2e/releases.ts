/** Test support for app updates: builds other releases of the cockpit from this checkout (a copy
 *  of web/ with a release's change applied, built by the same vite config, so each gets its own
 *  asset hashes, precache list and build id), and a static app host that serves one of them while
 *  passing the API and the live protocol through to a real `nucleic` host — as a deployment that
 *  serves the app apart from the host does (the relay's `--app-url`). Switching the served build
 *  is a new release going live. */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";

import { WEB, tempDir } from "./harness";

export interface Release {
  /** The label the release writes on `<html data-release>` (and its tool pane's chunk). */
  label: string;
  dist: string;
}

/** Builds a release of the app: `label` changes the entry and the lazily loaded tool pane (as a
 *  real release changes code); `protocol` makes it speak another protocol version (an older
 *  app than the host). */
export function buildRelease(label: string, opts: { protocol?: number } = {}): Release {
  const root = tempDir(`nucleic-release-${label}-`);
  for (const f of ["index.html", "src", "public", "vite.config.ts", "tsconfig.json", "package.json"]) {
    cpSync(path.join(WEB, f), path.join(root, f), { recursive: true });
  }
  symlinkSync(path.join(WEB, "node_modules"), path.join(root, "node_modules"), "dir");
  const edit = (file: string, f: (s: string) => string) => {
    const p = path.join(root, file);
    writeFileSync(p, f(readFileSync(p, "utf8")));
  };
  edit("src/main.tsx", (s) => `${s}\ndocument.documentElement.dataset.release = ${JSON.stringify(label)};\n`);
  edit(
    "src/components/ToolPane.tsx",
    (s) => `${s}\nif (typeof document !== "undefined") document.documentElement.dataset.toolPane = ${JSON.stringify(label)};\n`,
  );
  if (opts.protocol !== undefined) {
    const version = opts.protocol;
    edit("src/protocol.gen.ts", (s) => {
      const next = s.replace(/PROTOCOL_VERSION = \d+;/, `PROTOCOL_VERSION = ${version};`);
      if (next === s) throw new Error("PROTOCOL_VERSION not found in protocol.gen.ts");
      return next;
    });
  }
  const dist = path.join(root, "dist");
  execFileSync(process.execPath, [path.join(WEB, "node_modules", "vite", "bin", "vite.js"), "build", "--logLevel", "error", "--outDir", dist], {
    cwd: root,
    stdio: ["ignore", "ignore", "pipe"],
  });
  return { label, dist };
}

/** The build id written into a release's sw.js (vite.config.ts). */
export function buildID(release: Release): string {
  const sw = readFileSync(path.join(release.dist, "sw.js"), "utf8");
  const m = /"([0-9a-f]{16})"/.exec(sw);
  if (!m) throw new Error(`no build id in ${release.dist}/sw.js`);
  return m[1];
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

export interface AppHost {
  /** The origin pages open (the app and, passed through, the host's API and /ws). */
  origin: string;
  /** Serves this release from now on (a deploy). */
  serve(release: Release): void;
  /** Paths requested so far, in order (tests check what the worker fetched). */
  requests: string[];
  close(): Promise<void>;
}

/** Serves `release` statically (the host's caching rules: `sw.js` and pages revalidated, hashed
 *  assets immutable) and passes `/api/*` and `/ws` through to the host at `hostOrigin`, with the
 *  Host and Origin headers the host expects of its own pages. */
export async function startAppHost(hostOrigin: string, release: Release): Promise<AppHost> {
  const upstream = new URL(hostOrigin);
  let current = release;
  const requests: string[] = [];
  let origin = "";
  const rewrite = (headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders => {
    const out: http.OutgoingHttpHeaders = { ...headers, host: upstream.host };
    if (headers.origin) out.origin = upstream.origin;
    return out;
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://app");
    requests.push(url.pathname);
    if (url.pathname === "/ws" || url.pathname.startsWith("/api/")) {
      const up = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: rewrite(req.headers) },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on("error", (e) => {
        res.writeHead(502);
        res.end(`upstream: ${e.message}`);
      });
      req.pipe(up);
      return;
    }
    const rel = decodeURIComponent(url.pathname).replace(/^\/+/, "");
    let file = path.join(current.dist, rel || "index.html");
    if (!file.startsWith(current.dist) || !existsSync(file) || !statSync(file).isFile()) {
      // App routes have no dot; a missing file does.
      if (rel.includes(".")) {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found\n");
        return;
      }
      file = path.join(current.dist, "index.html");
    }
    const headers: http.OutgoingHttpHeaders = {
      "content-type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "cache-control": rel.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    };
    if (rel === "sw.js") headers["service-worker-allowed"] = "/";
    res.writeHead(200, headers);
    res.end(readFileSync(file));
  });
  server.on("upgrade", (req, socket, head) => {
    const up = net.connect(Number(upstream.port), upstream.hostname, () => {
      const headers = rewrite(req.headers);
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (const [k, v] of Object.entries(headers)) {
        for (const value of Array.isArray(v) ? v : [v]) if (value !== undefined) lines.push(`${k}: ${value}`);
      }
      up.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    const end = () => {
      up.destroy();
      socket.destroy();
    };
    up.on("error", end);
    socket.on("error", end);
    up.on("close", end);
    socket.on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    requests,
    serve(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
