//! Component tests of nucleic-git against real git in small temporary repositories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hostile;
mod pool;
mod push;
mod snapshots;
mod support;
mod turns;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nucleic_git::{
    FileStatus, FinishMode, GitError, HeadState, Repo, SetupSpec, Worktree, WorktreeSpec,
};
use support::{change, commit_file, fixture, read, run_git, spec, status, temp_dir, write};

#[test]
fn open_refuses_non_repos_and_reports_repo_facts() {
    let dir = temp_dir();
    assert!(matches!(Repo::open(dir.path()), Err(GitError::NotARepo { .. })));
    assert!(matches!(Repo::open(dir.path().join("missing")), Err(GitError::NotARepo { .. })));
    let bare = dir.path().join("bare.git");
    run_git(dir.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    assert!(matches!(Repo::open(&bare), Err(GitError::BareRepo { .. })));

    let f = fixture();
    std::fs::create_dir(f.root.join("sub")).unwrap();
    assert_eq!(Repo::open(f.root.join("sub")).unwrap().root(), f.root);
    assert_eq!(f.repo.head_state().unwrap(), HeadState::Branch { name: "main".into() });
    assert_eq!(f.repo.default_branch().unwrap().as_deref(), Some("main"));
    assert!(!f.repo.is_dirty().unwrap());
    write(&f.root.join("new.txt"), "x\n");
    assert!(f.repo.is_dirty().unwrap());
    assert_eq!(f.repo.resolve("main").unwrap(), run_git(&f.root, &["rev-parse", "main"]));
    assert!(matches!(f.repo.resolve("nope"), Err(GitError::UnknownRef { .. })));
    assert!(matches!(f.repo.resolve("--all"), Err(GitError::UnknownRef { .. })));
    assert!(f.repo.branch_exists("main").unwrap());
    assert!(!f.repo.branch_exists("nope").unwrap());

    // origin/HEAD wins when its branch exists locally; a detached checkout falls back to main.
    run_git(&f.root, &["branch", "trunk"]);
    run_git(&f.root, &["update-ref", "refs/remotes/origin/trunk", "HEAD"]);
    run_git(&f.root, &["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk"]);
    assert_eq!(f.repo.default_branch().unwrap().as_deref(), Some("trunk"));
    run_git(&f.root, &["symbolic-ref", "--delete", "refs/remotes/origin/HEAD"]);
    run_git(&f.root, &["checkout", "-q", "--detach"]);
    assert!(matches!(f.repo.head_state().unwrap(), HeadState::Detached { .. }));
    assert_eq!(f.repo.default_branch().unwrap().as_deref(), Some("main"));
}

#[test]
fn create_worktree_records_base_copies_files_and_excludes_once() {
    let f = fixture();
    write(&f.root.join(".env"), "SECRET=1\n");
    std::fs::set_permissions(f.root.join(".env"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let main_sha = f.repo.resolve("main").unwrap();
    let copy = vec![PathBuf::from(".env"), PathBuf::from("absent.env")];
    let wt = f.repo.create_worktree(&WorktreeSpec { copy_files: copy, ..spec("first") }).unwrap();
    assert_eq!(wt.path, f.root.join(".nucleic/worktrees/first"));
    assert_eq!(wt.branch, "nucleic/first");
    assert_eq!((wt.base_ref.as_str(), wt.base_sha.as_str()), ("main", main_sha.as_str()));
    assert!(f.repo.branch_exists("nucleic/first").unwrap());
    assert_eq!(run_git(&wt.path, &["rev-parse", "HEAD"]), main_sha);
    assert_eq!(read(&wt.path.join(".env")), "SECRET=1\n");
    let mode = std::fs::metadata(wt.path.join(".env")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!wt.path.join("absent.env").exists());

    f.worktree("second");
    let exclude = read(&f.root.join(".git/info/exclude"));
    assert_eq!(exclude.lines().filter(|l| *l == ".nucleic/").count(), 1, "{exclude}");
    assert!(!f.repo.is_dirty().unwrap(), "worktrees must not show as untracked");

    assert!(matches!(f.repo.create_worktree(&spec("first")), Err(GitError::BranchExists { .. })));
    for bad in ["", "Upper", "-lead", "has space", &"x".repeat(64)] {
        assert!(matches!(f.repo.create_worktree(&spec(bad)), Err(GitError::InvalidSlug { .. })));
    }
}

#[test]
fn create_worktree_refuses_unknown_base_and_escaping_copies() {
    let f = fixture();
    let unknown = WorktreeSpec { base_ref: "no-such-branch".into(), ..spec("x") };
    assert!(matches!(f.repo.create_worktree(&unknown), Err(GitError::UnknownRef { .. })));
    for escape in ["../outside.env", "/etc/hostname", "sub/../../x"] {
        let spec = WorktreeSpec { copy_files: vec![escape.into()], ..spec("y") };
        assert!(matches!(f.repo.create_worktree(&spec), Err(GitError::PathEscape { .. })));
    }
    std::os::unix::fs::symlink("/etc/hostname", f.root.join("link.env")).unwrap();
    let spec_link = WorktreeSpec { copy_files: vec!["link.env".into()], ..spec("y") };
    assert!(matches!(f.repo.create_worktree(&spec_link), Err(GitError::PathEscape { .. })));
    assert!(!f.repo.branch_exists("nucleic/x").unwrap());
    assert!(!f.root.join(".nucleic/worktrees/y").exists());
}

#[test]
fn setup_script_logs_success_and_failure() {
    let f = fixture();
    write(&f.root.join(".env"), "K=V\n");
    let log_path = f.root.join("../logs/ok.log");
    let setup = SetupSpec {
        script: "echo out; echo err >&2; cat .env; echo \"$NUCLEIC_BRANCH\"".into(),
        timeout: Duration::from_secs(10),
        log_path: log_path.clone(),
    };
    let ok = WorktreeSpec { copy_files: vec![".env".into()], setup: Some(setup), ..spec("ok") };
    f.repo.create_worktree(&ok).unwrap();
    let log = read(&log_path);
    for expected in ["out", "err", "K=V", "nucleic/ok"] {
        assert!(log.lines().any(|l| l == expected), "{expected:?} in {log:?}");
    }

    let log_path = f.root.join("../logs/bad.log");
    let setup = SetupSpec {
        script: "echo broken; exit 3".into(),
        timeout: Duration::from_secs(10),
        log_path: log_path.clone(),
    };
    let bad = WorktreeSpec { setup: Some(setup), ..spec("bad") };
    match f.repo.create_worktree(&bad) {
        Err(GitError::SetupFailed { log_path: p, code }) => {
            assert_eq!((p, code), (log_path.clone(), Some(3)));
        }
        other => panic!("expected SetupFailed, got {other:?}"),
    }
    assert!(read(&log_path).starts_with("broken\n"));
    assert!(f.root.join(".nucleic/worktrees/bad/a.txt").exists(), "worktree is left in place");
}

#[test]
fn hanging_setup_is_killed_with_its_process_group() {
    let f = fixture();
    let log_path = f.root.join("../logs/hang.log");
    let setup = SetupSpec {
        script: "echo $$ > ../pgid; sleep 30 & echo started; sleep 30".into(),
        timeout: Duration::from_millis(800),
        log_path: log_path.clone(),
    };
    let started = Instant::now();
    let result = f.repo.create_worktree(&WorktreeSpec { setup: Some(setup), ..spec("hang") });
    assert!(matches!(result, Err(GitError::SetupTimedOut { .. })), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(read(&log_path).starts_with("started\n"));
    let pgid = read(&f.root.join(".nucleic/worktrees/pgid")).trim().to_owned();
    // SIGKILL lands asynchronously, and killed members linger as zombies until init reaps them:
    // wait briefly until none is running.
    let live_members = || -> Vec<String> {
        let processes =
            Command::new("ps").args(["-e", "-o", "pgid=,stat=,args="]).output().unwrap();
        String::from_utf8_lossy(&processes.stdout)
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(pgid.as_str()))
            .filter(|l| !l.split_whitespace().nth(1).is_some_and(|stat| stat.starts_with('Z')))
            .map(str::to_owned)
            .collect()
    };
    let mut running = live_members();
    for _ in 0..50 {
        if running.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        running = live_members();
    }
    assert!(running.is_empty(), "process group {pgid} still running: {running:?}");
}

#[test]
fn diff_covers_committed_staged_unstaged_untracked_deleted_and_binary_work() {
    let f = fixture();
    commit_file(&f.root, "gone.txt", "x\ny\n", "add gone");
    let wt = f.worktree("diff");
    commit_file(&wt.path, "a.txt", "one\ntwo\nthree\nfour\nfive\n", "more a");
    write(&wt.path.join("b.txt"), "alpha\nBETA\n");
    write(&wt.path.join("staged.txt"), "s1\ns2\ns3\n");
    run_git(&wt.path, &["add", "staged.txt"]);
    write(&wt.path.join("dir/new file.txt"), "n\n");
    std::fs::write(wt.path.join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    std::fs::remove_file(wt.path.join("gone.txt")).unwrap();
    write(&wt.path.join(".env"), "ignored\n");
    let before = f.state(&[&f.root, &wt.path]);

    let diff = f.repo.diff(&wt).unwrap();
    let summary: Vec<_> = diff
        .files
        .iter()
        .map(|c| (c.path.to_str().unwrap(), c.status, c.additions, c.deletions, c.binary))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a.txt", FileStatus::Modified, 2, 0, false),
            ("b.txt", FileStatus::Modified, 1, 1, false),
            ("blob.bin", FileStatus::Untracked, 0, 0, true),
            ("dir/new file.txt", FileStatus::Untracked, 1, 0, false),
            ("gone.txt", FileStatus::Deleted, 0, 2, false),
            ("staged.txt", FileStatus::Added, 3, 0, false),
        ]
    );
    assert!(diff.patch.contains("+BETA\n"));
    assert!(diff.patch.contains("Binary files /dev/null and b/blob.bin differ"));
    assert!(!diff.patch.contains("ignored"));
    assert_eq!(f.state(&[&f.root, &wt.path]), before, "no ref, index or file may change");
    let admin = std::fs::read_dir(f.root.join(".git/worktrees/diff")).unwrap();
    let names: Vec<_> = admin.map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(!names.iter().any(|n| n.starts_with("nucleic-index")), "temp index left: {names:?}");
}

/// A same-size edit made right after the checkout (within the index's mtime granularity) is
/// work: the temporary index keeps the real one's mtime, so git's racy-entry check still hashes
/// the file (a copy stamped later hid the edit, and the report said "no files changed").
#[test]
fn a_same_size_edit_right_after_the_checkout_is_in_the_diff() {
    let f = fixture();
    let wt = f.worktree("racy");
    let a = wt.path.join("a.txt");
    let before = std::fs::read_to_string(&a).unwrap();
    let same_size: String = before.chars().map(|c| if c == '\n' { c } else { 'z' }).collect();
    assert_eq!(before.len(), same_size.len());
    // Written at once, in the second of the checkout: same size, same second. The diff is
    // taken a second later, so a temporary index stamped "now" would be a second newer.
    std::fs::write(&a, &same_size).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let diff = f.repo.diff(&wt).unwrap();
    assert_eq!(change(&diff.files, "a.txt").status, FileStatus::Modified);
}

#[test]
fn diff_reports_renames_with_old_path() {
    let f = fixture();
    let wt = f.worktree("rename");
    run_git(&wt.path, &["mv", "b.txt", "c.txt"]);
    let diff = f.repo.diff(&wt).unwrap();
    let renamed = change(&diff.files, "c.txt");
    assert_eq!(renamed.status, FileStatus::Renamed);
    assert_eq!(renamed.old_path.as_deref(), Some(Path::new("b.txt")));
    assert_eq!((renamed.additions, renamed.deletions), (0, 0));
}

#[test]
fn ahead_behind_counts_commits() {
    let f = fixture();
    let wt = f.worktree("count");
    commit_file(&wt.path, "w1.txt", "1\n", "w1");
    commit_file(&wt.path, "w2.txt", "2\n", "w2");
    commit_file(&f.root, "m1.txt", "1\n", "m1");
    let counts = f.repo.ahead_behind(&wt, "main").unwrap();
    assert_eq!((counts.ahead, counts.behind), (2, 1));
    assert!(matches!(f.repo.ahead_behind(&wt, "nope"), Err(GitError::UnknownRef { .. })));
}

#[test]
fn conflict_preview_includes_uncommitted_work_and_changes_nothing() {
    let f = fixture();
    let wt = f.worktree("preview");
    write(&wt.path.join("a.txt"), "one\nWORKTREE\nthree\n");
    write(&wt.path.join("untracked.txt"), "u\n");
    commit_file(&f.root, "b.txt", "alpha\nbeta\ngamma\n", "main edits b");
    let before = f.state(&[&f.root, &wt.path]);
    assert_eq!(f.repo.conflict_preview(&wt, "main").unwrap(), Vec::<PathBuf>::new());
    assert_eq!(f.state(&[&f.root, &wt.path]), before);

    commit_file(&f.root, "a.txt", "one\nMAIN\nthree\n", "main edits a");
    let before = f.state(&[&f.root, &wt.path]);
    assert_eq!(f.repo.conflict_preview(&wt, "main").unwrap(), vec![PathBuf::from("a.txt")]);
    assert_eq!(f.state(&[&f.root, &wt.path]), before);

    // All the facts at once, from one snapshot: the same answers.
    let facts = f.repo.facts(&wt, "main").unwrap();
    assert_eq!(facts.diff, f.repo.diff(&wt).unwrap());
    assert_eq!(facts.ahead_behind, f.repo.ahead_behind(&wt, "main").unwrap());
    assert_eq!(facts.conflicts, vec![PathBuf::from("a.txt")]);
    assert_eq!(f.state(&[&f.root, &wt.path]), before);
}

#[test]
fn merge_creates_a_merge_commit_and_fast_forwards_the_clean_main_checkout() {
    let f = fixture();
    let wt = f.worktree("merge");
    commit_file(&wt.path, "feature.txt", "feature\n", "feature");
    let tip = run_git(&wt.path, &["rev-parse", "HEAD"]);
    let old = commit_file(&f.root, "b.txt", "alpha\nbeta\nmain\n", "main moves");
    write(&f.root.join("notes.txt"), "user's untracked notes\n");
    let wt_status = status(&wt.path);

    let outcome = f.repo.merge_into_base(&wt, "main", FinishMode::Merge, "Merge work").unwrap();
    assert_eq!(outcome.previous_tip, old);
    assert_eq!(outcome.updated_checkout.as_deref(), Some(f.root.as_path()));
    assert_eq!(f.repo.resolve("main").unwrap(), outcome.new_tip);
    assert_eq!(f.parents(&outcome.new_tip), vec![old, tip.clone()]);
    assert_eq!(run_git(&f.root, &["log", "-1", "--format=%s", "main"]), "Merge work");
    assert_eq!(f.show("main:feature.txt"), "feature");
    assert_eq!(f.show("main:b.txt"), "alpha\nbeta\nmain");
    // The main checkout follows its branch: clean, files current, untracked file kept.
    assert_eq!(run_git(&f.root, &["rev-parse", "HEAD"]), outcome.new_tip);
    assert_eq!(run_git(&f.root, &["status", "--porcelain"]), "?? notes.txt");
    assert_eq!(read(&f.root.join("feature.txt")), "feature\n");
    assert_eq!(read(&f.root.join("notes.txt")), "user's untracked notes\n");
    assert_eq!(status(&wt.path), wt_status);
    assert_eq!(f.repo.resolve("nucleic/merge").unwrap(), tip, "worktree branch unchanged");
    assert!(matches!(
        f.repo.merge_into_base(&wt, "main", FinishMode::Merge, "again"),
        Err(GitError::NothingToMerge { .. })
    ));
}

#[test]
fn squash_moves_a_base_that_is_not_checked_out_without_touching_the_main_checkout() {
    let f = fixture();
    let wt = f.worktree("squash");
    commit_file(&wt.path, "s1.txt", "1\n", "s1");
    commit_file(&wt.path, "a.txt", "one\ntwo\nthree\nsquashed\n", "s2");
    run_git(&f.root, &["switch", "-q", "-c", "user-work"]);
    write(&f.root.join("b.txt"), "user edit\n");
    run_git(&f.root, &["add", "b.txt"]);
    write(&f.root.join("a.txt"), "unstaged user edit\n");
    let main_checkout = f
        .state(&[&f.root])
        .lines()
        .skip_while(|l| !l.ends_with(':'))
        .collect::<Vec<_>>()
        .join("\n");
    let old = f.repo.resolve("main").unwrap();

    let outcome = f.repo.merge_into_base(&wt, "main", FinishMode::Squash, "Squashed").unwrap();
    assert_eq!(outcome.updated_checkout, None);
    assert_eq!(f.parents(&outcome.new_tip), vec![old]);
    assert_eq!(f.repo.resolve("main").unwrap(), outcome.new_tip);
    assert_eq!(f.show("main:s1.txt"), "1");
    assert_eq!(f.show("main:a.txt"), "one\ntwo\nthree\nsquashed");
    let after = f
        .state(&[&f.root])
        .lines()
        .skip_while(|l| !l.ends_with(':'))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(after, main_checkout);
    assert_eq!(read(&f.root.join("a.txt")), "unstaged user edit\n");
    assert_eq!(run_git(&f.root, &["symbolic-ref", "--short", "HEAD"]), "user-work");
}

#[test]
fn rebase_replays_commits_onto_the_base_and_fast_forwards_it() {
    let f = fixture();
    let wt = f.worktree("rebase");
    commit_file(&wt.path, "r1.txt", "1\n", "r1");
    commit_file(&wt.path, "r2.txt", "2\n", "r2");
    let old = commit_file(&f.root, "m.txt", "m\n", "main moves");

    let outcome = f.repo.merge_into_base(&wt, "main", FinishMode::Rebase, "unused").unwrap();
    let new = outcome.new_tip;
    assert_eq!(f.repo.resolve("main").unwrap(), new);
    assert_eq!(run_git(&f.root, &["rev-parse", &format!("{new}~2")]), old);
    assert_eq!(run_git(&f.root, &["log", "--format=%s", "-3", "main"]), "r2\nr1\nmain moves");
    assert_eq!(f.parents(&new).len(), 1);
    assert_eq!(f.show("main:r1.txt"), "1");
    assert_eq!(f.show("main:m.txt"), "m");
    assert_eq!(f.repo.resolve("nucleic/rebase").unwrap(), new, "worktree branch rebased");
    assert_eq!(run_git(&wt.path, &["status", "--porcelain"]), "");
    assert_eq!(run_git(&f.root, &["status", "--porcelain"]), "");
    assert_eq!(read(&f.root.join("r2.txt")), "2\n");
}

#[test]
fn finishing_refuses_a_dirty_worktree_or_a_dirty_checked_out_base() {
    let f = fixture();
    let wt = f.worktree("refuse");
    commit_file(&wt.path, "w.txt", "w\n", "w");
    write(&wt.path.join("wip.txt"), "wip\n");
    assert!(matches!(
        f.repo.merge_into_base(&wt, "main", FinishMode::Merge, "m"),
        Err(GitError::Dirty { .. })
    ));
    std::fs::remove_file(wt.path.join("wip.txt")).unwrap();
    write(&f.root.join("a.txt"), "user is editing\n");
    let before = f.state(&[&f.root, &wt.path]);
    for mode in [FinishMode::Merge, FinishMode::Squash, FinishMode::Rebase] {
        let result = f.repo.merge_into_base(&wt, "main", mode, "m");
        assert!(matches!(result, Err(GitError::BaseCheckedOutDirty { .. })), "{result:?}");
    }
    assert_eq!(f.state(&[&f.root, &wt.path]), before);
    assert_eq!(read(&f.root.join("a.txt")), "user is editing\n");
}

#[test]
fn conflicting_finish_names_the_files_and_changes_nothing() {
    let f = fixture();
    let wt = f.worktree("conflict");
    commit_file(&wt.path, "a.txt", "one\nWORKTREE\nthree\n", "wt edits a");
    commit_file(&f.root, "a.txt", "one\nMAIN\nthree\n", "main edits a");
    let before = f.state(&[&f.root, &wt.path]);
    for mode in [FinishMode::Merge, FinishMode::Squash, FinishMode::Rebase] {
        match f.repo.merge_into_base(&wt, "main", mode, "m") {
            Err(GitError::Conflict { files }) => assert_eq!(files, vec![PathBuf::from("a.txt")]),
            other => panic!("{mode:?}: expected Conflict, got {other:?}"),
        }
        assert_eq!(f.state(&[&f.root, &wt.path]), before, "{mode:?}");
    }
}

#[test]
fn rebase_conflicting_in_an_intermediate_commit_is_aborted() {
    let f = fixture();
    let wt = f.worktree("midway");
    // The branch edits line two and then reverts it: the end result merges cleanly, but
    // replaying the first commit onto main's edit of the same line conflicts.
    commit_file(&wt.path, "a.txt", "one\nTEMP\nthree\n", "temp");
    commit_file(&wt.path, "a.txt", "one\ntwo\nthree\n", "revert");
    commit_file(&wt.path, "w.txt", "w\n", "w");
    commit_file(&f.root, "a.txt", "one\nMAIN\nthree\n", "main edits a");
    let before = f.state(&[&f.root, &wt.path]);
    match f.repo.merge_into_base(&wt, "main", FinishMode::Rebase, "m") {
        Err(GitError::Conflict { files }) => assert_eq!(files, vec![PathBuf::from("a.txt")]),
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(f.state(&[&f.root, &wt.path]), before);
    let rebase_dir = run_git(&wt.path, &["rev-parse", "--git-path", "rebase-merge"]);
    assert!(!wt.path.join(rebase_dir).exists());
}

#[test]
fn commit_all_commits_everything_once() {
    let f = fixture();
    let wt = f.worktree("commit");
    assert_eq!(f.repo.commit_all(&wt, "nothing").unwrap(), None);
    write(&wt.path.join("a.txt"), "changed\n");
    write(&wt.path.join("new.txt"), "new\n");
    let sha = f.repo.commit_all(&wt, "Agent work").unwrap().unwrap();
    assert_eq!(f.repo.resolve("nucleic/commit").unwrap(), sha);
    assert_eq!(run_git(&wt.path, &["status", "--porcelain"]), "");
    assert_eq!(run_git(&f.root, &["show", &format!("{sha}:new.txt")]), "new");
    assert_eq!(f.repo.commit_all(&wt, "again").unwrap(), None);
}

#[test]
fn discard_and_confirmed_removal_delete_worktree_and_branch() {
    let f = fixture();
    let wt = f.worktree("discard");
    write(&wt.path.join("wip.txt"), "unsaved\n");
    f.repo.discard(&wt).unwrap();
    assert!(!wt.path.exists());
    assert!(!f.repo.branch_exists("nucleic/discard").unwrap());

    let kept = f.worktree("kept");
    assert!(matches!(f.repo.remove_kept(&kept, false), Err(GitError::NotConfirmed { .. })));
    assert!(kept.path.exists() && f.repo.branch_exists("nucleic/kept").unwrap());
    f.repo.remove_kept(&kept, true).unwrap();
    assert!(!kept.path.exists());
    assert!(!f.repo.branch_exists("nucleic/kept").unwrap());
    assert_eq!(f.repo.list_worktrees().unwrap().len(), 1);
}

#[test]
fn continue_from_carries_uncommitted_work_without_moving_the_kept_branch() {
    let f = fixture();
    let kept = f.worktree("kept");
    commit_file(&kept.path, "done.txt", "done\n", "done");
    write(&kept.path.join("a.txt"), "one\ntwo\nthree\nwip\n");
    write(&kept.path.join("untracked.txt"), "u\n");
    let kept_status = status(&kept.path);
    let kept_tip = f.repo.resolve("nucleic/kept").unwrap();

    let next = f.repo.continue_from(&kept, "next").unwrap();
    assert_eq!(status(&kept.path), kept_status);
    assert_eq!(f.repo.resolve("nucleic/kept").unwrap(), kept_tip);
    assert_eq!((next.base_ref.as_str(), next.base_sha.as_str()), ("main", kept.base_sha.as_str()));
    assert_eq!(next.branch, "nucleic/next");
    assert_eq!(read(&next.path.join("a.txt")), "one\ntwo\nthree\nwip\n");
    assert_eq!(read(&next.path.join("untracked.txt")), "u\n");
    assert_eq!(run_git(&next.path, &["status", "--porcelain"]), "");
    assert_eq!(f.parents("nucleic/next"), vec![kept_tip]);
    let figures = |wt: &Worktree| -> Vec<(PathBuf, u64, u64)> {
        let diff = f.repo.diff(wt).unwrap();
        diff.files.into_iter().map(|c| (c.path, c.additions, c.deletions)).collect()
    };
    assert_eq!(figures(&next), figures(&kept));
}

#[test]
fn a_reclaimed_worktree_keeps_its_branch_and_comes_back_with_its_uncommitted_work() {
    let f = fixture();
    let wt = f.worktree("reclaim");
    let tip = commit_file(&wt.path, "done.txt", "done\n", "done");
    write(&wt.path.join("a.txt"), "one\ntwo\nthree\nwip\n");
    write(&wt.path.join("new.txt"), "untracked\n");
    std::fs::remove_file(wt.path.join("done.txt")).unwrap();
    let before = status(&wt.path);
    let figures = |wt: &Worktree| -> Vec<(PathBuf, u64, u64)> {
        let diff = f.repo.diff(wt).unwrap();
        diff.files.into_iter().map(|c| (c.path, c.additions, c.deletions)).collect()
    };
    let diff_before = figures(&wt);

    let reclaimed = f.repo.reclaim(&wt).unwrap();
    assert!(reclaimed.uncommitted.is_some());
    assert!(!wt.path.exists());
    assert_eq!(f.repo.resolve("nucleic/reclaim").unwrap(), tip, "the branch did not move");
    assert!(matches!(f.repo.diff(&wt), Err(GitError::WorktreeMissing { .. })));
    // The kept work is reachable from a ref, not from the branch.
    assert!(!run_git(&f.root, &["for-each-ref", "refs/nucleic/reclaimed/"]).is_empty());

    assert!(f.repo.restore(&wt).unwrap(), "uncommitted work was kept");
    assert_eq!(status(&wt.path), before);
    assert_eq!(read(&wt.path.join("new.txt")), "untracked\n");
    assert!(!wt.path.join("done.txt").exists());
    assert_eq!(figures(&wt), diff_before);
    assert_eq!(run_git(&f.root, &["for-each-ref", "refs/nucleic/reclaimed/"]), "");
    assert!(matches!(f.repo.restore(&wt), Err(GitError::PathExists { .. })));

    // A clean worktree keeps nothing; restoring it gives the branch tip.
    let clean = f.worktree("clean");
    assert_eq!(f.repo.reclaim(&clean).unwrap().uncommitted, None);
    assert!(!f.repo.restore(&clean).unwrap());
    assert_eq!(status(&clean.path), "");
    // A branch deleted meanwhile cannot come back.
    f.repo.reclaim(&clean).unwrap();
    run_git(&f.root, &["branch", "-D", "nucleic/clean"]);
    assert!(matches!(f.repo.restore(&clean), Err(GitError::UnknownRef { .. })));
}

#[test]
fn worktree_deleted_behind_gits_back_is_prunable_and_missing() {
    let f = fixture();
    let wt = f.worktree("vanish");
    std::fs::remove_dir_all(&wt.path).unwrap();
    let entries = f.repo.list_worktrees().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0].path.as_path(), entries[0].branch.as_deref()),
        (f.root.as_path(), Some("main"))
    );
    assert!(!entries[0].prunable);
    let gone = &entries[1];
    assert_eq!(
        (gone.path.as_path(), gone.branch.as_deref()),
        (wt.path.as_path(), Some("nucleic/vanish"))
    );
    assert!(gone.prunable && !gone.locked && gone.head.is_some());
    assert!(matches!(f.repo.diff(&wt), Err(GitError::WorktreeMissing { .. })));
    assert!(matches!(f.repo.conflict_preview(&wt, "main"), Err(GitError::WorktreeMissing { .. })));
    f.repo.prune().unwrap();
    assert_eq!(f.repo.list_worktrees().unwrap().len(), 1);
    f.repo.discard(&wt).unwrap();
    assert!(!f.repo.branch_exists("nucleic/vanish").unwrap());
}

#[test]
fn three_worktrees_have_independent_diffs() {
    let f = fixture();
    let trees: Vec<Worktree> = ["one", "two", "three"].iter().map(|s| f.worktree(s)).collect();
    for (i, wt) in trees.iter().enumerate() {
        write(&wt.path.join(format!("only-{i}.txt")), &"line\n".repeat(i + 1));
    }
    commit_file(&trees[1].path, "b.txt", "alpha\n", "two trims b");
    for (i, wt) in trees.iter().enumerate() {
        let diff = f.repo.diff(wt).unwrap();
        let mut expected = vec![(format!("only-{i}.txt"), i as u64 + 1, 0)];
        if i == 1 {
            expected.insert(0, ("b.txt".to_owned(), 0, 1));
        }
        let got: Vec<_> = diff
            .files
            .iter()
            .map(|c| (c.path.to_str().unwrap().to_owned(), c.additions, c.deletions))
            .collect();
        assert_eq!(got, expected, "worktree {}", wt.branch);
    }
    let listed: Vec<_> = f.repo.list_worktrees().unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(listed.len(), 4);
    assert!(trees.iter().all(|t| listed.contains(&t.path)));
}

#[test]
fn listing_worktrees_while_another_is_being_added_does_not_fail() {
    let f = fixture();
    let root = f.root.clone();
    let adder = std::thread::spawn(move || {
        for i in 0..30 {
            let path = root.join(format!(".nucleic/pool/p{i}"));
            run_git(&root, &["worktree", "add", "-q", "--detach", path.to_str().unwrap(), "HEAD"]);
        }
    });
    let mut lists = 0;
    while !adder.is_finished() {
        f.repo.list_worktrees().expect("a list during another worktree's creation");
        lists += 1;
    }
    adder.join().unwrap();
    assert!(lists > 0);
    assert_eq!(f.repo.list_worktrees().unwrap().len(), 31);
}
