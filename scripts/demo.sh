#!/usr/bin/env bash
# The main job on a fresh machine, no API key needed: builds the web cockpit and `nucleic`,
# then runs `nucleic demo` — a host on a temporary demo repository with three simulated-agent
# sessions — and prints the cockpit's URL with a one-time sign-in token. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-web.sh
cargo build --locked -p nucleic-cli
exec target/debug/nucleic demo "$@"
