//! Test support: mock model servers, loopback-only network namespaces, agent CLI discovery.
//!
//! - [`mock_anthropic`]: the mock Anthropic Messages API (SSE and JSON, scripted replies — one
//!   writes the file the prompt names in the agent's working directory —, faults 500/429/529,
//!   dropped stream, hang); also the standalone `mock-anthropic` binary for the browser suite.
//! - [`mock_openai`]: the mock OpenAI Responses API, for codex (scripted shell command /
//!   apply_patch / text, faults 500/429/400, failed / dropped / stalled stream, hang).
//! - [`mock_gemini`]: the mock Gemini API, for Gemini CLI (its model router, scripted text,
//!   thought, `write_file` / `run_shell_command` calls over SSE).
//! - `mock_http`: what the mock model servers share (loopback handle, state, recording, faults).
//! - [`mock_github`]: the GitHub API endpoints `gh pr create` calls, over TLS on 127.0.0.1.
//! - [`mock_web`]: a web site over TLS on any address, recording what reached it (egress).
//! - [`tls`]: the TLS mocks' self-signed certificates and listener.
//! - [`outside_sessions`]: Claude Code and Codex session files planted as the CLIs write them.
//! - [`mock_push`]: a Web Push service that checks what a real one checks and decrypts each
//!   message.
//! - [`isolation`]: [`isolated!`] re-runs a test inside `unshare --net` (+ `--mount`).
//! - [`agents`]: the pinned real CLIs' location and their offline environment.
//! - [`git_repo`]: real git for tests: a throwaway identity, a one-commit repository.
//! - [`synapse`]: a real Matrix homeserver (Synapse from `scripts/install-synapse.sh`) on
//!   loopback: config, start under a deadline, users by shared secret, restart.
//! - [`standalone`]: what the standalone mock binaries share.

pub mod agents;
pub mod git_repo;
pub mod isolation;
pub mod mock_anthropic;
pub mod mock_gemini;
pub mod mock_github;
mod mock_http;
pub mod mock_openai;
pub mod mock_push;
pub mod mock_telegram;
pub mod mock_web;
pub mod outside_sessions;
pub mod standalone;
pub mod synapse;
pub mod tls;
