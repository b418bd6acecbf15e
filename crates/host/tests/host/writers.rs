//! One writer per transcript, through the host with the simulated agent: many follow-ups (and a
//! rename) sent at once to a session whose agent has exited resume it once — one new agent, one
//! new writer — and the transcript stays gapless and duplicate-free; a session started without a
//! prompt, stopped before one, starts afresh on its first.
//!
//! CI runs a few rounds; for the 1,000-round run:
//! `NUCLEIC_FOLLOWUP_ROUNDS=1000 cargo nextest run -p nucleic-cli -E 'test(host_concurrent_follow_ups)'`

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nucleic_host::Host;
use nucleic_protocol::{EventKind, FinishAction};

use crate::support::{host, new_session, repo};

/// Follow-ups sent at once in each round.
const FOLLOW_UPS: usize = 8;

fn rounds() -> usize {
    std::env::var("NUCLEIC_FOLLOWUP_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

/// Reads the session's events from `from_seq` until one matches `done` (30 s at most).
async fn wait_for(host: &Host, id: &str, from_seq: u64, done: impl Fn(&EventKind) -> bool) {
    let mut events = host.subscribe(id, from_seq).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(e) = events.next().await.unwrap() {
            if done(&e.kind) {
                return;
            }
        }
        panic!("the session's stream ended before the awaited event");
    })
    .await;
    assert!(waited.is_ok(), "no awaited event from seq {from_seq} within 30 s");
}

/// The running (not zombie) simulated agents of the session in `worktree`: the top process of
/// each agent tree (bubblewrap's, when the agent runs under it).
fn sim_agents(worktree: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_sim = args.contains(&b"__sim-agent".as_slice());
        let ours = args.contains(&worktree.as_os_str().as_encoded_bytes())
            || std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == worktree);
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let running = fields.next() != Some("Z");
        let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        if is_sim && ours && running {
            found.push((pid, ppid));
        }
    }
    let pids: Vec<u32> = found.iter().map(|(p, _)| *p).collect();
    found.into_iter().filter(|(_, ppid)| !pids.contains(ppid)).map(|(p, _)| p).collect()
}

/// Rounds per session: a transcript read on every resume grows with it, so a long run moves to a
/// fresh session now and then.
const ROUNDS_PER_SESSION: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_concurrent_follow_ups_to_a_dormant_session_start_one_writer() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let rounds = rounds();
    let started = std::time::Instant::now();
    let mut events = 0;
    for first in (0..rounds).step_by(ROUNDS_PER_SESSION) {
        let count = ROUNDS_PER_SESSION.min(rounds - first);
        events += session_rounds(&host, dir.path(), &project.project_id, first, count).await;
        eprintln!("round {}: {:.1} s", first + count, started.elapsed().as_secs_f64());
    }
    eprintln!(
        "{rounds} rounds of {FOLLOW_UPS} concurrent follow-ups + a rename: {events} events, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Runs rounds `first..first + rounds` on a new session, checks its transcript, discards it;
/// returns how many events it wrote.
async fn session_rounds(
    host: &Arc<Host>,
    dir: &Path,
    project: &str,
    first: usize,
    rounds: usize,
) -> usize {
    let session = host.new_session(new_session(project, "say hello"), "test").await.unwrap();
    let id = session.session_id.clone();
    let worktree = Path::new(&session.worktree.as_ref().unwrap().path).canonicalize().unwrap();
    wait_for(host, &id, 1, |k| matches!(k, EventKind::TurnCompleted(_))).await;
    assert_eq!(sim_agents(&worktree).len(), 1, "the first agent runs");

    for round in first..first + rounds {
        // Make the session dormant: its agent exits (the writer stays, refusing prompts).
        let before = host.session_summary(&id).await.unwrap().last_seq;
        host.stop(&id).await.unwrap();
        wait_for(host, &id, before + 1, |k| matches!(k, EventKind::RunFinished(_))).await;
        assert!(sim_agents(&worktree).is_empty(), "round {round}: the agent is gone");

        // Every follow-up at once (each would resume the session), and a host event too.
        let mut tasks = tokio::task::JoinSet::new();
        for k in 0..FOLLOW_UPS {
            let (host, id) = (Arc::clone(host), id.clone());
            tasks.spawn(async move { host.send_input(&id, &format!("say r{round}f{k}")).await });
        }
        let (renamer, key) = (Arc::clone(host), id.clone());
        tasks.spawn(async move { renamer.rename(&key, &format!("round {round}"), "test").await });
        while let Some(sent) = tasks.join_next().await {
            sent.unwrap().unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        let agents = sim_agents(&worktree);
        assert_eq!(agents.len(), 1, "round {round}: exactly one agent resumed: {agents:?}");
    }
    let before = host.session_summary(&id).await.unwrap().last_seq;
    host.stop(&id).await.unwrap();
    wait_for(host, &id, before + 1, |k| matches!(k, EventKind::RunFinished(_))).await;

    // The transcript: 1..=n, each follow-up and rename once, one run per agent started.
    let text = std::fs::read_to_string(session_transcript(dir, &id)).unwrap();
    let events: Vec<nucleic_protocol::Event> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "gapless, no duplicate");
    let mut prompts: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserText(t) if t.text.starts_with("say r") => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    prompts.sort();
    let mut expected: Vec<String> = (first..first + rounds)
        .flat_map(|r| (0..FOLLOW_UPS).map(move |k| format!("say r{r}f{k}")))
        .collect();
    expected.sort();
    assert_eq!(prompts, expected, "every follow-up recorded exactly once");
    let count = |f: fn(&EventKind) -> bool| events.iter().filter(|e| f(&e.kind)).count();
    assert_eq!(count(|k| matches!(k, EventKind::SessionUpdated(_))), rounds);
    assert_eq!(
        count(|k| matches!(k, EventKind::RunFinished(_))),
        rounds + 1,
        "one agent run per round, plus the first"
    );
    host.finish(&id, FinishAction::Discard, "test").await.unwrap();
    events.len()
}

fn session_transcript(dir: &Path, id: &str) -> std::path::PathBuf {
    dir.join("home").join("sessions").join(id).join("transcript.jsonl")
}

/// A second host opened on a home whose session is live would close that session as
/// "interrupted" — writing into a transcript another writer owns. It is refused, naming the
/// transcript, and the live session's transcript stays gapless.
#[tokio::test(flavor = "multi_thread")]
async fn host_a_second_host_on_a_live_home_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let first = host(dir.path()).await;
    let project = first.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    // The agent stays alive, waiting for an answer (a finished run's writer is retired).
    let prompt = "write notes.txt containing hi";
    let session = first.new_session(new_session(&project.project_id, prompt), "test").await;
    let id = session.unwrap().session_id;
    wait_for(&first, &id, 1, |k| matches!(k, EventKind::ApprovalRequested(_))).await;

    let second = Host::open(crate::support::config(dir.path())).await;
    let Err(refused) = second else {
        let row = first.session_summary(&id).await.unwrap();
        panic!("a second host on a live home is refused: {row:?}")
    };
    let refused = refused.to_string();
    assert!(refused.contains("already has a writer"), "{refused}");
    assert!(refused.contains(&id), "the refusal names the transcript: {refused}");
    let mut events = first.subscribe(&id, 1).await.unwrap();
    let asked = loop {
        let e = events.next().await.unwrap().expect("the approval is in the transcript");
        if let EventKind::ApprovalRequested(a) = &e.kind {
            break a.request_id.clone();
        }
    };
    first.decide(&id, &asked, nucleic_protocol::Decision::Allow, "test").await.unwrap();
    wait_for(&first, &id, 1, |k| matches!(k, EventKind::TurnCompleted(_))).await;

    // The first host's session carries on, its transcript untouched by the second.
    first.send_input(&id, "say again").await.unwrap();
    wait_for(&first, &id, 1, |k| {
        matches!(k, EventKind::AssistantText(t) if !t.is_partial && t.text.contains("say again"))
    })
    .await;
    let before = first.session_summary(&id).await.unwrap().last_seq;
    first.stop(&id).await.unwrap();
    wait_for(&first, &id, before + 1, |k| matches!(k, EventKind::RunFinished(_))).await;
    let text = std::fs::read_to_string(session_transcript(dir.path(), &id)).unwrap();
    let events: Vec<nucleic_protocol::Event> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "gapless, no duplicate");
    let interrupted = events.iter().any(|e| {
        matches!(&e.kind, EventKind::RunFinished(r) if r.outcome == nucleic_protocol::RunOutcome::Interrupted)
    });
    assert!(!interrupted, "the second host closed nothing");
}

/// Events written outside a writer (a rename after the host stopped its agents) are announced on
/// `Host::writes` — how a client's stream of a dormant session learns of them without the
/// catalog — and land after the run's end.
#[tokio::test(flavor = "multi_thread")]
async fn host_writes_outside_a_writer_are_announced() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let session = host.new_session(new_session(&project.project_id, "say hello"), "test").await;
    let id = session.unwrap().session_id;
    wait_for(&host, &id, 1, |k| matches!(k, EventKind::TurnCompleted(_))).await;
    let report = host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    assert_eq!(report.stopped, vec![id.clone()], "{report:?}");

    let mut writes = host.writes();
    let before = host.session_summary(&id).await.unwrap().last_seq;
    host.rename(&id, "renamed", "test").await.unwrap();
    let announced = tokio::time::timeout(Duration::from_secs(5), writes.recv()).await;
    assert_eq!(announced.expect("announced within 5 s").unwrap(), id);
    let mut events = host.subscribe(&id, before + 1).await.unwrap();
    let renamed = events.next().await.unwrap().unwrap();
    assert_eq!(renamed.seq, before + 1);
    assert!(
        matches!(&renamed.kind, EventKind::SessionUpdated(u) if u.title.as_deref() == Some("renamed"))
    );
}

/// A session started without a prompt (`nucleic acp`'s `session/new`) waits idle, sends the
/// agent nothing, and — stopped before its first prompt, with no conversation to resume — starts
/// afresh on its first follow-up, which becomes its first turn.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_without_a_prompt_waits_and_starts_afresh_once_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let session = host.new_session(new_session(&project.project_id, ""), "test").await.unwrap();
    let id = session.session_id.clone();
    let worktree = Path::new(&session.worktree.as_ref().unwrap().path).canonicalize().unwrap();
    assert_eq!(session.status, nucleic_protocol::SessionStatus::Idle, "{session:?}");
    assert_eq!(sim_agents(&worktree).len(), 1, "its agent runs, waiting");

    let before = host.session_summary(&id).await.unwrap().last_seq;
    host.stop(&id).await.unwrap();
    wait_for(&host, &id, before + 1, |k| matches!(k, EventKind::RunFinished(_))).await;
    host.send_input(&id, "say first").await.unwrap();
    wait_for(&host, &id, 1, |k| matches!(k, EventKind::TurnCompleted(_))).await;
    let text = std::fs::read_to_string(session_transcript(dir.path(), &id)).unwrap();
    let prompts: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<nucleic_protocol::Event>(l).unwrap())
        .filter_map(|e| match e.kind {
            EventKind::UserText(t) => Some(t.text),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, ["say first"], "the follow-up is the only prompt");
    let stopped = host.session_summary(&id).await.unwrap();
    assert!(stopped.last_seq > before, "{stopped:?}");
}
