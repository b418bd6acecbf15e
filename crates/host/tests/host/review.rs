//! Per-turn diffs and review comments through the host with the simulated agent and real git:
//! each turn's change from its snapshots (the session branch, its index and HEAD untouched),
//! comments checked against the snapshot, kept across a restart, sent as one follow-up citing
//! `path:line`, marked outdated and resolved, and cleared up with the session.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_host::{Host, NewComment};
use nucleic_protocol::{
    CommentStatus, Decision, EventKind, FinishAction, GitFacts, ProtocolErrorCode,
};
use pretty_assertions::assert_eq;

use crate::support::{config, git, new_session, repo};

/// Allows every approval until the session's `n`-th turn completed.
async fn approve_until_turn(host: &Host, id: &str, n: usize) {
    let mut events = host.subscribe(id, 1).await.unwrap();
    let mut done = 0;
    while done < n {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("turn {n} did not complete within 30 s"))
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => {
                let _ = host.decide(id, &a.request_id, Decision::Allow, "test").await;
            }
            EventKind::TurnCompleted(_) => done += 1,
            _ => {}
        }
    }
}

/// Waits (at most 20 s) until turn `n` has its end snapshot; the session's facts then.
async fn turn_ended(host: &Host, id: &str, n: u32) -> GitFacts {
    let start = Instant::now();
    loop {
        let facts = host.git_facts(id, false).await.unwrap();
        if facts.turns.iter().any(|t| t.turn == n && t.ended_at.is_some()) {
            return facts;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "turn {n} never ended: {facts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn paths(facts: &GitFacts) -> Vec<(String, String)> {
    facts.files.iter().map(|f| (f.path.clone(), f.status.clone())).collect()
}

fn comment(path: &str, line: u32, end_line: Option<u32>, body: &str) -> NewComment {
    NewComment { path: path.into(), line, end_line, body: body.into(), snapshot: None }
}

async fn send_turn(host: &Host, id: &str, prompt: &str, n: u32) -> GitFacts {
    host.send_input(id, prompt).await.unwrap();
    approve_until_turn(host, id, n as usize).await;
    turn_ended(host, id, n).await
}

/// A host on a new repository and its session asked to write `a.txt` (its first turn may
/// still run); the temporary directory must outlive the test.
async fn session_writing_a()
-> (tempfile::TempDir, std::path::PathBuf, Arc<Host>, nucleic_protocol::SessionSummary) {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host: Arc<Host> = Host::open(config(dir.path())).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write a.txt containing one"), "test")
        .await
        .unwrap();
    (dir, root, host, s)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_turn_has_its_own_diff_and_review_comments_reach_the_agent() {
    let (dir, root, host, s) = session_writing_a().await;
    let id = s.session_id.clone();
    let worktree = s.worktree.clone().unwrap();
    approve_until_turn(&host, &id, 1).await;
    turn_ended(&host, &id, 1).await;
    let facts = send_turn(
        &host,
        &id,
        "edit a.txt: one -> uno then write b.txt containing two\\nlines\\nthree",
        2,
    )
    .await;
    assert_eq!(facts.turns.len(), 2, "{facts:?}");
    assert_eq!(
        paths(&facts),
        [("a.txt".into(), "untracked".into()), ("b.txt".into(), "untracked".into())]
    );

    // Each turn's own change.
    let first = host.git_facts_of_turn(&id, true, Some(1)).await.unwrap();
    assert_eq!(first.turn, Some(1));
    assert_eq!(paths(&first), [("a.txt".into(), "added".into())]);
    assert!(first.patch.unwrap().contains("+one\n"));
    let second = host.git_facts_of_turn(&id, true, Some(2)).await.unwrap();
    assert_eq!(
        paths(&second),
        [("a.txt".into(), "modified".into()), ("b.txt".into(), "added".into())]
    );
    let patch = second.patch.unwrap();
    assert!(patch.contains("-one\n+uno\n") && patch.contains("+two\n"), "{patch}");
    let missing = host.git_facts_of_turn(&id, false, Some(3)).await.unwrap_err();
    assert_eq!(missing.code(), ProtocolErrorCode::NotFound, "{missing}");
    assert!(missing.to_string().contains("turn 3"), "{missing}");

    // Snapshots are refs of their own: no commit on the branch, nothing staged, HEAD as it was.
    let refs = git(&root, &["for-each-ref", "--format=%(refname)", "refs/nucleic/turns/"]);
    let expected: Vec<String> = ["1-end", "1-start", "2-end", "2-start"]
        .iter()
        .map(|n| format!("refs/nucleic/turns/{id}/{n}"))
        .collect();
    assert_eq!(refs.lines().collect::<Vec<_>>(), expected);
    assert_eq!(git(&root, &["rev-parse", &worktree.branch]).trim(), worktree.base_sha);
    let status = git(Path::new(&worktree.path), &["status", "--porcelain"]);
    assert_eq!(status, "?? a.txt\n?? b.txt\n", "the worktree's index changed");
    // The snapshots went through the session's own index, kept in the host's directory.
    let kept_index = dir.path().join("home/sessions").join(&id).join("snapshot.index");
    assert!(kept_index.is_file(), "no kept snapshot index at {}", kept_index.display());

    // Comments are checked against the snapshot the diff showed.
    let on = |n: NewComment| NewComment { snapshot: second.snapshot.clone(), ..n };
    let a = host
        .add_review_comment(&id, on(comment("a.txt", 1, None, "Keep it English.")), "me")
        .await
        .unwrap();
    assert_eq!((a.quote.clone(), a.status), (vec!["uno".to_owned()], CommentStatus::Open));
    let b = host
        .add_review_comment(
            &id,
            on(comment("b.txt", 2, Some(3), "Two lines are one too many.")),
            "me",
        )
        .await
        .unwrap();
    assert_eq!(b.quote, ["lines", "three"]);
    for (bad, says) in [
        (comment("nope.txt", 1, None, "x"), "nope.txt is not a text file"),
        (comment("../repo/README.md", 1, None, "x"), "not a plain relative path"),
        (comment("a.txt", 2, None, "x"), "line 2 is past the end of a.txt (1 lines)"),
        (comment("b.txt", 3, Some(2), "x"), "lines count from 1"),
        (comment("a.txt", 0, None, "x"), "lines count from 1"),
        (comment("a.txt", 1, None, "  "), "needs some text"),
        (
            NewComment { snapshot: Some("HEAD".into()), ..comment("a.txt", 1, None, "x") },
            "not a snapshot id",
        ),
    ] {
        let e = host.add_review_comment(&id, bad.clone(), "me").await.unwrap_err();
        assert_eq!(e.code(), ProtocolErrorCode::InvalidRequest, "{bad:?}: {e}");
        assert!(e.to_string().contains(says), "{bad:?}: {e}");
    }
    let e = host.resolve_review_comment(&id, "no-such-comment", true).await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::NotFound, "{e}");
    let e = host.review_comments("no-such-session").await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::NotFound, "{e}");

    // They survive a restart of the host.
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    drop(host);
    let host: Arc<Host> = Host::open(config(dir.path())).await.unwrap();
    let kept = host.review_comments(&id).await.unwrap();
    assert_eq!(kept.iter().map(|c| c.citation()).collect::<Vec<_>>(), ["a.txt:1", "b.txt:2-3"]);
    assert!(kept.iter().all(|c| !c.outdated && c.sent_at.is_none()), "{kept:?}");

    // One follow-up cites both; the agent (resumed after the restart) receives it.
    let (sent, prompt) = host.send_review(&id, "me").await.unwrap();
    assert_eq!(sent, 2);
    assert!(prompt.contains("1. a.txt:1\n   > uno\n   Keep it English.\n"), "{prompt}");
    assert!(prompt.contains("2. b.txt:2-3\n   > lines\n   > three\n"), "{prompt}");
    approve_until_turn(&host, &id, 3).await;
    let transcript =
        std::fs::read_to_string(dir.path().join(format!("home/sessions/{id}/transcript.jsonl")))
            .unwrap();
    let said: Vec<String> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<nucleic_protocol::Event>(l).ok())
        .filter_map(|e| match e.kind {
            EventKind::AssistantText(t) => Some(t.text),
            _ => None,
        })
        .collect();
    assert!(
        said.iter().any(|t| t.contains("You said: Review comments")
            && t.contains("a.txt:1")
            && t.contains("b.txt:2-3")),
        "the agent's replies: {said:?}"
    );
    let recorded: Vec<Vec<String>> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<nucleic_protocol::Event>(l).ok())
        .filter_map(|e| match e.kind {
            EventKind::ReviewSent(r) => Some(r.comments.iter().map(|c| c.citation()).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, [["a.txt:1", "b.txt:2-3"]], "one reviewSent event");
    let e = host.send_review(&id, "me").await.unwrap_err();
    assert!(e.to_string().contains("no open review comments that were not sent"), "{e}");

    // A turn that changes a commented line outdates that comment only; resolving is the person's.
    turn_ended(&host, &id, 3).await;
    send_turn(&host, &id, "edit a.txt: uno -> eins", 4).await;
    let now = host.review_comments(&id).await.unwrap();
    assert_eq!(now.iter().map(|c| c.outdated).collect::<Vec<_>>(), [true, false], "{now:?}");
    assert!(now.iter().all(|c| c.sent_at.is_some()));
    let resolved = host.resolve_review_comment(&id, &a.comment_id, true).await.unwrap();
    assert_eq!(resolved.status, CommentStatus::Resolved);
    let fourth = host.git_facts_of_turn(&id, false, Some(4)).await.unwrap();
    assert_eq!(paths(&fourth), [("a.txt".into(), "modified".into())]);

    // Discarding the session removes its snapshots; its comments stay readable, no new ones.
    host.finish(&id, FinishAction::Discard, "test").await.unwrap();
    let refs = git(&root, &["for-each-ref", "refs/nucleic/turns/"]);
    assert_eq!(refs, "", "snapshots left after discard");
    assert!(!kept_index.exists(), "the kept snapshot index is left after discard");
    let e =
        host.add_review_comment(&id, comment("a.txt", 1, None, "late"), "me").await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::InvalidRequest, "{e}");
    assert!(e.to_string().contains("is gone (discarded or rolled back)"), "{e}");
    assert!(host.send_review(&id, "me").await.unwrap_err().to_string().contains("is gone"));
    assert_eq!(host.review_comments(&id).await.unwrap().len(), 2);

    // Snapshots no session's worktree owns are found and removed by gc.
    let tree = git(&root, &["rev-parse", "main^{tree}"]);
    git(&root, &["update-ref", "refs/nucleic/turns/gone-session/1-start", tree.trim()]);
    let dry = serde_json::to_value(host.gc(false).await.unwrap()).unwrap();
    assert_eq!(dry["staleTurnSnapshots"], serde_json::json!(["gone-session"]), "{dry}");
    serde_json::to_value(host.gc(true).await.unwrap()).unwrap();
    assert_eq!(git(&root, &["for-each-ref", "refs/nucleic/"]), "");
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}

/// A turn snapshot reads the worktree through a temporary index in the worktree's git dir, so
/// removing the worktree under it failed ("Directory not empty", seen once under load). Held
/// here as a snapshot in flight holds it, the discard waits and the worktree stays; released,
/// the discard goes through.
#[tokio::test(flavor = "multi_thread")]
async fn a_discard_waits_for_the_turn_snapshot_in_flight() {
    let (_dir, root, host, s) = session_writing_a().await;
    let (id, worktree) = (s.session_id.clone(), s.worktree.clone().unwrap());
    approve_until_turn(&host, &id, 1).await;
    turn_ended(&host, &id, 1).await;

    let snapshot_in_flight = host.no_snapshots(&id).await;
    let discard = tokio::spawn({
        let (host, id) = (host.clone(), id.clone());
        async move { host.finish(&id, FinishAction::Discard, "test").await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!discard.is_finished(), "the discard did not wait for the snapshot in flight");
    assert!(Path::new(&worktree.path).join("a.txt").exists(), "the worktree went meanwhile");

    drop(snapshot_in_flight);
    tokio::time::timeout(Duration::from_secs(20), discard)
        .await
        .expect("the discard did not end within 20 s of the snapshot's end")
        .unwrap()
        .unwrap();
    assert!(!Path::new(&worktree.path).exists(), "the worktree is still there");
    let refs = git(&root, &["for-each-ref", "--format=%(refname)", "refs/nucleic/turns/"]);
    assert_eq!(refs, "", "the discarded session's snapshots are left");
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}

/// A turn that starts on a worktree nothing touched since the last turn's end snapshot starts
/// from that tree without a git process; an edit made between the two turns (the person's, in
/// their editor) is seen, and stays out of the next turn's diff.
#[tokio::test(flavor = "multi_thread")]
async fn a_turn_start_on_an_untouched_worktree_costs_no_git_process() {
    let (_dir, _root, host, s) = session_writing_a().await;
    let id = s.session_id.clone();
    let worktree = s.worktree.clone().unwrap();
    approve_until_turn(&host, &id, 1).await;
    turn_ended(&host, &id, 1).await;

    // Nothing touched the worktree: the start costs nothing (the agent is slow to answer, so
    // its end snapshot cannot be counted in).
    let before = nucleic_git::git_processes();
    host.send_input(&id, "slow: write b.txt containing two").await.unwrap();
    assert_eq!(nucleic_git::git_processes(), before, "the untouched turn start ran git");
    approve_until_turn(&host, &id, 2).await;
    turn_ended(&host, &id, 2).await;

    // The person edits a.txt between turns 2 and 3: turn 3 starts after it, so its diff is
    // only the agent's own change.
    std::fs::write(Path::new(&worktree.path).join("a.txt"), "edited between turns\n").unwrap();
    let before = nucleic_git::git_processes();
    host.send_input(&id, "slow: write c.txt containing three").await.unwrap();
    assert_eq!(nucleic_git::git_processes() - before, 1, "the touched turn start: one git process");
    approve_until_turn(&host, &id, 3).await;
    turn_ended(&host, &id, 3).await;
    let third = host.git_facts_of_turn(&id, true, Some(3)).await.unwrap();
    assert_eq!(paths(&third), [("c.txt".into(), "added".into())], "{third:?}");
    let second = host.git_facts_of_turn(&id, true, Some(2)).await.unwrap();
    assert_eq!(paths(&second), [("b.txt".into(), "added".into())], "{second:?}");
}
