#![allow(dead_code)] // each test binary uses part of it
//! Helpers for the Codex adapter tests: a mock provider with a `CODEX_HOME` pointing at it, and
//! waiting for events.

use std::path::PathBuf;
use std::time::Duration;

use nucleic_agents::codex::{CodexHandle, CodexOptions};
use nucleic_agents::{AgentControl, AgentOutput, NativeEvent};
use nucleic_protocol::{ApprovalRequested, Decision, EventKind, RunFinished};
use nucleic_testkit::agents::codex_offline_env;
use nucleic_testkit::agents::real_codex;
use nucleic_testkit::mock_openai::{MockOpenAi, Script, codex_config_toml};
use tokio::sync::mpsc;

pub const WAIT: Duration = Duration::from_secs(15);

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub mock: MockOpenAi,
}

impl Setup {
    pub async fn new(script: Script) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockOpenAi::start(script).await.unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("home/config.toml"), codex_config_toml(&mock.base_url()))
            .unwrap();
        Setup { dir, mock }
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    pub fn options(&self) -> CodexOptions {
        let mut o = CodexOptions::new(real_codex(), self.ws());
        o.codex_home = Some(self.dir.path().join("home"));
        o.common.env = codex_offline_env(&self.dir.path().join("home"), self.dir.path())
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        o
    }
}

/// Collects events until one matches `stop` (returned last); panics on timeout or exit.
pub async fn until(
    rx: &mut mpsc::Receiver<AgentOutput>,
    seen: &mut Vec<NativeEvent>,
    stop: impl Fn(&EventKind) -> bool,
) -> EventKind {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; seen: {seen:#?}"));
        match out {
            Some(AgentOutput::Events(events)) => {
                for e in events {
                    seen.push(e.clone());
                    if stop(&e.kind) {
                        return e.kind;
                    }
                }
            }
            other => panic!("agent ended early: {other:?}; seen: {seen:#?}"),
        }
    }
}

/// Drains outputs until `Exited`.
pub async fn exited(rx: &mut mpsc::Receiver<AgentOutput>) -> RunFinished {
    loop {
        match tokio::time::timeout(WAIT, rx.recv()).await.expect("no exit in time") {
            Some(AgentOutput::Exited(f)) => return f,
            Some(AgentOutput::Events(_)) => {}
            None => panic!("output ended without Exited"),
        }
    }
}

/// `isError` of each tool result seen.
pub fn shell_result_errors(seen: &[NativeEvent]) -> Vec<bool> {
    seen.iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult(r) => Some(r.is_error),
            _ => None,
        })
        .collect()
}

pub fn is_turn_completed(k: &EventKind) -> bool {
    matches!(k, EventKind::TurnCompleted(_))
}

/// Runs one turn with `prompt`, answering every approval with `decision`; returns the events
/// and the approvals asked.
pub async fn turn_answering(
    handle: &CodexHandle,
    rx: &mut mpsc::Receiver<AgentOutput>,
    prompt: &str,
    decision: &Decision,
) -> (Vec<NativeEvent>, Vec<ApprovalRequested>) {
    handle.send_user_text(prompt).await.unwrap();
    let mut seen = Vec::new();
    let mut asks = Vec::new();
    loop {
        let k = until(rx, &mut seen, |k| {
            matches!(k, EventKind::ApprovalRequested(_) | EventKind::TurnCompleted(_))
        })
        .await;
        match k {
            EventKind::ApprovalRequested(ask) => {
                handle.respond(&ask.request_id, decision).await.unwrap();
                asks.push(ask);
            }
            _ => return (seen, asks),
        }
    }
}

/// Collects events until one comes from a native line of type `native_type`.
pub async fn until_native(
    rx: &mut mpsc::Receiver<AgentOutput>,
    seen: &mut Vec<NativeEvent>,
    native_type: &str,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {native_type}; seen: {seen:#?}"));
        match out {
            Some(AgentOutput::Events(events)) => {
                let hit = events.iter().any(|e| e.native_type.as_deref() == Some(native_type));
                seen.extend(events);
                if hit {
                    return;
                }
            }
            other => panic!("agent ended early: {other:?}; seen: {seen:#?}"),
        }
    }
}
