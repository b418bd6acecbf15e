//! An idle writer letting its transcript go and reopening it: subscribers attached across it
//! see every event once, in order, and the agent's output racing the release is never lost.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use nucleic_agents::{AgentControl, AgentError, AgentOutput, Capabilities, NativeEvent};
use nucleic_protocol::{
    Backend, Decision, Event, EventKind, RunFinished, RunOutcome, SessionStatus, TextBlock,
    TurnCompleted, Usage,
};
use tokio::sync::mpsc;

use crate::writer_lock::WriterLock;
use crate::{SessionConfig, SessionController, SessionHandle, Subscription};

#[derive(Clone, Default)]
struct Agent;

impl AgentControl for Agent {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            interactive_approvals: false,
            edited_tool_input: false,
            allow_always: false,
            deny_and_stop: false,
            interrupt: false,
            set_model: false,
            set_permission_mode: false,
            resume: false,
            fork: false,
            partial_deltas: false,
        }
    }
    async fn send_user_text(&self, _: &str) -> Result<(), AgentError> {
        Ok(())
    }
    async fn respond(&self, _: &str, _: &Decision) -> Result<(), AgentError> {
        Ok(())
    }
    async fn close_input(&self) {}
    fn stop(&self, _: Duration) {}
    fn pid(&self) -> Option<u32> {
        None
    }
}

fn said(text: &str) -> AgentOutput {
    let kind = EventKind::AssistantText(TextBlock {
        is_partial: false,
        message_id: "m".into(),
        text: text.into(),
    });
    AgentOutput::Events(NativeEvent::from_line("assistant", vec![kind]))
}

fn turn_end() -> AgentOutput {
    let kind = EventKind::TurnCompleted(TurnCompleted {
        stop_reason: None,
        usage: Usage::default(),
        is_error: false,
        terminal_reason: None,
        result: None,
        duration_ms: None,
    });
    AgentOutput::Events(NativeEvent::from_line("result", vec![kind]))
}

fn start(dir: &std::path::Path) -> (SessionHandle, mpsc::Sender<AgentOutput>) {
    let (tx, rx) = mpsc::channel(64);
    let config = SessionConfig {
        session_id: "s".into(),
        backend: Backend::ClaudeCode,
        transcript: dir.join("s/transcript.jsonl"),
        approval_timeout: None,
        created: None,
        keep_open: false,
        policy: None,
    };
    (SessionController::start(config, Agent, rx).unwrap(), tx)
}

/// Waits (5 s at most) until the session's state says `released`.
async fn until_released(session: &SessionHandle, released: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while session.state().released != released {
        assert!(tokio::time::Instant::now() < deadline, "released never became {released}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Reads `sub` to its end, checking each event continues the last.
async fn read_to_end(mut sub: Subscription, from: u64) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(e) = sub.next().await.unwrap() {
            let want = out.last().map_or(from, |l| l.seq + 1);
            assert_eq!(e.seq, want, "a gap or a duplicate");
            out.push(Event::clone(&e));
        }
    })
    .await;
    assert!(read.is_ok(), "the subscription did not end within 10 s");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_writer_lets_its_transcript_go_and_subscribers_see_nothing_odd() {
    let dir = tempfile::tempdir().unwrap();
    let (session, agent) = start(dir.path());
    let path = session.transcript_path().to_owned();
    // A subscriber reading live all along, across both releases.
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<Event>();
    let mut early = session.subscribe(1).unwrap();
    let reader = tokio::spawn(async move {
        let mut all: Vec<Event> = Vec::new();
        while let Some(e) = early.next().await.unwrap() {
            assert_eq!(e.seq, all.last().map_or(1, |l| l.seq + 1), "a gap or a duplicate");
            all.push(Event::clone(&e));
            let _ = seen_tx.send(Event::clone(&e));
        }
        all
    });
    // Waits (2 s at most) until the live subscriber has seen an assistant text `text`.
    let mut saw = async |text: &str| {
        let found = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(e) = seen.recv().await {
                if matches!(&e.kind, EventKind::AssistantText(t) if t.text == text) {
                    return;
                }
            }
        })
        .await;
        assert!(found.is_ok(), "the live subscriber did not get {text:?} within 2 s");
    };
    session.release_when_idle(Some(Duration::from_millis(40))).await.unwrap();
    session.send_user_text("hi").await.unwrap();
    agent.send(said("hello")).await.unwrap();
    agent.send(turn_end()).await.unwrap();
    saw("hello").await;

    // Idle: the writer lets go of the file and its lock (another writer could take it).
    until_released(&session, true).await;
    assert_eq!(session.state().status, SessionStatus::AwaitingInput);
    drop(WriterLock::acquire(&path).expect("the transcript is free while let go"));
    // A subscriber attached while it is let go.
    let middle = session.subscribe(2).unwrap();

    // The agent speaks again on its own: the writer comes back, seq goes on.
    agent.send(said("a background task finished")).await.unwrap();
    // Live, with nothing written after it: the subscriber took the new bus and read the disk.
    saw("a background task finished").await;
    until_released(&session, false).await;
    assert!(WriterLock::acquire(&path).is_err(), "the writer holds the transcript again");
    agent.send(turn_end()).await.unwrap();
    until_released(&session, true).await;
    // A person acts: the same.
    session.send_user_text("more").await.unwrap();
    assert!(!session.state().released);
    agent.send(said("done")).await.unwrap();
    agent
        .send(AgentOutput::Exited(RunFinished::new(RunOutcome::Completed, None, Some(0))))
        .await
        .unwrap();
    drop(agent);

    let all = tokio::time::timeout(Duration::from_secs(10), reader).await.unwrap().unwrap();
    let on_disk = nucleic_store::read_transcript(&path, 1).unwrap().events;
    assert_eq!(all, on_disk, "the early subscriber got the transcript, once, in order");
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.type_name()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "assistantText").count(),
        3,
        "every agent line, across both releases: {kinds:?}"
    );
    let later = read_to_end(middle, 2).await;
    assert_eq!(later, on_disk[1..], "a subscriber attached while let go");
}

/// The agent's output arriving just as the idle deadline fires (before, at, or after the
/// release), round after round: nothing is lost, nothing doubled, and the writer is let go
/// again after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_racing_the_release_is_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let (session, agent) = start(dir.path());
    let path = session.transcript_path().to_owned();
    let sub = session.subscribe(1).unwrap();
    let idle = Duration::from_millis(20);
    session.release_when_idle(Some(idle)).await.unwrap();

    for round in 0..60u64 {
        agent.send(turn_end()).await.unwrap();
        // Around the deadline: from 3 ms early to 3 ms late, in 0.1 ms steps.
        let offset = Duration::from_micros((round % 60) * 100);
        tokio::time::sleep(idle - Duration::from_millis(3) + offset).await;
        agent.send(said(&format!("round {round}"))).await.unwrap();
    }
    agent
        .send(AgentOutput::Exited(RunFinished::new(RunOutcome::Completed, None, Some(0))))
        .await
        .unwrap();
    drop(agent);
    let all = read_to_end(sub, 1).await;
    assert_eq!(all, nucleic_store::read_transcript(&path, 1).unwrap().events);
    let said: Vec<String> = all
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantText(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    let want: Vec<String> = (0..60).map(|r| format!("round {r}")).collect();
    assert_eq!(said, want, "every line once, in order");
    // The race was really run: about half the rounds' lines came after a release.
    let releases = session.state().releases;
    assert!(releases >= 10, "only {releases} of 60 rounds were let go");
}
