// Builds the cockpit into web/dist, which crates/server embeds into the `nucleic` binary; the
// service worker (src/sw.ts) becomes /sw.js with the build's file list and id written in.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";

import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

/** The protocol version the app speaks (from the generated bindings). */
function protocolVersion(): number {
  const gen = readFileSync(new URL("./src/protocol.gen.ts", import.meta.url), "utf8");
  const m = /PROTOCOL_VERSION\s*=\s*(\d+)/.exec(gen);
  if (!m) throw new Error("PROTOCOL_VERSION not found in src/protocol.gen.ts");
  return Number(m[1]);
}

/** The files of `public/` (copied as they are: the manifest and icons), as URL paths. */
function publicFiles(): Array<{ path: string; data: Buffer }> {
  const root = new URL("./public/", import.meta.url);
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const rel = `${e.parentPath}/${e.name}`.slice(decodeURIComponent(root.pathname).length).replace(/^\/+/, "");
      return { path: rel, data: readFileSync(new URL(rel, root)) };
    });
}

/** Writes the precache list (every emitted file but the worker) and a build id derived from
 *  their contents into sw.js, so a new build is a new worker and a new cache. */
function serviceWorkerManifest(): Plugin {
  return {
    name: "nucleic-sw-manifest",
    apply: "build",
    generateBundle(_options, bundle) {
      const sw = bundle["sw.js"];
      if (!sw || sw.type !== "chunk") throw new Error("the build has no sw.js chunk");
      const files = Object.keys(bundle)
        .filter((f) => f !== "sw.js" && f !== "index.html")
        .sort();
      const hash = createHash("sha256");
      for (const f of files) {
        const item = bundle[f];
        hash.update(f);
        hash.update(item.type === "chunk" ? item.code : item.source);
      }
      for (const f of publicFiles().sort((a, b) => a.path.localeCompare(b.path))) {
        files.push(f.path);
        hash.update(f.path);
        hash.update(f.data);
      }
      const index = bundle["index.html"];
      if (index && index.type === "asset") hash.update(index.source);
      const build = hash.digest("hex").slice(0, 16);
      const list = ["/", ...files.map((f) => `/${f}`)];
      const put = (placeholder: string, value: string) => {
        if (!sw.code.includes(placeholder)) throw new Error(`sw.js lost its ${placeholder} placeholder`);
        sw.code = sw.code.replace(placeholder, value);
      };
      put("__NUCLEIC_PRECACHE__", JSON.stringify(JSON.stringify(list)).slice(1, -1));
      put("__NUCLEIC_BUILD__", build);
      put("__NUCLEIC_PROTOCOL__", String(protocolVersion()));
    },
  };
}

export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  resolve: {
    alias: {
      react: "preact/compat",
      "react-dom": "preact/compat",
      "react/jsx-runtime": "preact/jsx-runtime",
    },
  },
  plugins: [serviceWorkerManifest()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 600,
    rollupOptions: {
      input: { main: "index.html", sw: "src/sw.ts" },
      output: {
        entryFileNames: (chunk) => (chunk.name === "sw" ? "sw.js" : "assets/[name]-[hash].js"),
      },
    },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
  },
});
