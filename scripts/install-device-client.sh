#!/usr/bin/env bash
# Installs the one PyPI package of the Python device client (examples/device_client.py): the
# pinned `noiseprotocol` (and its pinned `cryptography`) into a virtualenv in a cache outside the
# repository (default ~/.cache/nucleic/device-client, override with NUCLEIC_DEVICE_CLIENT_CACHE).
# Idempotent: a venv that already reports the pinned versions is kept. Its last line is the
# venv's python.
set -euo pipefail

CACHE="${NUCLEIC_DEVICE_CLIENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nucleic/device-client}"
NOISE_VERSION=0.3.1
# noiseprotocol's own dependency, pinned too (with its build-time dependencies) so that every
# machine runs the same code.
PINS=("noiseprotocol==$NOISE_VERSION" "cryptography==51.0.1" "cffi==2.1.1" "pycparser==3.12")
VENV="$CACHE/noiseprotocol-$NOISE_VERSION"

installed() {
  "$VENV/bin/python" -c 'import importlib.metadata as m, noise.connection; print(m.version("noiseprotocol"), m.version("cryptography"))' 2>/dev/null || true
}

if [ "$(installed)" = "$NOISE_VERSION 51.0.1" ]; then
  echo "install-device-client: noiseprotocol $NOISE_VERSION already installed at $VENV" >&2
  echo "$VENV/bin/python"
  exit 0
fi
command -v python3 >/dev/null || { echo "install-device-client: python3 (3.9+, with venv) is required" >&2; exit 1; }
rm -rf "$VENV"
mkdir -p "$CACHE"
echo "install-device-client: installing ${PINS[*]} into $VENV" >&2
python3 -m venv "$VENV" || { echo "install-device-client: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$VENV/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}"
if [ "$(installed)" != "$NOISE_VERSION 51.0.1" ]; then
  echo "install-device-client: $VENV does not report noiseprotocol $NOISE_VERSION with cryptography 51.0.1" >&2
  exit 1
fi
echo "$VENV/bin/python"
