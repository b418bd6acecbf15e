#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The real pinned `codex app-server` driven through `CodexHandle`: interrupt (also with no turn
//! running), resume in a new process, stop, the CLI dying mid-turn, and provider faults (500,
//! 429, dropped stream). Each test runs in its own loopback-only network namespace.

mod common;

use std::time::Duration;

use common::*;
use nucleic_agents::codex::spawn_codex;
use nucleic_agents::{AgentControl, AgentError};
use nucleic_protocol::{Decision, EventKind, RunOutcome};
use nucleic_testkit::mock_openai::{FaultKind, Script, ToolCall};

/// A text answer streamed slowly enough to interrupt or kill it mid-turn.
fn slow_text() -> Script {
    Script::text("a long answer that streams slowly").with_chunk_delay(Duration::from_millis(700))
}

/// Runs until the final text `text` and then the end of the turn.
async fn until_text_and_turn_end(
    rx: &mut tokio::sync::mpsc::Receiver<nucleic_agents::AgentOutput>,
    seen: &mut Vec<nucleic_agents::NativeEvent>,
    text: &str,
) {
    until(
        rx,
        seen,
        |k| matches!(k, EventKind::AssistantText(t) if !t.is_partial && t.text == text),
    )
    .await;
    until(rx, seen, is_turn_completed).await;
}

/// Whether any process of group `pgid` is alive.
fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Waits (up to 5 s: the stop's grace, then SIGKILL) for group `pgid` to be gone.
async fn group_gone(pgid: u32) -> bool {
    for _ in 0..100 {
        if !group_alive(pgid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_interrupt_ends_the_turn_and_keeps_the_thread() {
    if nucleic_testkit::isolated!("codex_interrupt_ends_the_turn_and_keeps_the_thread") {
        return;
    }
    let s = Setup::new(slow_text()).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    // No turn yet: refused by the adapter, and codex stays alive.
    assert!(matches!(handle.interrupt().await, Err(AgentError::InvalidInput(_))));
    handle.send_user_text("talk slowly").await.unwrap();
    let mut seen = Vec::new();
    until_native(&mut rx, &mut seen, "turn/started").await;
    handle.interrupt().await.unwrap();
    let done = until(&mut rx, &mut seen, is_turn_completed).await;
    let EventKind::TurnCompleted(turn) = done else { unreachable!() };
    assert_eq!(turn.terminal_reason.as_deref(), Some("interrupted"), "{seen:#?}");
    assert!(!turn.is_error);
    // The turn is over: a second interrupt has nothing to interrupt.
    assert!(matches!(handle.interrupt().await, Err(AgentError::InvalidInput(_))));
    // The thread goes on.
    s.mock.set_script(Script::text("after the interrupt"));
    handle.send_user_text("again").await.unwrap();
    until_text_and_turn_end(&mut rx, &mut seen, "after the interrupt").await;
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_resume_continues_the_thread_in_a_new_process() {
    if nucleic_testkit::isolated!("codex_resume_continues_the_thread_in_a_new_process") {
        return;
    }
    let s = Setup::new(Script::text("noted")).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    let mut seen = Vec::new();
    handle.send_user_text("remember the word banana").await.unwrap();
    until_text_and_turn_end(&mut rx, &mut seen, "noted").await;
    let thread = handle.thread_id().unwrap();
    handle.close_input().await;
    exited(&mut rx).await;

    s.mock.set_script(Script::shell_then_done("touch resumed.txt"));
    let mut o = s.options();
    o.common.resume = Some(thread.clone());
    let (handle, mut rx) = spawn_codex(&o).unwrap();
    let (seen, asks) = turn_answering(&handle, &mut rx, "touch it", &Decision::Allow).await;
    let started = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SessionStarted(s) => Some(s.clone()),
            _ => None,
        })
        .expect("sessionStarted on resume");
    assert_eq!(started.backend_session_id, thread);
    assert_eq!(started.permission_mode.as_deref(), Some("default"));
    assert_eq!(handle.thread_id().as_deref(), Some(thread.as_str()));
    // Approval policy and sandbox were sent again (codex does not restore them on resume): the
    // command is asked about, and once allowed it may write the workspace.
    assert_eq!(asks.len(), 1, "{seen:#?}");
    assert!(s.ws().join("resumed.txt").exists());
    // The model saw the first turn's history.
    let first = s.mock.requests().into_iter().rev().find(|r| r.path.ends_with("/responses"));
    assert!(first.unwrap().body["input"].to_string().contains("remember the word banana"));
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Completed);

    // An unknown thread cannot be resumed: the run ends with codex's reason.
    o.common.resume = Some("00000000-0000-0000-0000-000000000000".into());
    let (handle, mut rx) = spawn_codex(&o).unwrap();
    handle.send_user_text("hello?").await.unwrap();
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::AgentError, "{finished:?}");
    assert!(finished.message.unwrap().contains("no rollout found"));
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_stop_while_waiting_for_approval_ends_the_whole_group() {
    if nucleic_testkit::isolated!("codex_stop_while_waiting_for_approval_ends_the_whole_group") {
        return;
    }
    let s = Setup::new(Script::shell_then_done("touch created.txt")).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("go").await.unwrap();
    let mut seen = Vec::new();
    let asked = until(&mut rx, &mut seen, |k| matches!(k, EventKind::ApprovalRequested(_))).await;
    let EventKind::ApprovalRequested(ask) = asked else { unreachable!() };
    let pid = handle.pid().unwrap();
    handle.stop(Duration::from_secs(2));
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::Stopped, "{finished:?}");
    assert!(group_gone(pid).await, "codex's process group outlived the stop");
    assert!(!s.ws().join("created.txt").exists());
    // Nothing is left to answer.
    assert!(handle.respond(&ask.request_id, &Decision::Allow).await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_dying_mid_turn_is_a_crash() {
    if nucleic_testkit::isolated!("codex_dying_mid_turn_is_a_crash") {
        return;
    }
    let s = Setup::new(slow_text()).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("talk slowly").await.unwrap();
    let mut seen = Vec::new();
    until_native(&mut rx, &mut seen, "turn/started").await;
    let pid = handle.pid().unwrap();
    let killed =
        std::process::Command::new("kill").args(["-9", "--", &format!("-{pid}")]).status().unwrap();
    assert!(killed.success());
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::Crashed, "{finished:?}");
    assert!(finished.message.unwrap().contains("in the middle of a turn"));
    assert!(handle.send_user_text("anyone?").await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_provider_500_fails_the_turn_as_an_api_error() {
    if nucleic_testkit::isolated!("codex_provider_500_fails_the_turn_as_an_api_error") {
        return;
    }
    let s = Setup::new(Script::text("never").with_fault(FaultKind::Http500, None)).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("hi").await.unwrap();
    let mut seen = Vec::new();
    let done = until(&mut rx, &mut seen, is_turn_completed).await;
    let EventKind::TurnCompleted(turn) = done else { unreachable!() };
    assert!(turn.is_error && turn.terminal_reason.as_deref() == Some("failed"), "{turn:?}");
    let retry = seen.iter().find_map(|e| match &e.kind {
        EventKind::ApiRetry(r) => Some(r.clone()),
        _ => None,
    });
    assert_eq!(retry.expect("a retry").error, "server_error", "{seen:#?}");
    assert!(seen.iter().any(|e| matches!(&e.kind, EventKind::Error(_))), "{seen:#?}");
    handle.close_input().await;
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::ApiError, "{finished:?}");
    assert!(finished.message.unwrap().starts_with("the last turn failed: "));
}

/// One fault on the first request, then the scripted answer: codex retries and the turn succeeds.
async fn recovers_from(kind: FaultKind, class: &str) -> Vec<nucleic_agents::NativeEvent> {
    let s = Setup::new(Script::text("served").with_fault(kind, Some(1))).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("hi").await.unwrap();
    let mut seen = Vec::new();
    until_text_and_turn_end(&mut rx, &mut seen, "served").await;
    let retry = seen.iter().find_map(|e| match &e.kind {
        EventKind::ApiRetry(r) => Some(r.clone()),
        _ => None,
    });
    assert_eq!(retry.expect("a retry").error, class, "{seen:#?}");
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Completed);
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_rate_limited_then_served() {
    if nucleic_testkit::isolated!("codex_rate_limited_then_served") {
        return;
    }
    recovers_from(FaultKind::Http429, "rate_limit").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_dropped_stream_is_retried() {
    if nucleic_testkit::isolated!("codex_dropped_stream_is_retried") {
        return;
    }
    recovers_from(FaultKind::DropMidStream, "stream_disconnected").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_allow_always_covers_the_same_command_again() {
    if nucleic_testkit::isolated!("codex_allow_always_covers_the_same_command_again") {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("always.txt");
    let call = ToolCall::exec_command_escalated(format!("touch {}", target.display()), "outside");
    let s = Setup::new(Script::tools_then_done(vec![call])).await;
    let mut o = s.options();
    o.set_permission_mode("acceptEdits").unwrap();
    let (handle, mut rx) = spawn_codex(&o).unwrap();
    let (_, asks) =
        turn_answering(&handle, &mut rx, "first", &Decision::AllowAlways { scope: None }).await;
    assert_eq!(asks.len(), 1);
    assert!(target.exists());
    std::fs::remove_file(&target).unwrap();
    // The same escalated command in the same thread runs without a new request.
    let (_, asks) = turn_answering(&handle, &mut rx, "second", &Decision::Allow).await;
    assert!(asks.is_empty(), "{asks:#?}");
    assert!(target.exists());
    handle.close_input().await;
    exited(&mut rx).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_edited_input_is_refused_and_deny_and_stop_cancels_the_turn() {
    if nucleic_testkit::isolated!(
        "codex_edited_input_is_refused_and_deny_and_stop_cancels_the_turn"
    ) {
        return;
    }
    let s = Setup::new(Script::shell_then_done("touch created.txt")).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("go").await.unwrap();
    let mut seen = Vec::new();
    let asked = until(&mut rx, &mut seen, |k| matches!(k, EventKind::ApprovalRequested(_))).await;
    let EventKind::ApprovalRequested(ask) = asked else { unreachable!() };
    // codex cannot take edited input: refused before anything is written, the ask stays open.
    let edited = Decision::AllowEdited { updated_input: serde_json::json!({"command": "true"}) };
    let refused = handle.respond(&ask.request_id, &edited).await;
    assert!(matches!(refused, Err(AgentError::Unsupported(_))), "{refused:?}");
    let stop = Decision::DenyAndStop { message: "stop".into() };
    handle.respond(&ask.request_id, &stop).await.unwrap();
    let done = until(&mut rx, &mut seen, is_turn_completed).await;
    let EventKind::TurnCompleted(turn) = done else { unreachable!() };
    assert_eq!(turn.terminal_reason.as_deref(), Some("interrupted"));
    assert!(!s.ws().join("created.txt").exists());
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Interrupted);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_interrupted_sandboxed_command_leaves_no_mount_points() {
    if nucleic_testkit::isolated!("codex_interrupted_sandboxed_command_leaves_no_mount_points") {
        return;
    }
    let s = Setup::new(Script::shell_then_done("tail -f /dev/null")).await;
    let mut o = s.options();
    // Commands inside the workspace sandbox run unasked.
    o.set_permission_mode("acceptEdits").unwrap();
    let (handle, mut rx) = spawn_codex(&o).unwrap();
    handle.send_user_text("run it").await.unwrap();
    let mut seen = Vec::new();
    until(&mut rx, &mut seen, |k| matches!(k, EventKind::ToolCallStarted(_))).await;
    // While the command runs, the sandbox has mounted over these (creating them).
    for _ in 0..50 {
        if s.ws().join(".git").is_dir() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(s.ws().join(".git").is_dir(), "codex 0.171.0 mounts over <ws>/.git");
    handle.interrupt().await.unwrap();
    let done = until(&mut rx, &mut seen, is_turn_completed).await;
    let EventKind::TurnCompleted(turn) = done else { unreachable!() };
    assert_eq!(turn.terminal_reason.as_deref(), Some("interrupted"));
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Interrupted);
    let left: Vec<String> = std::fs::read_dir(s.ws())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left behind in the workspace: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_interrupt_with_an_approval_pending_voids_it() {
    if nucleic_testkit::isolated!("codex_interrupt_with_an_approval_pending_voids_it") {
        return;
    }
    let s = Setup::new(Script::shell_then_done("touch created.txt")).await;
    let (handle, mut rx) = spawn_codex(&s.options()).unwrap();
    handle.send_user_text("go").await.unwrap();
    let mut seen = Vec::new();
    let asked = until(&mut rx, &mut seen, |k| matches!(k, EventKind::ApprovalRequested(_))).await;
    let EventKind::ApprovalRequested(ask) = asked else { unreachable!() };
    handle.interrupt().await.unwrap();
    let done = until(&mut rx, &mut seen, is_turn_completed).await;
    let EventKind::TurnCompleted(turn) = done else { unreachable!() };
    assert_eq!(turn.terminal_reason.as_deref(), Some("interrupted"));
    // The request died with its turn: a late answer is refused and nothing runs.
    let late = handle.respond(&ask.request_id, &Decision::Allow).await;
    assert!(matches!(late, Err(AgentError::UnknownRequest(_))), "{late:?}");
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Interrupted);
    assert!(!s.ws().join("created.txt").exists());
}
