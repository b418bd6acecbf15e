//! `nucleic run --agent claude` with the real pinned CLI against the mock Anthropic server, each
//! test in its own loopback-only network namespace.

use nucleic_protocol::RunOutcome;
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{FaultKind, MockAnthropic, Script};
use pretty_assertions::assert_eq;

use crate::support::*;

struct Setup {
    dir: tempfile::TempDir,
    mock: MockAnthropic,
    env: Vec<(String, String)>,
    claude: String,
}

async fn setup(script: Script) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockAnthropic::start(script).await.unwrap();
    let scratch = dir.path().join(".scratch");
    let env = claude_offline_env(&mock.base_url(), &scratch);
    Setup { dir, mock, env, claude: real_claude().to_string_lossy().into_owned() }
}

impl Setup {
    /// `nucleic run --agent claude --agent-bin <pinned claude> --json <args>` in the setup's dir.
    async fn run(&self, args: &[&str]) -> RunResult {
        let mut all = vec!["run", "--agent", "claude", "--agent-bin", &self.claude, "--json"];
        all.extend_from_slice(args);
        run_nucleic(&self.dir.path().canonicalize().unwrap(), &all, &self.env).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_write_allowed() {
    if isolated!("real_claude_write_allowed") {
        return;
    }
    let s = setup(Script::text("unused")).await;
    let cwd = s.dir.path().canonicalize().unwrap();
    let target = cwd.join("hello.txt");
    s.mock.set_script(Script::write_then_done(target.to_str().unwrap(), "hello"));
    let r = s.run(&["--approve", "allow", "create hello.txt"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello");
    assert_gapless(&r.events);
    assert_in_order(
        &r.events,
        &[
            "sessionStarted",
            "toolCallStarted",
            "approvalRequested",
            "approvalResolved",
            "toolResult",
            "assistantText",
            "usage",
            "turnCompleted",
            "runFinished",
        ],
    );
    let started = first!(r.events, ToolCallStarted);
    assert_eq!(started.name, "Write");
    let session = first!(r.events, SessionStarted);
    assert_eq!(session.agent_version.as_deref(), Some("2.1.332"));
    let result = first!(r.events, ToolResult);
    assert!(!result.is_error);
    let done = first!(r.events, RunFinished);
    assert_eq!(done.outcome, RunOutcome::Completed);
    assert_eq!(transcript_of(&cwd, &r.events), r.events);
    // Every request the CLI made went to the mock, and only to the model endpoint.
    assert!(
        s.mock.requests().iter().all(|q| q.path.starts_with("/v1/messages")),
        "{:?}",
        s.mock.requests()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_write_denied() {
    if isolated!("real_claude_write_denied") {
        return;
    }
    let s = setup(Script::text("unused")).await;
    let cwd = s.dir.path().canonicalize().unwrap();
    let target = cwd.join("hello.txt");
    s.mock.set_script(Script::write_then_done(target.to_str().unwrap(), "hello"));
    let r = s.run(&["--approve", "deny", "create hello.txt"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!target.exists());
    let result = first!(r.events, ToolResult);
    assert!(result.is_error);
    assert_eq!(result.content, serde_json::json!("denied by nucleic run --approve deny"));
    assert_gapless(&r.events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_api_fault_ends_with_a_clear_error_and_intact_transcript() {
    if isolated!("real_claude_api_fault_ends_with_a_clear_error_and_intact_transcript") {
        return;
    }
    let s = setup(Script::text("never").with_fault(FaultKind::Http500, None)).await;
    let cwd = s.dir.path().canonicalize().unwrap();
    let r = s.run(&["say hi"]).await;
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("run failed (apiError)") && r.stderr.contains("500"), "{}", r.stderr);
    assert_in_order(
        &r.events,
        &["sessionStarted", "apiRetry", "error", "turnCompleted", "runFinished"],
    );
    let turn = first!(r.events, TurnCompleted);
    assert!(turn.is_error);
    assert_eq!(turn.terminal_reason.as_deref(), Some("api_error"));
    assert_gapless(&r.events);
    assert_eq!(transcript_of(&cwd, &r.events), r.events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_dropped_stream_is_retried_and_the_run_succeeds() {
    if isolated!("real_claude_dropped_stream_is_retried_and_the_run_succeeds") {
        return;
    }
    let s = setup(Script::text("recovered").with_fault(FaultKind::DropMidStream, Some(1))).await;
    let r = s.run(&["say hi"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_in_order(&r.events, &["apiRetry", "assistantText", "turnCompleted", "runFinished"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_rate_limited_then_served() {
    if isolated!("real_claude_rate_limited_then_served") {
        return;
    }
    let s = setup(Script::text("served").with_fault(FaultKind::Http429, Some(1))).await;
    let r = s.run(&["say hi"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let retry = first!(r.events, ApiRetry);
    assert_eq!(retry.error, "rate_limit");
    assert_eq!(retry.http_status, Some(429));
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_hanging_provider_is_cut_off_by_the_idle_timeout() {
    if isolated!("real_claude_hanging_provider_is_cut_off_by_the_idle_timeout") {
        return;
    }
    let s = setup(Script::text("never").with_fault(FaultKind::Hang, None)).await;
    let r = s.run(&["--idle-timeout", "3", "say hi"]).await;
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("no output for 3 s"), "{}", r.stderr);
    let done = first!(r.events, RunFinished);
    assert_eq!(done.outcome, RunOutcome::Stopped);
    assert_gapless(&r.events);
}
