#!/usr/bin/env bash
# Runs every test. Installs the pinned agent CLIs first (they are part of the tests, not optional).
# Tests that start an agent CLI re-run themselves in a loopback-only network namespace
# (unshare --net), which needs root, util-linux and iproute2.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-agents.sh

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast "$@"
else
  cargo test --workspace --locked --no-fail-fast "$@"
fi
