//! Component tests of the `nucleic` binary and the session stack, end to end: the simulated agent
//! (fast, no network) and the real pinned `claude` against the mock Anthropic server inside a
//! loopback-only network namespace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod agent_boundary;
mod bad_input;
mod bounds;
mod chat_bridge;
mod chat_files;
mod chat_matrix;
mod chat_matrix_threads;
mod chat_topics;
mod chat_unpair;
mod cli_commands;
mod confinement;
mod crate_graph;
mod daemon;
mod demo;
mod dev_loop;
mod doc_links;
mod doc_play;
mod egress_ask;
mod host_support;
mod keepers;
mod mcp_stdio;
mod outside_cli;
mod plan_cli;
mod pull_request;
mod readme_walk;
mod real_claude;
mod real_claude_adopt;
mod real_claude_adopt_in_place;
mod real_claude_chat;
mod real_claude_checks;
mod real_claude_credentials;
mod real_claude_demo;
mod real_claude_host;
mod real_claude_mcp;
mod real_claude_plan;
mod real_claude_session;
mod real_claude_webfetch;
mod real_codex;
mod real_codex_adopt;
mod real_codex_credentials;
mod real_codex_host;
mod real_codex_mcp;
mod real_confinement;
mod real_gemini_host;
mod real_keepers;
mod real_modes;
mod real_policy;
mod reference_client;
mod remote_device;
mod service;
mod shutdown;
mod sim_run;
mod soak;
mod soak_client;
mod soak_config;
mod soak_ledger;
mod soak_procs;
mod support;
mod tui_tmux;
mod web_signin;
