/** web/dist on loopback: the app shell served from somewhere that is not a host (as a phone
 *  that paired through the relay loads it). */
import { createServer, type Server } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { AddressInfo } from "node:net";

import { WEB } from "./harness";

export const DIST = path.join(WEB, "dist");
const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json", ".webmanifest": "application/manifest+json" };

/** Starts the server; `url` is its origin. */
export async function staticApp(): Promise<{ server: Server; url: string }> {
  if (!existsSync(path.join(DIST, "index.html"))) throw new Error("web/dist is not built: npm --prefix web run build");
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    let file = path.join(DIST, path.normalize(url.pathname).replace(/^(\.\.[/\\])+/, ""));
    if (!file.startsWith(DIST) || !existsSync(file) || url.pathname === "/") file = path.join(DIST, "index.html");
    res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
