#!/usr/bin/env bash
# Builds the web cockpit (web/ → web/dist) with the npm registry's packages pinned by
# web/package-lock.json. crates/server embeds web/dist into the `nucleic` binary at compile
# time. web/dist is committed, so `cargo install` needs no npm: run this after changing web/ and
# commit web/dist with the change (scripts/test.sh checks, under CI, that a build reproduces it).
set -euo pipefail
cd "$(dirname "$0")/../web"
command -v npm >/dev/null || { echo "build-web: npm is required (Node.js 20+)" >&2; exit 1; }
# Reinstall only when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.nucleic-lock; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.nucleic-lock
fi
npm run build --silent
