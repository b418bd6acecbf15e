//! Component tests of the session controller with an in-process fake agent (fast and exact):
//! seq and transcript, subscriptions from any seq, status, approvals (first responder wins,
//! voiding, timeouts, capabilities), the host's own questions, and a full disk.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "core/host_asks.rs"]
mod host_asks;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_agents::{AgentControl, AgentError, AgentOutput, Capabilities, NativeEvent};
use nucleic_core::{CoreError, SessionConfig, SessionController, SessionHandle};
use nucleic_protocol::{
    ApprovalRequested, Backend, Decision, DecisionKind, Event, EventKind, RunFinished, RunOutcome,
    SessionStatus, TextBlock, TurnCompleted, Usage,
};
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Text(String),
    Respond(String, Decision),
    Interrupt,
}

#[derive(Clone)]
struct FakeAgent {
    calls: Arc<Mutex<Vec<Call>>>,
    waiting: Arc<Mutex<HashSet<String>>>,
    caps: Capabilities,
}

const ALL: Capabilities = Capabilities {
    interactive_approvals: true,
    edited_tool_input: true,
    allow_always: true,
    deny_and_stop: true,
    interrupt: true,
    set_model: true,
    set_permission_mode: true,
    resume: true,
    fork: true,
    partial_deltas: true,
};

impl AgentControl for FakeAgent {
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        if text == "closed" {
            return Err(AgentError::InputClosed);
        }
        self.calls.lock().unwrap().push(Call::Text(text.into()));
        Ok(())
    }
    async fn respond(&self, id: &str, d: &Decision) -> Result<(), AgentError> {
        if !self.waiting.lock().unwrap().remove(id) {
            return Err(AgentError::UnknownRequest(id.into()));
        }
        // Widen the race window between concurrent deciders.
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().push(Call::Respond(id.into(), d.clone()));
        Ok(())
    }
    async fn interrupt(&self) -> Result<(), AgentError> {
        self.calls.lock().unwrap().push(Call::Interrupt);
        Ok(())
    }
    async fn set_model(&self, _: &str) -> Result<(), AgentError> {
        Ok(())
    }
    async fn set_permission_mode(&self, _: &str) -> Result<(), AgentError> {
        Ok(())
    }
    async fn close_input(&self) {}
    fn stop(&self, _: Duration) {}
    fn pid(&self) -> Option<u32> {
        None
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    agent: FakeAgent,
    tx: mpsc::Sender<AgentOutput>,
    session: SessionHandle,
}

fn rig_in(dir: tempfile::TempDir, caps: Capabilities, timeout: Option<Duration>) -> Rig {
    rig_with(dir, caps, timeout, false)
}

fn rig_with(
    dir: tempfile::TempDir,
    caps: Capabilities,
    timeout: Option<Duration>,
    keep_open: bool,
) -> Rig {
    let agent = FakeAgent { calls: Arc::default(), waiting: Arc::default(), caps };
    let (tx, rx) = mpsc::channel(16);
    let config = SessionConfig {
        session_id: "s1".into(),
        backend: Backend::ClaudeCode,
        transcript: dir.path().join("s1/transcript.jsonl"),
        approval_timeout: timeout,
        created: None,
        keep_open,
        policy: None,
    };
    let session = SessionController::start(config, agent.clone(), rx).unwrap();
    Rig { _dir: dir, agent, tx, session }
}

fn rig() -> Rig {
    rig_in(tempfile::tempdir().unwrap(), ALL, None)
}

fn text(t: &str) -> EventKind {
    EventKind::AssistantText(TextBlock {
        is_partial: false,
        message_id: "m".into(),
        text: t.into(),
    })
}

fn ask(id: &str) -> EventKind {
    EventKind::ApprovalRequested(ApprovalRequested {
        request_id: id.into(),
        tool_call_id: Some(format!("toolu_{id}")),
        tool_name: "Write".into(),
        input: json!({"file_path": "/w/a", "content": "x"}),
        description: None,
        blocked_path: None,
        risk: None,
        risk_reasons: Vec::new(),
    })
}

fn turn_done() -> EventKind {
    EventKind::TurnCompleted(TurnCompleted {
        stop_reason: Some("end_turn".into()),
        usage: Usage::default(),
        is_error: false,
        terminal_reason: Some("completed".into()),
        result: None,
        duration_ms: None,
    })
}

impl Rig {
    async fn emit(&self, kinds: Vec<EventKind>) {
        self.tx
            .send(AgentOutput::Events(NativeEvent::from_line("assistant", kinds)))
            .await
            .unwrap();
    }
    async fn exit(&self, outcome: RunOutcome) {
        self.tx.send(AgentOutput::Exited(RunFinished::new(outcome, None, Some(0)))).await.unwrap();
    }
    /// Opens approval `id` as the agent would and waits until the controller has it.
    async fn open_approval(&self, id: &str) {
        self.agent.waiting.lock().unwrap().insert(id.into());
        let mut sub = self.session.subscribe(self.session.state().last_seq + 1).unwrap();
        self.emit(vec![ask(id)]).await;
        loop {
            let e = sub.next().await.unwrap().unwrap();
            if matches!(e.kind, EventKind::ApprovalRequested(_)) {
                break;
            }
        }
    }
    async fn all_events(&self) -> Vec<Event> {
        let mut sub = self.session.subscribe(1).unwrap();
        let mut out = Vec::new();
        while let Some(e) = sub.next().await.unwrap() {
            out.push(Event::clone(&e));
        }
        out
    }
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

#[tokio::test]
async fn seq_is_gapless_and_the_transcript_matches_what_subscribers_saw() {
    let r = rig();
    r.session.send_user_text("hi").await.unwrap();
    for i in 0..50 {
        r.emit(vec![text(&format!("t{i}"))]).await;
    }
    r.exit(RunOutcome::Completed).await;
    let seen = r.all_events().await;
    assert_eq!(
        seen.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=seen.len() as u64).collect::<Vec<_>>()
    );
    let disk = nucleic_store::read_transcript(r.session.transcript_path(), 1).unwrap().events;
    assert_eq!(disk, seen);
    assert_eq!(r.agent.calls.lock().unwrap()[0], Call::Text("hi".into()));
    assert_eq!(r.session.state().status, SessionStatus::Finished);
}

#[tokio::test]
async fn subscribers_start_anywhere_and_a_lagging_one_catches_up_from_disk() {
    let r = rig();
    let mut slow = r.session.subscribe(1).unwrap();
    // Far more events than the live bus holds: the slow reader must fall back to disk.
    for chunk in 0..100 {
        r.emit((0..100).map(|i| text(&format!("{chunk}-{i}"))).collect()).await;
    }
    r.exit(RunOutcome::Completed).await;
    let mut n = 0u64;
    while let Some(e) = slow.next().await.unwrap() {
        n += 1;
        assert_eq!(e.seq, n, "gap or duplicate");
    }
    assert!(n > 10_000);
    let mut mid = r.session.subscribe(5000).unwrap();
    assert_eq!(mid.next().await.unwrap().unwrap().seq, 5000);
    let mut future = r.session.subscribe(n + 100).unwrap();
    assert!(future.next().await.unwrap().is_none(), "a finished session has nothing past its end");
}

#[tokio::test]
async fn a_future_cursor_waits_for_its_event_without_duplicates() {
    let r = rig();
    let mut sub = r.session.subscribe(3).unwrap();
    let waiting = tokio::time::timeout(Duration::from_millis(100), sub.next()).await;
    assert!(waiting.is_err(), "nothing to deliver yet");
    r.emit(vec![text("a"), text("b"), text("c")]).await;
    assert_eq!(sub.next().await.unwrap().unwrap().seq, 3);
}

#[tokio::test]
async fn status_follows_the_run() {
    let r = rig();
    r.session.send_user_text("go").await.unwrap();
    r.open_approval("r1").await;
    assert_eq!(r.session.state().status, SessionStatus::AwaitingApproval);
    assert_eq!(r.session.state().pending_approvals, 1);
    r.session.decide("r1", Decision::Allow, "desk").await.unwrap();
    assert_eq!(r.session.state().status, SessionStatus::Running);
    r.emit(vec![turn_done()]).await;
    r.exit(RunOutcome::Crashed).await;
    let events = r.all_events().await;
    let statuses: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StatusChanged(s) => Some(s.status),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            SessionStatus::Running,
            SessionStatus::AwaitingApproval,
            SessionStatus::Running,
            SessionStatus::AwaitingInput,
            SessionStatus::Error
        ]
    );
}

#[tokio::test]
async fn first_responder_wins_across_many_concurrent_answers() {
    for round in 0..20 {
        let r = rig();
        let id = format!("req{round}");
        r.open_approval(&id).await;
        let mut tasks = Vec::new();
        for client in 0..6 {
            let s = r.session.clone();
            let id = id.clone();
            tasks.push(tokio::spawn(async move {
                s.decide(&id, Decision::Allow, &format!("client{client}")).await
            }));
        }
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(res) => winners.push(res.by),
                Err(CoreError::AlreadyResolved { by, decision, .. }) => {
                    assert_eq!(decision, DecisionKind::Allow);
                    losers.push(by);
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(winners.len(), 1);
        assert!(losers.iter().all(|b| *b == winners[0]), "losers learn who won");
        let responds =
            r.agent.calls.lock().unwrap().iter().filter(|c| matches!(c, Call::Respond(..))).count();
        assert_eq!(responds, 1, "exactly one answer reaches the agent");
    }
}

#[tokio::test]
async fn stale_and_unknown_decisions_are_refused_and_never_reach_the_agent() {
    let r = rig();
    assert!(matches!(
        r.session.decide("nope", Decision::Allow, "x").await,
        Err(CoreError::UnknownRequest(_))
    ));
    r.open_approval("r1").await;
    let bad = Decision::Deny { message: "   ".into() };
    assert!(r.session.decide("r1", bad, "x").await.is_err());
    assert!(r.agent.calls.lock().unwrap().is_empty());
    assert_eq!(
        r.session.state().pending_approvals,
        1,
        "a refused decision leaves the request open"
    );
}

#[tokio::test]
async fn pending_approvals_are_voided_when_the_turn_ends_or_the_agent_dies() {
    let r = rig();
    r.open_approval("a").await;
    r.emit(vec![turn_done()]).await;
    r.open_approval("b").await;
    r.exit(RunOutcome::Crashed).await;
    let events = r.all_events().await;
    let voided: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalResolved(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(voided.len(), 2);
    assert!(voided.iter().all(|v| v.decision == DecisionKind::Cancelled && v.by == "host"));
    let k = kinds(&events);
    let pos = |name: &str| k.iter().position(|x| *x == name).unwrap();
    assert!(pos("approvalResolved") < pos("turnCompleted"), "voided before the turn's end: {k:?}");
    assert!(matches!(
        r.session.decide("b", Decision::Allow, "late").await,
        Err(CoreError::SessionEnded | CoreError::AlreadyResolved { .. })
    ));
}

#[tokio::test]
async fn unanswered_approvals_are_denied_by_the_timeout() {
    let r = rig_in(tempfile::tempdir().unwrap(), ALL, Some(Duration::from_millis(100)));
    r.open_approval("r1").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let calls = r.agent.calls.lock().unwrap().clone();
    assert!(
        matches!(&calls[..], [Call::Respond(id, Decision::Deny { message })] if id == "r1" && message.contains("timeout")),
        "{calls:?}"
    );
    match r.session.decide("r1", Decision::Allow, "late").await {
        Err(CoreError::AlreadyResolved { by, .. }) => assert_eq!(by, "host:timeout"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn decisions_a_backend_cannot_carry_are_refused_clearly() {
    let caps = Capabilities { edited_tool_input: false, allow_always: false, ..ALL };
    let r = rig_in(tempfile::tempdir().unwrap(), caps, None);
    r.open_approval("r1").await;
    let edited = Decision::AllowEdited { updated_input: json!({}) };
    match r.session.decide("r1", edited, "x").await {
        Err(CoreError::Unsupported(m)) => assert!(m.contains("edited tool input")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        r.session.decide("r1", Decision::AllowAlways { scope: None }, "x").await,
        Err(CoreError::Unsupported(_))
    ));
    r.session.decide("r1", Decision::Allow, "x").await.unwrap();
}

#[tokio::test]
async fn settings_a_backend_cannot_change_are_refused_before_the_agent() {
    let caps = Capabilities { set_model: false, set_permission_mode: false, ..ALL };
    let r = rig_in(tempfile::tempdir().unwrap(), caps, None);
    match r.session.set_model("other").await {
        Err(CoreError::Unsupported(m)) => assert!(m.contains("model mid-session"), "{m}"),
        other => panic!("{other:?}"),
    }
    match r.session.set_permission_mode("plan").await {
        Err(CoreError::Unsupported(m)) => assert!(m.contains("permission mode"), "{m}"),
        other => panic!("{other:?}"),
    }
    r.exit(RunOutcome::Completed).await;
    // Refused, not failed: nothing was recorded.
    assert!(!kinds(&r.all_events().await).contains(&"error"));
}

#[tokio::test]
async fn a_prompt_the_agent_cannot_take_is_an_error_event() {
    let r = rig();
    assert!(r.session.send_user_text("closed").await.is_err());
    r.session.interrupt("desk").await.unwrap();
    r.exit(RunOutcome::Completed).await;
    let k = kinds(&r.all_events().await);
    assert!(k.starts_with(&["userText", "statusChanged", "error", "interruptRequested"]), "{k:?}");
}

#[tokio::test]
async fn a_full_disk_holds_events_in_memory_and_loses_nothing() {
    if nucleic_testkit::isolated!("a_full_disk_holds_events_in_memory_and_loses_nothing", mounts) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    // Fill the disk.
    let filler = dir.path().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 128 * 1024]);
    let r = rig_in(dir, ALL, None);
    let mut sub = r.session.subscribe(1).unwrap();
    r.emit((0..20).map(|i| text(&format!("event {i} {}", "x".repeat(100)))).collect()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let state = r.session.state();
    assert!(
        state.storage_error.as_deref().is_some_and(|e| e.contains("No space left")),
        "{state:?}"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), sub.next()).await.is_err(),
        "nothing is told before it is written"
    );
    // Space comes back: the held events are written first, in order, then the new one.
    std::fs::remove_file(&filler).unwrap();
    r.emit(vec![text("after")]).await;
    r.exit(RunOutcome::Completed).await;
    let mut n = 0;
    while let Some(e) = sub.next().await.unwrap() {
        n += 1;
        assert_eq!(e.seq, n);
    }
    assert_eq!(n, 24, "20 held (+ the idle→running status) + 1 + runFinished + its status");
    assert!(r.session.state().storage_error.is_none());
}

#[tokio::test]
async fn events_held_by_a_full_disk_are_written_after_the_agent_exits() {
    if nucleic_testkit::isolated!(
        "events_held_by_a_full_disk_are_written_after_the_agent_exits",
        mounts
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    let filler = dir.path().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 128 * 1024]);
    let r = rig_in(dir, ALL, None);
    let mut sub = r.session.subscribe(1).unwrap();
    r.emit(vec![text("held")]).await;
    r.exit(RunOutcome::Completed).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(r.session.state().storage_error.is_some());
    std::fs::remove_file(&filler).unwrap();
    let mut seqs = Vec::new();
    while let Some(e) =
        tokio::time::timeout(Duration::from_secs(10), sub.next()).await.unwrap().unwrap()
    {
        seqs.push(e.seq);
    }
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(seqs.len() >= 3, "held text, its status change and runFinished: {seqs:?}");
}

#[tokio::test]
async fn a_kept_open_session_records_host_events_after_the_agent_exits() {
    let r = rig_with(tempfile::tempdir().unwrap(), ALL, None, true);
    r.open_approval("r1").await;
    r.exit(RunOutcome::Completed).await;
    r.session.wait_finished().await;
    let update = EventKind::SessionUpdated(nucleic_protocol::SessionUpdated {
        title: Some("renamed".into()),
        archived: None,
        mode: None,
        note: None,
        by: "desk".into(),
    });
    r.session.record(update).await.unwrap();
    assert!(matches!(r.session.send_user_text("more").await, Err(CoreError::AgentGone)));
    match r.session.decide("r1", Decision::Allow, "late").await {
        Err(CoreError::AlreadyResolved { by, decision, .. }) => {
            assert_eq!((by.as_str(), decision), ("host", DecisionKind::Cancelled));
        }
        other => panic!("{other:?}"),
    }
    let mut sub = r.session.subscribe(1).unwrap();
    let mut last = None;
    while let Ok(Ok(Some(e))) = tokio::time::timeout(Duration::from_millis(200), sub.next()).await {
        last = Some(e.kind.type_name());
    }
    assert_eq!(last, Some("sessionUpdated"));
}

#[tokio::test]
async fn catching_up_a_long_idle_session_does_not_stop_at_a_chunk() {
    let r = rig_with(tempfile::tempdir().unwrap(), ALL, None, true);
    for chunk in 0..100 {
        r.emit((0..100).map(|i| text(&format!("{chunk}-{i}"))).collect()).await;
    }
    // Wait until everything is written; then nothing more happens (an idle session).
    while r.session.state().last_seq < 10_001 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for from in [1u64, 4_000, 9_000] {
        let mut sub = r.session.subscribe(from).unwrap();
        let mut next = from;
        while next <= 10_001 {
            let e = tokio::time::timeout(Duration::from_secs(5), sub.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            assert_eq!(e.seq, next);
            next += 1;
        }
    }
    // A replay of the transcript alone (no writer) reads it once, in order.
    let mut replay =
        nucleic_core::Subscription::replay(r.session.transcript_path().to_owned(), 1).unwrap();
    let mut n = 0;
    while let Some(e) = replay.next().await.unwrap() {
        n += 1;
        assert_eq!(e.seq, n);
    }
    assert_eq!(n, 10_001);
}
