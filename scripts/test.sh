#!/usr/bin/env bash
# Runs every test. Installs the pinned agent CLIs first (they are part of the tests, not optional)
# and builds the web cockpit (the binary embeds it). Tests that start an agent CLI, and the whole
# browser suite, run in a loopback-only network namespace (unshare --net), which needs root,
# util-linux and iproute2; the browser suite needs Chromium at /usr/bin/chromium (or $CHROMIUM).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-agents.sh
scripts/build-web.sh

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast "$@"
else
  cargo test --workspace --locked --no-fail-fast "$@"
fi

# The cockpit: unit tests (vitest), then the browser suite against the real `nucleic` binary.
cargo build --locked -p nucleic-cli -p nucleic-testkit --bins
npm --prefix web test --silent
npm --prefix web run e2e --silent
