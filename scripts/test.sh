#!/usr/bin/env bash
# Runs every test. Installs the pinned agent CLIs first (they are part of the tests, not optional)
# and builds the web cockpit (the binary embeds it). Tests that start an agent CLI, and the whole
# browser suite, run in a loopback-only network namespace (unshare --net), which needs root,
# util-linux and iproute2; the browser suite needs Chromium at /usr/bin/chromium (or $CHROMIUM).
set -euo pipefail
cd "$(dirname "$0")/.."

# Before anything slow: what the suite needs. As root with apt-get, what is missing is installed
# (said first); otherwise it stops at once naming the Debian packages (a fresh machine would
# otherwise fail minutes in, at the first test that needs it).
missing=()
command -v git >/dev/null || missing+=(git)
command -v ip >/dev/null || missing+=(iproute2)
command -v unshare >/dev/null || missing+=(util-linux)
command -v bwrap >/dev/null || missing+=(bubblewrap)
# Claude Code's own sandbox for its commands (inside Nucleic's) needs socat.
command -v socat >/dev/null || missing+=(socat)
command -v npm >/dev/null || missing+=(npm)
command -v gh >/dev/null || missing+=(gh)             # pull requests (docs/dev-loop.md)
command -v openssl >/dev/null || missing+=(openssl)   # the mock GitHub's certificate
command -v tmux >/dev/null || missing+=(tmux)         # `nucleic tui` is tested in tmux (docs/tui.md)
# Quiet hours are kept in the device's IANA time zone, read from the system's zoneinfo.
[ -f /usr/share/zoneinfo/Europe/Berlin ] || missing+=(tzdata)
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium fonts-dejavu-core)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null && [ -z "${NUCLEIC_NO_INSTALL:-}" ]; then
    # Root on Debian/Ubuntu: set up what is missing, saying what (NUCLEIC_NO_INSTALL=1: never).
    echo "scripts/test.sh: installing what the tests need: ${missing[*]} (apt-get; NUCLEIC_NO_INSTALL=1 stops this)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "scripts/test.sh: missing: ${missing[*]}" >&2
    echo "  install them first: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    echo "  (or run .ci/run, which does), or point CHROMIUM at another Chromium binary" >&2
    exit 1
  fi
fi
git_version=$(git --version | sed -E 's/[^0-9]*([0-9]+)\.([0-9]+).*/\1 \2/')
read -r git_major git_minor <<<"$git_version"
if [ "$git_major" -lt 2 ] || { [ "$git_major" -eq 2 ] && [ "$git_minor" -lt 40 ]; }; then
  echo "scripts/test.sh: git $(git --version | cut -d" " -f3) is too old: Nucleic needs git >= 2.40 (docs/security.md)" >&2
  exit 1
fi

scripts/install-agents.sh
scripts/install-synapse.sh   # the Matrix transport is tested against a real Synapse (~/.cache/nucleic/synapse)
# The Python device client (examples/device_client.py, run by relay/test/device-client.test.ts
# without a network): its pinned Noise package in a venv (~/.cache/nucleic/device-client).
NUCLEIC_DEVICE_PYTHON="$(scripts/install-device-client.sh | tail -n 1)"
export NUCLEIC_DEVICE_PYTHON
scripts/build-web.sh   # also web/node_modules, which nucleic-channel's interop test runs under node
# web/dist is committed (so `cargo install` needs no npm): a build of web/ must reproduce it.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ -n "$(git status --porcelain -- web/dist)" ]; then
  if [ -n "${CI:-}" ]; then
    echo "scripts/test.sh: web/dist differs from a build of web/ — run scripts/build-web.sh and commit web/dist:" >&2
    git status --short -- web/dist >&2
    exit 1
  fi
  echo "scripts/test.sh: web/dist was rebuilt from your web/ changes: commit it with them" >&2
fi
# The relay (relay/, a Cloudflare Worker): its npm packages (workerd among them), pinned by its lock.
if [ ! -f relay/node_modules/.package-lock.json ] || ! cmp -s relay/package-lock.json relay/node_modules/.nucleic-lock; then
  npm --prefix relay ci --no-audit --no-fund --loglevel=error
  cp relay/package-lock.json relay/node_modules/.nucleic-lock
fi

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast "$@"
else
  cargo test --workspace --locked --no-fail-fast "$@"
fi

# The cockpit: unit tests (vitest), then the browser suite against the real `nucleic` binary.
cargo build --locked -p nucleic-cli -p nucleic-testkit --bins
scripts/install-check.sh   # `cargo install --path crates/cli` without npm serves the cockpit
npm --prefix web test --silent
npm --prefix web run e2e --silent
# The relay under workerd, in a loopback-only namespace (relay/test/run.mjs).
npm --prefix relay run typecheck --silent
npm --prefix relay test --silent
