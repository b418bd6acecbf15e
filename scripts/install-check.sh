#!/usr/bin/env bash
# `cargo install --path crates/cli` gives a working `nucleic` with the cockpit embedded and
# without npm: installs it (a debug build sharing this checkout's target dir, so it costs little
# after the test build) into a temporary root with npm off PATH, runs that binary's `nucleic demo`
# and checks the cockpit page it serves is the built app, not the "not built" placeholder.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
demo_pid=
cleanup() {
  [ -n "$demo_pid" ] && kill -INT "$demo_pid" 2>/dev/null && wait "$demo_pid" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
# No npm, no node on PATH: the install must not need them (web/dist is committed).
nonpm=$root/path
mkdir -p "$nonpm"
for tool in cargo rustc cc ld git; do
  found=$(command -v "$tool" || true)
  [ -n "$found" ] && ln -s "$found" "$nonpm/$tool"
done
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target} PATH="$nonpm:$(dirname "$(command -v cargo)")" \
  cargo install --quiet --debug --locked --path crates/cli --root "$root/install"
"$root/install/bin/nucleic" --version
"$root/install/bin/nucleic" demo --json --port 0 >"$root/demo.json" 2>"$root/demo.err" &
demo_pid=$!
for _ in $(seq 1 300); do
  [ -s "$root/demo.json" ] && break
  kill -0 "$demo_pid" 2>/dev/null || { echo "install-check: the demo exited: $(cat "$root/demo.err")" >&2; exit 1; }
  sleep 0.1
done
[ -s "$root/demo.json" ] || { echo "install-check: the demo printed no address within 30 s" >&2; exit 1; }
url=$(sed -E 's/.*"url":"([^"]*)".*/\1/' "$root/demo.json")
origin=$(printf '%s' "$url" | sed -E 's#^(https?://[^/]+).*#\1#')
port=$(printf '%s' "$origin" | sed -E 's#.*:([0-9]+)$#\1#')
# One GET with bash alone (no curl on a fresh machine), within 10 s.
page=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1:$port\r\n\r\n' >&3; cat <&3")
if printf '%s' "$page" | grep -q "The web app was not built"; then
  echo "install-check: the installed nucleic serves the placeholder page: web/dist was not embedded" >&2
  exit 1
fi
printf '%s' "$page" | grep -q '<script type="module"' || { echo "install-check: $origin/ is not the cockpit: $page" >&2; exit 1; }
echo "install-check: cargo install --path crates/cli (no npm) serves the cockpit at $origin"
