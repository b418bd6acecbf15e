//! Pooled worktrees: made ahead, checked, moved to a new base tip, handed out by renaming.

use std::path::PathBuf;
use std::time::Duration;

use nucleic_git::{GitError, PooledWorktree, SetupSpec};

use crate::support::{commit_file, fixture, read, run_git, write};

fn pooled(f: &crate::support::Fixture, name: &str) -> PooledWorktree {
    f.repo.create_pooled(name, "main", &[PathBuf::from(".env")], None).unwrap()
}

#[test]
fn a_pooled_worktree_is_prepared_and_handed_out_by_renaming() {
    let f = fixture();
    write(&f.root.join(".env"), "SECRET=1\n");
    let log = f.root.parent().unwrap().join("pool-setup.log");
    let setup = SetupSpec {
        script: "echo installed > deps.txt".into(),
        timeout: Duration::from_secs(30),
        log_path: log,
    };
    let copy = [PathBuf::from(".env")];
    let p = f.repo.create_pooled("pool-a1", "main", &copy, Some(&setup)).unwrap();
    assert_eq!(p.path, f.root.join(".nucleic/pool/pool-a1"));
    assert_eq!(p.branch, "nucleic-pool/pool-a1");
    assert_eq!(p.base_sha, f.repo.resolve("main").unwrap());
    assert_eq!(read(&p.path.join(".env")), "SECRET=1\n");
    assert!(p.disk_bytes > 0);
    assert_eq!(f.repo.check_pooled(&p).unwrap(), None);
    assert_eq!(f.repo.list_pooled().unwrap(), vec![("pool-a1".to_owned(), p.path.clone())]);
    assert!(!f.repo.is_dirty().unwrap(), "the pool must not show as untracked");

    let wt = f.repo.claim_pooled(&p, "my-task").unwrap();
    assert_eq!(wt.path, f.root.join(".nucleic/worktrees/my-task"));
    assert_eq!(wt.branch, "nucleic/my-task");
    assert_eq!(wt.base_sha, p.base_sha);
    assert!(!p.path.exists());
    assert!(!f.repo.branch_exists("nucleic-pool/pool-a1").unwrap());
    assert_eq!(run_git(&wt.path, &["symbolic-ref", "--short", "HEAD"]), "nucleic/my-task");
    assert_eq!(read(&wt.path.join("deps.txt")), "installed\n");
    assert!(f.repo.list_pooled().unwrap().is_empty());
    // It is now an ordinary session worktree: diffs, finishing and discard work on it.
    write(&wt.path.join("a.txt"), "changed\n");
    let diff = f.repo.diff(&wt).unwrap();
    assert!(diff.files.iter().any(|c| c.path == std::path::Path::new("a.txt")), "{diff:?}");
    f.repo.discard(&wt).unwrap();
    assert!(!wt.path.exists());
    assert_eq!(
        run_git(&f.root, &["worktree", "list", "--porcelain"]).matches("worktree ").count(),
        1
    );
}

#[test]
fn a_pooled_worktree_is_not_handed_out_onto_an_existing_branch() {
    let f = fixture();
    let p = pooled(&f, "pool-b1");
    run_git(&f.root, &["branch", "nucleic/taken", "main"]);
    let refused = f.repo.claim_pooled(&p, "taken");
    assert!(
        matches!(&refused, Err(GitError::BranchExists { branch }) if branch == "nucleic/taken"),
        "{refused:?}"
    );
    // Nothing moved: the pooled worktree is still whole and can go to another session.
    assert!(!f.root.join(".nucleic/worktrees/taken").exists());
    assert_eq!(f.repo.quick_check_pooled(&p).unwrap(), None);
    let wt = f.repo.claim_pooled(&p, "other").unwrap();
    assert_eq!(run_git(&wt.path, &["symbolic-ref", "--short", "HEAD"]), "nucleic/other");
}

#[test]
fn a_pooled_worktree_changed_behind_the_hosts_back_is_refused() {
    let f = fixture();
    // A tracked file edited: HEAD is fine, so only the full check sees it.
    let edited = pooled(&f, "pool-e1");
    write(&edited.path.join("a.txt"), "tampered\n");
    assert!(f.repo.check_pooled(&edited).unwrap().is_some());
    // An untracked file added.
    let added = pooled(&f, "pool-e2");
    write(&added.path.join("planted.txt"), "x\n");
    assert!(f.repo.check_pooled(&added).unwrap().is_some());
    // A commit made on its branch: the quick check (and so claiming) refuses it.
    let committed = pooled(&f, "pool-e3");
    run_git(&committed.path, &["config", "user.email", "t@example.com"]);
    commit_file(&committed.path, "c.txt", "c\n", "behind the host's back");
    assert!(f.repo.quick_check_pooled(&committed).unwrap().is_some());
    let refused = f.repo.claim_pooled(&committed, "taken");
    assert!(matches!(refused, Err(GitError::PoolStale { .. })), "{refused:?}");
    assert!(!f.root.join(".nucleic/worktrees/taken").exists());
    // Its HEAD moved to another branch.
    let switched = pooled(&f, "pool-e4");
    run_git(&switched.path, &["checkout", "-q", "--detach"]);
    assert!(f.repo.quick_check_pooled(&switched).unwrap().is_some());
    // Its directory deleted.
    let deleted = pooled(&f, "pool-e5");
    std::fs::remove_dir_all(&deleted.path).unwrap();
    assert!(f.repo.check_pooled(&deleted).unwrap().is_some());
    for p in [&edited, &added, &committed, &switched, &deleted] {
        f.repo.discard_pooled(p);
        assert!(!p.path.exists());
        assert!(!f.repo.branch_exists(&p.branch).unwrap());
    }
    assert!(f.repo.list_pooled().unwrap().is_empty());
}

#[test]
fn refreshing_follows_the_base_touching_only_changed_files() {
    let f = fixture();
    let p = pooled(&f, "pool-r1");
    write(&p.path.join("untracked-output.txt"), "kept\n");
    let p = PooledWorktree { status: String::new(), ..p };
    let b_before = std::fs::metadata(p.path.join("b.txt")).unwrap().modified().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let tip = commit_file(&f.root, "a.txt", "moved\n", "base moves");
    let (mut moved, changed) = f.repo.refresh_pooled(&p, &tip, None).unwrap();
    assert_eq!(changed, vec![p.path.join("a.txt")]);
    assert_eq!(moved.base_sha, tip);
    assert_eq!(read(&moved.path.join("a.txt")), "moved\n");
    let b_after = std::fs::metadata(p.path.join("b.txt")).unwrap().modified().unwrap();
    assert_eq!(b_before, b_after, "an unchanged file was rewritten");
    assert_eq!(read(&moved.path.join("untracked-output.txt")), "kept\n");
    assert!(f.repo.check_pooled(&moved).unwrap().is_some(), "no fingerprint yet");
    moved.status = f.repo.pooled_fingerprint(&moved).unwrap();
    assert_eq!(f.repo.check_pooled(&moved).unwrap(), None);

    // Force-pushed base: a tip that is not a descendant is followed the same way.
    run_git(&f.root, &["reset", "-q", "--hard", "HEAD~1"]);
    let rewritten = commit_file(&f.root, "b.txt", "rewritten\n", "history rewritten");
    let (again, _) = f.repo.refresh_pooled(&moved, &rewritten, None).unwrap();
    assert_eq!(read(&again.path.join("b.txt")), "rewritten\n");
    assert_eq!(read(&again.path.join("a.txt")), "one\ntwo\nthree\n");

    // A base that no longer exists: refreshing fails and the caller drops it.
    run_git(&f.root, &["checkout", "-q", "--detach"]);
    run_git(&f.root, &["branch", "-D", "main"]);
    assert!(matches!(f.repo.resolve("main"), Err(GitError::UnknownRef { .. })));
    assert!(f.repo.refresh_pooled(&again, "main", None).is_err());
}

#[test]
fn a_failing_setup_leaves_no_pooled_worktree() {
    let f = fixture();
    let setup = SetupSpec {
        script: "echo broken >&2; exit 3".into(),
        timeout: Duration::from_secs(30),
        log_path: f.root.parent().unwrap().join("pool-fail.log"),
    };
    let failed = f.repo.create_pooled("pool-f1", "main", &[], Some(&setup));
    assert!(matches!(failed, Err(GitError::SetupFailed { code: Some(3), .. })), "{failed:?}");
    assert!(!f.root.join(".nucleic/pool/pool-f1").exists());
    assert!(!f.repo.branch_exists("nucleic-pool/pool-f1").unwrap());
    assert!(f.repo.list_pooled().unwrap().is_empty());
}

#[test]
fn a_clean_pooled_worktrees_first_snapshot_is_its_base_tree() {
    let f = fixture();
    // `.env` is copied in and ignored: still clean.
    let p = pooled(&f, "pool-s1");
    assert!(p.clean(), "{p:?}");
    let claimed = f.repo.claim_pooled(&p, "snap").unwrap();
    let full = f.repo.record_snapshot(&claimed, "session-s", "0-full").unwrap();
    let known = f.repo.record_commit_tree(&claimed.base_sha, "session-s", "1-start").unwrap();
    assert_eq!(known, full, "the base's tree is what a full snapshot reads");
    let kept = run_git(&f.root, &["rev-parse", "refs/nucleic/turns/session-s/1-start"]);
    assert_eq!(kept.trim(), known);
    assert!(f.repo.record_commit_tree("not-a-commit", "session-s", "2-start").is_err());

    // An untracked file outside `.gitignore` (setup output, say): not clean.
    let dirty = f
        .repo
        .create_pooled(
            "pool-s2",
            "main",
            &[],
            Some(&SetupSpec {
                script: "echo out > built.txt".into(),
                timeout: Duration::from_secs(30),
                log_path: f.root.parent().unwrap().join("setup-s2.log"),
            }),
        )
        .unwrap();
    assert!(!dirty.clean(), "{dirty:?}");
}
