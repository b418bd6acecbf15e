//! Idle sessions let their writer go: a session whose agent is alive and waiting for input
//! releases its transcript (file, lock, live bus) after the host's idle deadline, and a
//! follow-up reopens it — transparently to a subscriber attached across it, also when the
//! follow-up races the release.

use std::path::Path;
use std::time::Duration;

use nucleic_core::Subscription;
use nucleic_host::Host;
use nucleic_protocol::{Event, EventKind, FinishAction};

use crate::support::{host, new_session, repo};

/// Reads `sub` until `turns` turns have completed (30 s at most), checking every event
/// continues the last one.
async fn read_turns(sub: &mut Subscription, seen: &mut Vec<Event>, turns: usize) {
    let done = |seen: &Vec<Event>| {
        seen.iter().filter(|e| matches!(e.kind, EventKind::TurnCompleted(_))).count() >= turns
    };
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while !done(seen) {
            let e = sub.next().await.unwrap().expect("the stream ended early");
            assert_eq!(e.seq, seen.last().map_or(1, |l| l.seq + 1), "a gap or a duplicate");
            seen.push(Event::clone(&e));
        }
    })
    .await;
    assert!(read.is_ok(), "turn {turns} did not complete within 30 s");
}

/// Whether another writer could take the transcript now (its lock is free).
fn transcript_free(transcript: &Path) -> bool {
    let mut lock = transcript.as_os_str().to_owned();
    lock.push(".lock");
    nucleic_core::try_lock_file(Path::new(&lock)).unwrap().is_some()
}

async fn until_released(host: &Host, released: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while host.retained().released_writers != released {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{released} released writers expected: {:?}",
            host.retained()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_idle_sessions_release_their_writer_and_reopen_it_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    host.set_idle_release(Some(Duration::from_millis(150))).await;
    let project =
        host.add_project(root.to_str().unwrap(), None, |s| s.pool_size = 0).await.unwrap();
    let session = host.new_session(new_session(&project.project_id, "say hi"), "test").await;
    let id = session.unwrap().session_id;
    let mut sub = host.subscribe(&id, 1).await.unwrap();
    let mut seen = Vec::new();
    read_turns(&mut sub, &mut seen, 1).await;

    // Idle past the deadline: the writer lets the transcript go; the agent lives on.
    until_released(&host, 1).await;
    let transcript = dir.path().join("home/sessions").join(&id).join("transcript.jsonl");
    assert!(transcript_free(&transcript), "the idle session's transcript is unlocked");
    assert_eq!(host.retained().writers, 1, "the session is still live");
    let status = host.session_summary(&id).await.unwrap().status;
    assert_eq!(status, nucleic_protocol::SessionStatus::AwaitingInput);

    // A follow-up reopens it; the subscriber attached across goes on with the next seq.
    host.send_input(&id, "say again").await.unwrap();
    assert!(!transcript_free(&transcript), "the writer holds the transcript again");
    read_turns(&mut sub, &mut seen, 2).await;

    // Follow-ups racing the release: sent just before, at and just after the deadline.
    for round in 0..12u64 {
        let wait = Duration::from_millis(120 + round * 5);
        tokio::time::sleep(wait).await;
        host.send_input(&id, &format!("say round {round}")).await.unwrap();
        read_turns(&mut sub, &mut seen, 3 + round as usize).await;
    }
    let on_disk = nucleic_store::read_transcript(&transcript, 1).unwrap().events;
    assert_eq!(seen[..], on_disk[..seen.len()], "what the subscriber saw is the transcript");
    let prompts = seen.iter().filter(|e| matches!(e.kind, EventKind::UserText(_))).count();
    assert_eq!(prompts, 14, "every prompt once");

    host.finish(&id, FinishAction::Discard, "test").await.unwrap();
}
