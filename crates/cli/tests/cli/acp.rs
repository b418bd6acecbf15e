//! `nucleic acp` end to end: the real binary against a real daemon running the simulated agent,
//! driven by the official ACP TypeScript SDK's client (`crates/cli/tests/acp-peer`, pinned) as
//! an independent peer. A new session, a prompt whose tool call asks permission in the editor
//! and is answered first by another Nucleic client (`nucleic session approve`), so the editor's
//! request is withdrawn; a turn cancelled; the editor closing while the session goes on; and
//! `session/load` from a new editor catching up with no gap and no duplicate.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::chat_bridge::setup;
use crate::support::nucleic;

/// The peer's folder, its packages installed (`npm ci`, as scripts/test.sh does).
pub(crate) fn peer_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp-peer");
    let sdk = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "{} is missing: run `npm --prefix crates/cli/tests/acp-peer ci` (scripts/test.sh does)",
        sdk.display()
    );
    dir
}

/// Runs one scenario of the peer; its report.
pub(crate) async fn peer(args: &[&str]) -> Value {
    peer_with(args, &[]).await
}

/// [`peer`] with more environment (`NUCLEIC_ACP_AGENT`: the `--agent` of `nucleic acp`).
pub(crate) async fn peer_with(args: &[&str], env: &[(&str, &str)]) -> Value {
    let dir = peer_dir();
    let run = tokio::process::Command::new("node")
        .arg(dir.join("peer.mjs"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(&dir)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .unwrap_or_else(|_| panic!("the ACP peer ({args:?}) did not finish within 180 s"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the ACP peer {args:?} failed: {stdout}\n{stderr}");
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no report: {stderr}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("report {line}: {e}"))
}

/// The seqs of the updates of a report, in the order they came.
fn seqs(report: &Value) -> Vec<u64> {
    report["updates"].as_array().unwrap().iter().map(|u| u["seq"].as_u64().unwrap()).collect()
}

/// A client of the home's daemon (as the cockpit would be).
pub(crate) async fn host_client(home: &Path) -> nucleic_client::Client {
    let info = nucleic_client::read_daemon_file(home).unwrap();
    let token = nucleic_client::read_token(home).unwrap();
    let options = nucleic_client::ClientOptions::new("acp-test", "test");
    nucleic_client::Client::connect(info.endpoint(), &token, options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_session_is_answered_elsewhere_cancelled_left_running_and_loaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let repo = dir.path().join("repo");
    let (bin, home_s, cwd) =
        (nucleic(), home.to_str().unwrap().to_owned(), repo.to_str().unwrap().to_owned());
    let bin = bin.to_str().unwrap().to_owned();

    let first = peer(&["first", &bin, &home_s, &cwd]).await;
    eprintln!("first editor: {first}");
    assert_eq!(first["initialize"]["agentCapabilities"]["loadSession"], true, "{first}");
    assert_eq!(first["initialize"]["protocolVersion"], 1, "{first}");
    let id = first["sessionId"].as_str().unwrap().to_owned();
    // The simulated agent has no policy, so no modes are offered (a Claude or Codex session has
    // readonly, edit and full).
    assert!(first["modes"].is_null(), "{first}");

    // The permission was asked in the editor, answered by another client, withdrawn here.
    let permissions = first["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 3, "{first}");
    let asked = &permissions[0];
    assert!(asked["toolCall"]["title"].as_str().unwrap().contains("touch acp-ran"), "{asked}");
    assert_eq!(asked["options"][0], "allow", "{asked}");
    assert_eq!(asked["withdrawn"], true, "the editor's request was not withdrawn: {asked}");
    let call = asked["toolCall"]["toolCallId"].as_str().unwrap();
    // The editor saw the call start, run (allowed elsewhere) and complete.
    let statuses: Vec<&str> = first["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["toolCallId"] == call)
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert!(statuses.contains(&"in_progress") && statuses.contains(&"completed"), "{statuses:?}");
    let prompts = first["prompts"].as_array().unwrap();
    assert_eq!(prompts[0]["stopReason"], "end_turn", "{first}");
    assert_eq!(prompts[1]["stopReason"], "end_turn", "{first}");
    assert_eq!(prompts[2]["stopReason"], "end_turn", "{first}");
    assert_eq!(prompts[3]["stopReason"], "cancelled", "{first}");
    assert_eq!(first["exit"]["code"], 0, "nucleic acp exits cleanly on stdin EOF: {first}");

    // The effect: the command ran in the session's worktree, allowed by the CLI's principal.
    let mut host = host_client(&home).await;
    let summary = host.session(&id).await.unwrap();
    let worktree = PathBuf::from(&summary.worktree.as_ref().unwrap().path);
    assert!(worktree.join("acp-ran").exists(), "the approved command did not run");
    assert!(!repo.join("acp-ran").exists(), "the command ran in the checkout");
    // The editor's own answers: its allow ran the command, its deny did not.
    assert!(worktree.join("editor-allowed").exists(), "the editor's allow did not land");
    assert!(!worktree.join("editor-denied").exists(), "the editor's deny was not kept");
    let events = host.events_window(&id, 1, summary.last_seq, 100_000, Duration::from_secs(30));
    let events = events.await.unwrap();
    let resolved: Vec<&nucleic_protocol::ApprovalResolved> = events
        .iter()
        .filter_map(|e| match &e.kind {
            nucleic_protocol::EventKind::ApprovalResolved(r) => Some(r),
            _ => None,
        })
        .collect();
    // One answer each: the CLI's first (the editor's request was withdrawn before it chose),
    // then the editor's allow and deny.
    let decisions: Vec<_> = resolved.iter().map(|r| r.decision).collect();
    use nucleic_protocol::DecisionKind::{Allow, Deny};
    assert_eq!(decisions, [Allow, Allow, Deny], "{resolved:?}");
    assert_eq!(asked["approvedElsewhere"], true, "{asked}");

    // The editor closed; the session goes on (not ended), and a new editor loads it.
    assert!(!summary.status.is_terminal(), "{summary:?}");
    let loaded = peer(&["load", &bin, &home_s, &cwd, &id]).await;
    eprintln!("second editor: {loaded}");
    let (before, after) = (seqs(&first), seqs(&loaded));
    assert!(after.windows(2).all(|w| w[0] < w[1]), "a duplicate or disorder: {after:?}");
    let seen: BTreeSet<u64> = after.iter().copied().collect();
    let missing: Vec<u64> = before.iter().copied().filter(|s| !seen.contains(s)).collect();
    assert!(missing.is_empty(), "the replay missed what the first editor saw: {missing:?}");
    // What the replay adds below the first editor's last seq is the prompts it sent itself.
    let last_before = before.iter().max().copied().unwrap_or(0);
    let first_seen: BTreeSet<u64> = before.iter().copied().collect();
    for update in loaded["updates"].as_array().unwrap() {
        let seq = update["seq"].as_u64().unwrap();
        if seq <= last_before && !first_seen.contains(&seq) {
            assert_eq!(update["kind"], "user_message_chunk", "{update}");
        }
    }
    let replayed = loaded["loaded"]["updatesBeforeAnswer"].as_u64().unwrap();
    assert!(replayed as usize >= before.len(), "load answered before its replay: {loaded}");
    // Still alive: the new editor's prompt gets a turn.
    assert_eq!(loaded["prompts"][0]["stopReason"], "end_turn", "{loaded}");
    let said = loaded["updates"].as_array().unwrap().iter().any(|u| {
        u["kind"] == "agent_message_chunk"
            && u["text"].as_str().is_some_and(|t| t.contains("still here"))
    });
    assert!(said, "no reply to the second editor's prompt: {loaded}");

    // From a seq: the replay starts there, the same events as the full one.
    let from = before[before.len() / 2];
    let part = peer(&["load", &bin, &home_s, &cwd, &id, &from.to_string()]).await;
    let part_seqs = seqs(&part);
    assert!(part_seqs.iter().all(|s| *s >= from), "{part_seqs:?}");
    let range = |s: &u64| (from..=last_before).contains(s);
    let full_from: Vec<u64> = after.iter().copied().filter(range).collect();
    let part_from: Vec<u64> = part_seqs.iter().copied().filter(range).collect();
    assert_eq!(part_from, full_from, "the replay from {from} differs from the full one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_left_by_a_closed_editor_is_asked_again_in_the_editor_that_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let (bin, home_s) = (nucleic(), home.to_str().unwrap().to_owned());
    let (bin, cwd) = (bin.to_str().unwrap().to_owned(), dir.path().join("repo"));
    let cwd = cwd.to_str().unwrap().to_owned();

    // The editor closes while its permission request is open: the approval stays pending.
    let left = peer(&["leave", &bin, &home_s, &cwd]).await;
    assert_eq!(left["permissions"].as_array().unwrap().len(), 1, "{left}");
    assert_eq!(left["exit"]["code"], 0, "{left}");
    let id = left["sessionId"].as_str().unwrap().to_owned();
    let mut host = host_client(&home).await;
    let summary = host.session(&id).await.unwrap();
    assert_eq!(summary.pending_approvals, 1, "{summary:?}");
    let worktree = PathBuf::from(&summary.worktree.as_ref().unwrap().path);
    assert!(!worktree.join("left-ran").exists(), "ran unanswered");

    // A new editor loads the session: the pending approval is asked there after the replay,
    // and its allow runs the command.
    let answered = peer(&["answer", &bin, &home_s, &cwd, &id]).await;
    assert_eq!(answered["permissions"].as_array().unwrap().len(), 1, "{answered}");
    assert!(worktree.join("left-ran").exists(), "the second editor's allow did not land");
    assert_eq!(host.session(&id).await.unwrap().pending_approvals, 0);
}
