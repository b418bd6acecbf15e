#!/usr/bin/env bash
# Installs the pinned agent CLIs from the npm registry into a cache outside the repository
# (default ~/.cache/nucleic/agents, override with NUCLEIC_AGENT_CACHE). Idempotent: a version
# that is already installed and answers --version is kept.
set -euo pipefail

CACHE="${NUCLEIC_AGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nucleic/agents}"
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
QWEN_VERSION=0.24.4

install_pinned() { # <dir name> <npm package> <version> <bin name> <expected --version prefix>
  local dir="$CACHE/$1-$3" pkg="$2" version="$3" bin="$4" expect="$5"
  local exe="$dir/node_modules/.bin/$bin"
  if [ -x "$exe" ] && "$exe" --version 2>/dev/null | grep -q "^$expect"; then
    echo "install-agents: $pkg@$version already installed at $exe"
    return
  fi
  command -v npm >/dev/null || { echo "install-agents: npm is required (Node.js 20+)" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "install-agents: installing $pkg@$version into $dir"
  # Pin the exact version: an unpinned install on Node 20 silently picks an older release
  # (engines filter). The EBADENGINE warning for 2.1.332 is harmless: the CLI is a native binary.
  (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "$pkg@$version")
  if ! "$exe" --version | grep -q "^$expect"; then
    echo "install-agents: $exe does not report version $expect" >&2
    exit 1
  fi
  echo "install-agents: $("$exe" --version) at $exe"
}

install_pinned claude-code @anthropic-ai/claude-code "$CLAUDE_VERSION" claude "$CLAUDE_VERSION"
# The wrapper pulls the native binary from the platform optional dependency
# (@openai/codex-linux-x64, about 400 MB): never install with --omit=optional.
install_pinned codex @openai/codex "$CODEX_VERSION" codex "codex-cli $CODEX_VERSION"
# One esbuild bundle (about 100 MB with its 7 packages); the optional node-pty/keytar install
# scripts are not needed for `gemini --acp`.
install_pinned gemini-cli @google/gemini-cli "$GEMINI_VERSION" gemini "$GEMINI_VERSION"
# One Bun-compiled binary (about 185 MB, from the opencode-linux-x64 optional dependency; its
# postinstall script is not needed): never install with --omit=optional.
install_pinned opencode opencode-ai "$OPENCODE_VERSION" opencode "$OPENCODE_VERSION"
# Declares node >= 22 but runs `qwen --acp` on node 20 (npm's EBADENGINE warning is harmless).
install_pinned qwen-code @qwen-code/qwen-code "$QWEN_VERSION" qwen "$QWEN_VERSION"
