//! The disk lifecycle of worktrees: measured with build output apart, reclaimed on request,
//! by budget and by age (branch and uncommitted work kept), restored by a follow-up, and bad
//! requests (a working session, twice, a zero budget) refused.

use std::path::PathBuf;
use std::time::Duration;

use nucleic_protocol::{DiskPolicy, EventKind, ProtocolErrorCode, SessionStatus};

use crate::support::{approve_until_turn_done, config, git, new_session, repo};

fn write(path: PathBuf, bytes: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, vec![b'x'; bytes]).unwrap();
}

/// Allows every approval of the turn a follow-up starts, until that turn is over.
async fn follow_up(host: &nucleic_host::Host, id: &str, text: &str) {
    let from = host.session_summary(id).await.unwrap().last_seq + 1;
    host.send_input(id, text).await.unwrap();
    let mut events = host.subscribe(id, from).await.unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("the follow-up's turn within 30 s")
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => {
                let allow = nucleic_protocol::Decision::Allow;
                host.decide(id, &a.request_id, allow, "test").await.unwrap();
            }
            EventKind::TurnCompleted(_) => break,
            _ => {}
        }
    }
}

async fn events_of(host: &nucleic_host::Host, id: &str) -> Vec<EventKind> {
    let mut stream = host.subscribe(id, 1).await.unwrap();
    let mut kinds = Vec::new();
    while let Ok(Ok(Some(e))) =
        tokio::time::timeout(Duration::from_millis(300), stream.next()).await
    {
        kinds.push(e.kind.clone());
    }
    kinds
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reclaimed_worktree_frees_its_disk_keeps_its_work_and_comes_back_on_a_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "ignore"]);
    let host = nucleic_host::Host::open(config(dir.path())).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write a.txt containing A"), "test")
        .await
        .unwrap();
    let id = s.session_id.clone();
    // Working (it waits for an approval): not reclaimable.
    let busy = host.reclaim(&id, nucleic_host::ReclaimReason::Request, "test").await.unwrap_err();
    assert!(busy.to_string().contains("still working"), "{busy}");
    approve_until_turn_done(&host, &id).await;
    let worktree = PathBuf::from(&s.worktree.as_ref().unwrap().path);
    let branch = s.worktree.as_ref().unwrap().branch.clone();
    write(worktree.join("node_modules/left-pad/index.js"), 300_000);
    write(worktree.join("notes/wip.md"), 20_000);

    // Measured: build output apart.
    let disk = host.measure_disk(&id).await.unwrap();
    assert!(disk.build_bytes >= 300_000 && disk.bytes >= disk.build_bytes + 20_000, "{disk:?}");
    assert_eq!(host.session_summary(&id).await.unwrap().disk, Some(disk));

    // A session still working cannot be reclaimed; an idle one can (its agent is stopped).
    let reclaimed = host.reclaim(&id, nucleic_host::ReclaimReason::Request, "test").await.unwrap();
    assert!(reclaimed.kept_uncommitted && reclaimed.bytes >= disk.bytes, "{reclaimed:?}");
    assert!(!worktree.exists());
    assert_eq!(git(&root, &["branch", "--list", &branch]).trim().trim_start_matches("* "), branch);
    let summary = host.session_summary(&id).await.unwrap();
    assert!(summary.worktree_reclaimed, "{summary:?}");
    let again = host.reclaim(&id, nucleic_host::ReclaimReason::Request, "test").await.unwrap_err();
    assert!(again.to_string().contains("already reclaimed"), "{again}");
    let measured = host.measure_disk(&id).await.unwrap_err();
    assert!(measured.to_string().contains("reclaimed"), "{measured}");

    // A follow-up brings it back: the agent's file and the uncommitted notes, not the build
    // output.
    follow_up(&host, &id, "write b.txt containing B").await;
    assert_eq!(std::fs::read_to_string(worktree.join("a.txt")).unwrap(), "A\n");
    assert_eq!(std::fs::read(worktree.join("notes/wip.md")).unwrap().len(), 20_000);
    assert!(!worktree.join("node_modules").exists());
    assert_eq!(std::fs::read_to_string(worktree.join("b.txt")).unwrap(), "B\n");
    let summary = host.session_summary(&id).await.unwrap();
    assert!(!summary.worktree_reclaimed, "{summary:?}");
    let kinds = events_of(&host, &id).await;
    let reclaimed_at = kinds.iter().position(|k| matches!(k, EventKind::WorktreeReclaimed(_)));
    let restored_at = kinds
        .iter()
        .position(|k| matches!(k, EventKind::WorktreeRestored(r) if r.restored_uncommitted));
    assert!(reclaimed_at.is_some() && restored_at > reclaimed_at, "{kinds:?}");
    host.shutdown(Duration::from_secs(3), Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gc_reclaims_by_budget_oldest_first_and_by_age_after_a_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = nucleic_host::Host::open(config(dir.path())).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id.clone();
    let mut ids = Vec::new();
    for file in ["a", "b", "c"] {
        let s = host
            .new_session(new_session(&pid, &format!("write {file}.txt containing {file}")), "test")
            .await
            .unwrap();
        approve_until_turn_done(&host, &s.session_id).await;
        let worktree = PathBuf::from(&s.worktree.as_ref().unwrap().path);
        write(worktree.join("big.bin"), 400_000);
        ids.push(s.session_id);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // No policy: nothing is due.
    let gc = serde_json::to_value(host.gc(false).await.unwrap()).unwrap();
    assert_eq!(gc["reclaimableWorktrees"], serde_json::json!([]), "{gc}");

    let zero = DiskPolicy { budget_bytes: Some(0), reclaim_after_secs: None };
    let refused = host.set_disk_policy(&pid, zero).await.unwrap_err();
    assert_eq!(refused.code(), ProtocolErrorCode::InvalidRequest, "{refused}");

    // A budget for about two of the three: the oldest is due.
    let one = host.measure_disk(&ids[0]).await.unwrap().bytes;
    let budget = DiskPolicy { budget_bytes: Some(one * 5 / 2), reclaim_after_secs: None };
    let summary = host.set_disk_policy(&pid, budget).await.unwrap();
    assert_eq!(summary.disk_policy, budget);
    let dry = serde_json::to_value(host.gc(false).await.unwrap()).unwrap();
    let due = dry["reclaimableWorktrees"].as_array().unwrap().clone();
    assert_eq!(due.len(), 1, "{dry}");
    assert_eq!(due[0]["sessionID"], ids[0].as_str());
    assert_eq!(due[0]["reason"], "budget");
    assert!(!host.session_summary(&ids[0]).await.unwrap().worktree_reclaimed, "a dry run");

    let applied = serde_json::to_value(host.gc(true).await.unwrap()).unwrap();
    assert_eq!(applied["reclaimableWorktrees"][0]["reclaimed"], true, "{applied}");
    assert!(host.session_summary(&ids[0]).await.unwrap().worktree_reclaimed);
    assert!(!host.session_summary(&ids[1]).await.unwrap().worktree_reclaimed);

    // An age every session has reached: the others go too; survives a reopen of the host.
    let age = DiskPolicy { budget_bytes: None, reclaim_after_secs: Some(1) };
    host.set_disk_policy(&pid, age).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let applied = serde_json::to_value(host.gc(true).await.unwrap()).unwrap();
    let reasons: Vec<_> = applied["reclaimableWorktrees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["reason"].as_str().unwrap().to_owned(), r["reclaimed"] == true))
        .collect();
    assert_eq!(reasons, vec![("age".to_owned(), true), ("age".to_owned(), true)], "{applied}");
    host.shutdown(Duration::from_secs(3), Duration::from_secs(10)).await;
    drop(host);
    let host = nucleic_host::Host::open(config(dir.path())).await.unwrap();
    for id in &ids {
        let s = host.session_summary(id).await.unwrap();
        assert!(s.worktree_reclaimed && s.status != SessionStatus::Running, "{s:?}");
    }
    assert_eq!(host.project_summary_of(&pid).await.unwrap().disk_policy, age);
    // Continuing one brings its worktree back under its own path.
    follow_up(&host, &ids[1], "write d.txt containing d").await;
    let s = host.session_summary(&ids[1]).await.unwrap();
    let worktree = PathBuf::from(&s.worktree.as_ref().unwrap().path);
    assert_eq!(std::fs::read_to_string(worktree.join("b.txt")).unwrap(), "b\n");
    // Untracked (not ignored) work is kept through the reclaim.
    assert_eq!(worktree.join("big.bin").metadata().unwrap().len(), 400_000);
    host.shutdown(Duration::from_secs(3), Duration::from_secs(10)).await;
}
