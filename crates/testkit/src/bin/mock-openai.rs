//! A standalone mock OpenAI Responses API for driving the real `codex` CLI from outside Rust
//! tests (the cockpit's browser suite). Binds `127.0.0.1:0`, prints one JSON line
//! `{"url": "http://127.0.0.1:PORT/v1", "config": "<$CODEX_HOME/config.toml>", "keyEnv": "…"}`
//! and serves until killed: every prompt gets an `apply_patch` adding `codex.txt` ("written by
//! codex") and then "done".
//!
//! Point codex at it with a `CODEX_HOME` holding `config` as `config.toml` and `keyEnv` set to
//! any value.

use std::process::ExitCode;

use nucleic_testkit::mock_openai::{API_KEY_ENV, MockOpenAi, Script, codex_config_toml};

/// The file every session's patch adds, and its content.
const FILE: &str = "codex.txt";
const CONTENT: &str = "written by codex\n";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if std::env::args().len() > 1 {
        eprintln!(
            "usage: mock-openai   (prints {{\"url\", \"config\", \"keyEnv\"}}, serves until killed)"
        );
        return ExitCode::from(2);
    }
    let mock = match MockOpenAi::start(Script::patch_then_done(FILE, CONTENT)).await {
        Ok(mock) => mock,
        Err(e) => {
            eprintln!("mock-openai: cannot listen on 127.0.0.1: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = mock.base_url();
    println!(
        "{}",
        serde_json::json!({ "url": url, "config": codex_config_toml(&url), "keyEnv": API_KEY_ENV })
    );
    if let Err(e) = nucleic_testkit::standalone::until_stopped().await {
        eprintln!("mock-openai: cannot watch for SIGINT/SIGTERM: {e}");
        return ExitCode::FAILURE;
    }
    drop(mock);
    ExitCode::SUCCESS
}
