#!/usr/bin/env bash
# Installs the pinned Synapse (PyPI matrix-synapse) into a virtualenv in a cache outside the
# repository (default ~/.cache/nucleic/synapse, override with NUCLEIC_SYNAPSE_CACHE), for the
# Matrix transport's tests against a real homeserver. Idempotent: a venv that already reports the
# pinned version is kept. Prints nothing else on success but the path of the venv.
set -euo pipefail

CACHE="${NUCLEIC_SYNAPSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nucleic/synapse}"
SYNAPSE_VERSION=1.163.2
VENV="$CACHE/synapse-$SYNAPSE_VERSION"

installed_version() {
  "$VENV/bin/python" -c 'import synapse; print(synapse.__version__)' 2>/dev/null || true
}

if [ -x "$VENV/bin/register_new_matrix_user" ] && [ "$(installed_version)" = "$SYNAPSE_VERSION" ]; then
  echo "install-synapse: matrix-synapse $SYNAPSE_VERSION already installed at $VENV"
  exit 0
fi
command -v python3 >/dev/null || { echo "install-synapse: python3 (3.9+, with venv) is required" >&2; exit 1; }
rm -rf "$VENV"
mkdir -p "$CACHE"
echo "install-synapse: installing matrix-synapse==$SYNAPSE_VERSION into $VENV"
python3 -m venv "$VENV" || { echo "install-synapse: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$VENV/bin/pip" install --quiet --disable-pip-version-check "matrix-synapse==$SYNAPSE_VERSION"
if [ "$(installed_version)" != "$SYNAPSE_VERSION" ]; then
  echo "install-synapse: $VENV does not report version $SYNAPSE_VERSION" >&2
  exit 1
fi
echo "install-synapse: matrix-synapse $SYNAPSE_VERSION at $VENV"
