//! The session stack (adapter + single writer) driving the real pinned `claude` against the mock:
//! follow-up turns, model and mode changes, interrupt, every approval answer, first responder
//! wins, a killed agent, resume. Each test runs in a loopback-only network namespace.

use std::path::Path;
use std::time::Duration;

use nucleic_agents::AgentControl;
use nucleic_agents::claude::{ClaudeOptions, spawn_claude};
use nucleic_core::{CoreError, SessionConfig, SessionController, SessionHandle, Subscription};
use nucleic_protocol::{Decision, DecisionKind, Event, EventKind, RunOutcome};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::pick;

struct Live {
    session: SessionHandle,
    events: Subscription,
    pid: u32,
    seen: Vec<Event>,
}

fn start(cwd: &Path, mock: &MockAnthropic, tweak: impl FnOnce(&mut ClaudeOptions)) -> Live {
    let mut opts = ClaudeOptions::new(real_claude(), cwd.to_owned());
    opts.common.env = claude_offline_env(&mock.base_url(), &cwd.join(".scratch"))
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    tweak(&mut opts);
    let (agent, outputs) = spawn_claude(&opts).unwrap();
    let pid = agent.pid().unwrap();
    let config = SessionConfig {
        session_id: format!("test-{pid}"),
        backend: opts.backend,
        transcript: cwd.join(format!(".nh/{pid}/transcript.jsonl")),
        approval_timeout: None,
        created: None,
        keep_open: false,
        policy: None,
    };
    let session = SessionController::start(config, agent, outputs).unwrap();
    let events = session.subscribe(1).unwrap();
    Live { session, events, pid, seen: Vec::new() }
}

impl Live {
    /// Waits (up to 60 s) for the next event that `pick` accepts.
    async fn until<T>(&mut self, pick: impl Fn(&EventKind) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let next = tokio::time::timeout_at(deadline, self.events.next()).await;
            let event = next
                .unwrap_or_else(|_| panic!("timed out; seen: {:?}", kinds(&self.seen)))
                .unwrap()
                .unwrap_or_else(|| panic!("stream ended; seen: {:?}", kinds(&self.seen)));
            let found = pick(&event.kind);
            self.seen.push(Event::clone(&event));
            if let Some(found) = found {
                return found;
            }
        }
    }

    async fn approval(&mut self) -> nucleic_protocol::ApprovalRequested {
        self.until(|k| pick!(k, ApprovalRequested)).await
    }

    async fn turn(&mut self) -> nucleic_protocol::TurnCompleted {
        self.until(|k| pick!(k, TurnCompleted)).await
    }

    async fn finished(&mut self) -> nucleic_protocol::RunFinished {
        self.until(|k| pick!(k, RunFinished)).await
    }

    /// Reads to the end of the stream (the writer task is gone).
    async fn drain(&mut self) {
        while let Some(e) = tokio::time::timeout(Duration::from_secs(30), self.events.next())
            .await
            .unwrap()
            .unwrap()
        {
            self.seen.push(Event::clone(&e));
        }
    }
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

fn write_call(path: &Path, content: &str) -> ToolCall {
    ToolCall::new("Write", json!({"file_path": path, "content": content}))
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_follow_up_turns_model_and_mode_changes() {
    if isolated!("real_claude_follow_up_turns_model_and_mode_changes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mock = MockAnthropic::start(Script::text("first answer")).await.unwrap();
    let mut live = start(&cwd, &mock, |o| o.append_system_prompt = Some("NUCLEIC-MARKER".into()));
    live.session.send_user_text("one").await.unwrap();
    let first = live.turn().await;
    assert_eq!(first.result.as_deref(), Some("first answer"));

    live.session.set_model("claude-sonnet-4-5").await.unwrap();
    let changed = live
        .until(|k| match k {
            EventKind::SettingsChanged(s) if s.model.is_some() => Some(s.clone()),
            _ => None,
        })
        .await;
    assert_eq!(changed.model.as_deref(), Some("claude-sonnet-4-5"));
    live.session.set_permission_mode("acceptEdits").await.unwrap();
    live.until(|k| match k {
        EventKind::SettingsChanged(s) if s.permission_mode.is_some() => Some(()),
        _ => None,
    })
    .await;

    // In acceptEdits mode the Write runs without an approval.
    let target = cwd.join("auto.txt");
    mock.set_script(Script::tools_then_done(vec![write_call(&target, "auto")]));
    live.session.send_user_text("two").await.unwrap();
    let second = live.turn().await;
    assert!(!second.is_error);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "auto");
    assert!(!kinds(&live.seen).contains(&"approvalRequested"));

    let requests = mock.requests();
    let last = &requests.last().unwrap().body;
    assert_eq!(last["model"], "claude-sonnet-4-5");
    assert!(last["system"].to_string().contains("NUCLEIC-MARKER"));

    live.session.close_input().await.unwrap();
    assert_eq!(live.finished().await.outcome, RunOutcome::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_interrupt_keeps_the_process_for_the_next_turn() {
    if isolated!("real_claude_interrupt_keeps_the_process_for_the_next_turn") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let long = "word ".repeat(200);
    let mock =
        MockAnthropic::start(Script::text(long).with_chunk_delay(Duration::from_millis(300)))
            .await
            .unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("talk slowly").await.unwrap();
    live.until(|k| match k {
        EventKind::AssistantText(t) if t.is_partial => Some(()),
        _ => None,
    })
    .await;
    live.session.interrupt("test").await.unwrap();
    let turn = live.turn().await;
    assert!(turn.is_error);
    assert_eq!(turn.terminal_reason.as_deref(), Some("aborted_streaming"));

    mock.set_script(Script::text("fresh"));
    live.session.send_user_text("again").await.unwrap();
    let next = live.turn().await;
    assert_eq!(next.result.as_deref(), Some("fresh"));
    live.session.close_input().await.unwrap();
    assert_eq!(live.finished().await.outcome, RunOutcome::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_approval_answers_first_responder_and_edited_input() {
    if isolated!("real_claude_approval_answers_first_responder_and_edited_input") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let target = cwd.join("hello.txt");
    let mock = MockAnthropic::start(Script::write_then_done(&target, "hello")).await.unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("create hello.txt").await.unwrap();
    let ask = live.approval().await;

    // A stale id is refused and never reaches the CLI (which would wait forever or die).
    assert!(matches!(
        live.session.decide("no-such-request", Decision::Allow, "x").await,
        Err(CoreError::UnknownRequest(_))
    ));
    // Edited input must be an object.
    let bad = Decision::AllowEdited { updated_input: json!("text") };
    assert!(live.session.decide(&ask.request_id, bad, "x").await.is_err());

    // Two clients answer at once: exactly one wins, the other learns who did.
    let edited = Decision::AllowEdited {
        updated_input: json!({"file_path": target, "content": "edited by a person\n"}),
    };
    let (a, b) = tokio::join!(
        live.session.decide(&ask.request_id, edited, "phone"),
        live.session.decide(&ask.request_id, Decision::Deny { message: "no".into() }, "desktop"),
    );
    let (winner, loser) = if a.is_ok() { (a, b) } else { (b, a) };
    let winner = winner.unwrap();
    match loser {
        Err(CoreError::AlreadyResolved { by, .. }) => assert_eq!(by, winner.by),
        other => panic!("second answer should be refused: {other:?}"),
    }
    live.turn().await;
    let resolved: Vec<_> =
        live.seen.iter().filter(|e| matches!(e.kind, EventKind::ApprovalResolved(_))).collect();
    assert_eq!(resolved.len(), 1);
    if winner.by == "phone" {
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "edited by a person\n");
    } else {
        assert!(!target.exists());
    }
    live.session.close_input().await.unwrap();
    assert_eq!(live.finished().await.outcome, RunOutcome::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_allow_always_then_deny_and_stop() {
    if isolated!("real_claude_allow_always_then_deny_and_stop") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let (a, b) = (cwd.join("a.txt"), cwd.join("b.txt"));
    let mock = MockAnthropic::start(Script::tools_then_done(vec![
        write_call(&a, "a"),
        write_call(&b, "b"),
    ]))
    .await
    .unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("write two files").await.unwrap();
    let ask = live.approval().await;
    live.session
        .decide(&ask.request_id, Decision::AllowAlways { scope: None }, "test")
        .await
        .unwrap();
    live.turn().await;
    assert!(a.exists() && b.exists());
    let asks =
        live.seen.iter().filter(|e| matches!(e.kind, EventKind::ApprovalRequested(_))).count();
    assert_eq!(asks, 1, "the second Write must not be asked: {:?}", kinds(&live.seen));

    // Allow-always covered Write only: a Bash call is still asked; deny it and stop the turn.
    mock.set_script(Script::bash_then_done("echo hi > c.txt"));
    live.session.send_user_text("run something").await.unwrap();
    let ask = live.approval().await;
    assert_eq!(ask.tool_name, "Bash");
    let r = live
        .session
        .decide(&ask.request_id, Decision::DenyAndStop { message: "stop here".into() }, "test")
        .await
        .unwrap();
    assert_eq!(r.decision, DecisionKind::DenyAndStop);
    let turn = live.turn().await;
    assert!(turn.is_error);
    assert_eq!(turn.terminal_reason.as_deref(), Some("aborted_tools"));
    assert!(!cwd.join("c.txt").exists());
    live.session.close_input().await.unwrap();
    assert_eq!(live.finished().await.outcome, RunOutcome::Interrupted);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_killed_mid_approval_voids_the_request() {
    if isolated!("real_claude_killed_mid_approval_voids_the_request") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mock = MockAnthropic::start(Script::write_then_done(cwd.join("x.txt"), "x")).await.unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("create x.txt").await.unwrap();
    let ask = live.approval().await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(live.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let cancelled = live.until(|k| pick!(k, ApprovalResolved)).await;
    assert_eq!(cancelled.decision, DecisionKind::Cancelled);
    assert_eq!(cancelled.by, "host");
    let done = live.finished().await;
    assert_eq!(done.outcome, RunOutcome::Crashed);
    assert!(done.message.unwrap().contains("signal 9"));
    // A late answer is refused, with who voided it.
    assert!(matches!(
        live.session.decide(&ask.request_id, Decision::Allow, "late").await,
        Err(CoreError::AlreadyResolved { .. }) | Err(CoreError::SessionEnded)
    ));
    live.drain().await;
    let on_disk =
        nucleic_store::read_transcript(&cwd.join(format!(".nh/{}/transcript.jsonl", live.pid)), 1)
            .unwrap();
    assert_eq!(on_disk.events, live.seen);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_stop_ends_the_whole_process_group() {
    if isolated!("real_claude_stop_ends_the_whole_process_group") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mock = MockAnthropic::start(Script::bash_then_done("tail -f /dev/null")).await.unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("sleep").await.unwrap();
    let ask = live.approval().await;
    live.session.decide(&ask.request_id, Decision::Allow, "test").await.unwrap();
    // Wait for the CLI to start the `tail` command.
    let mut members = 0;
    for _ in 0..50 {
        members = nucleic_agents::process::descendants(live.pid).len();
        if members >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Claude Code runs Bash in a session of its own: the tree walk, not the group, must reach it.
    assert!(members >= 2, "the Bash command should be running under the agent");
    let tree = nucleic_agents::process::descendants(live.pid);
    live.session.stop(Duration::from_secs(2), None).await.unwrap();
    assert_eq!(live.finished().await.outcome, RunOutcome::Stopped);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for pid in tree {
        let alive = nucleic_agents::process::proc_stat(pid).is_some_and(|s| !s.zombie);
        assert!(!alive, "agent descendant {pid} survived the stop");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_resume_and_fork_carry_the_conversation() {
    if isolated!("real_claude_resume_and_fork_carry_the_conversation") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mock = MockAnthropic::start(Script::text("remember me")).await.unwrap();
    let mut live = start(&cwd, &mock, |_| {});
    live.session.send_user_text("first run").await.unwrap();
    let started = live.until(|k| pick!(k, SessionStarted)).await;
    live.turn().await;
    live.session.close_input().await.unwrap();
    live.finished().await;

    let id = started.backend_session_id.clone();
    let mut resumed = start(&cwd, &mock, |o| {
        o.common.resume = Some(id.clone());
        o.fork = true;
    });
    resumed.session.send_user_text("second run").await.unwrap();
    let again = resumed.until(|k| pick!(k, SessionStarted)).await;
    assert_ne!(again.backend_session_id, id, "a fork gets a new conversation id");
    resumed.turn().await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].body["messages"].to_string();
    assert!(body.contains("first run"), "the resumed request must carry the earlier conversation");
    resumed.session.close_input().await.unwrap();
    assert_eq!(resumed.finished().await.outcome, RunOutcome::Completed);
}
