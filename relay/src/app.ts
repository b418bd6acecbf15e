// The cockpit's app shell (web/dist, Workers static assets) served from the relay's own origin,
// the pairing link's default. Only for GET/HEAD outside /v1/: a WebSocket upgrade, another
// method or a room path never reaches the assets, and an asset request never reaches a room.
// Every response carries the daemon's hardening headers (crates/server/src/headers.rs), with
// the relay's own WebSocket origin in connect-src, and the daemon's caching (crates/server/src/web.rs).

/** The daemon's policy, connect-src aside (kept equal by test/app.test.ts against a live daemon). */
const POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src CONNECT",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const IMMUTABLE = "public, max-age=31536000, immutable";
const NO_CACHE = "no-cache";

/** Request headers an asset lookup may use; nothing else (no cookies, no credentials) is passed. */
const FORWARDED = ["accept", "accept-encoding", "if-none-match", "if-modified-since", "range"];

/** A connect-src source from APP_CONNECT_SRC: a ws(s):// or http(s):// origin, nothing that could
 *  end the directive or the header. */
const EXTRA_SOURCE = /^(wss?|https?):\/\/[A-Za-z0-9.\-[\]:*]+$/;

/** The Content-Security-Policy for a page served at `url`: connections to this origin, its
 *  WebSocket twin (the relay itself), and the extra sources named in `extra` (space-separated). */
export function contentSecurityPolicy(url: URL, extra = ""): string {
  const ws = `${url.protocol === "https:" ? "wss:" : "ws:"}//${url.host}`;
  const more = extra.split(/\s+/).filter((s) => EXTRA_SOURCE.test(s));
  return POLICY.replace("CONNECT", ["'self'", ws, ...more].join(" "));
}

function plain(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(`${text}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8", ...headers } });
}

/** Serves the app shell for `request` (a path outside /v1/) from `assets`, or refuses it. */
export async function serveApp(request: Request, url: URL, assets: Fetcher | undefined, extraConnect?: string): Promise<Response> {
  if (request.headers.get("Upgrade")) return plain(426, "WebSockets are served under /v1/rooms/ only");
  if (request.method !== "GET" && request.method !== "HEAD") return plain(405, "method not allowed", { allow: "GET, HEAD" });
  if (!assets) return plain(404, "this relay does not serve the app (no [assets] in wrangler.toml)");
  const headers = new Headers();
  for (const name of FORWARDED) {
    const v = request.headers.get(name);
    if (v !== null) headers.set(name, v);
  }
  let found = await assets.fetch(new Request(url, { method: request.method, headers }));
  // App routes have no dot (the daemon's rule): they get the shell; a missing file stays 404.
  if (found.status === 404 && !url.pathname.slice(url.pathname.lastIndexOf("/")).includes(".")) {
    found = await assets.fetch(new Request(new URL("/", url), { method: request.method, headers }));
  }
  const response = new Response(found.body, found);
  const h = response.headers;
  h.set("content-security-policy", contentSecurityPolicy(url, extraConnect));
  h.set("x-frame-options", "DENY");
  h.set("referrer-policy", "no-referrer");
  h.set("x-content-type-options", "nosniff");
  if (found.ok || found.status === 304) {
    h.set("cache-control", url.pathname.startsWith("/assets/") ? IMMUTABLE : NO_CACHE);
    if (url.pathname === "/sw.js") h.set("service-worker-allowed", "/");
  }
  return response;
}
