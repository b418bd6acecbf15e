//! Per-turn snapshots: trees kept alive by `refs/nucleic/turns/…`, recorded without touching the
//! session branch, its index or HEAD, honouring `.gitignore`, and never redirected by a `.git`
//! the agent wrote.

use std::path::Path;

use nucleic_git::{FileStatus, GitError, SNAPSHOT_REF_PREFIX};

use crate::support::{change, fixture, run_git, status, write};

/// Refs other than the snapshot refs, the worktree's status, HEAD and its index file's bytes.
fn untouched(root: &Path, worktree: &Path) -> String {
    let refs = run_git(root, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let refs: Vec<&str> = refs.lines().filter(|l| !l.starts_with(SNAPSHOT_REF_PREFIX)).collect();
    let git_dir = run_git(worktree, &["rev-parse", "--absolute-git-dir"]);
    let index = std::fs::read(Path::new(&git_dir).join("index")).unwrap();
    format!(
        "{}\n{}\nHEAD {}\nindex {} bytes, {:x}",
        refs.join("\n"),
        status(worktree),
        run_git(worktree, &["rev-parse", "HEAD"]),
        index.len(),
        index.iter().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)))
    )
}

#[test]
fn a_turn_snapshot_records_the_worktree_and_moves_nothing() {
    let f = fixture();
    let wt = f.worktree("turns");
    write(&wt.path.join("staged.txt"), "staged\n");
    run_git(&wt.path, &["add", "staged.txt"]);
    let start = f.repo.record_snapshot(&wt, "session-1", "1-start").unwrap();

    // The turn: an edit, a new file, an ignored file, a deletion.
    write(&wt.path.join("a.txt"), "one\nTWO\nthree\n");
    write(&wt.path.join("src/new.rs"), "fn main() {}\n");
    write(&wt.path.join(".env"), "SECRET=1\n");
    std::fs::remove_file(wt.path.join("b.txt")).unwrap();
    let before = untouched(&f.root, &wt.path);
    let end = f.repo.record_snapshot(&wt, "session-1", "1-end").unwrap();
    assert_eq!(untouched(&f.root, &wt.path), before, "the snapshot moved something");

    let diff = f.repo.diff_trees(&start, &end).unwrap();
    let paths: Vec<_> = diff.files.iter().map(|c| c.path.display().to_string()).collect();
    assert_eq!(paths, ["a.txt", "b.txt", "src/new.rs"], "{diff:?}");
    assert_eq!(change(&diff.files, "a.txt").status, FileStatus::Modified);
    assert_eq!(change(&diff.files, "b.txt").status, FileStatus::Deleted);
    assert_eq!(change(&diff.files, "src/new.rs").status, FileStatus::Added);
    assert!(diff.patch.contains("-two\n+TWO\n"), "{}", diff.patch);
    assert!(!diff.patch.contains("SECRET"), "an ignored file was snapshotted");
    // The staged file was already in the start snapshot.
    assert!(!paths.contains(&"staged.txt".to_owned()));

    // The refs keep the trees through a pruning gc; nothing else names them.
    assert_eq!(f.repo.snapshot_at("session-1", "1-end").unwrap().as_deref(), Some(end.as_str()));
    assert_eq!(f.repo.snapshot_at("session-1", "2-end").unwrap(), None);
    run_git(&f.root, &["gc", "-q", "--prune=now"]);
    assert_eq!(run_git(&f.root, &["cat-file", "-t", &end]), "tree");
    assert_eq!(f.repo.snapshot_keys().unwrap(), ["session-1"]);
    let log = run_git(&f.root, &["log", "--all", "--format=%s"]);
    assert_eq!(log, "init", "snapshots must not appear as history");

    // Files at a snapshot, for quoting review comments.
    let text = f.repo.file_in_tree(&end, Path::new("a.txt"), 1 << 20).unwrap();
    assert_eq!(text.as_deref(), Some(&b"one\nTWO\nthree\n"[..]));
    assert_eq!(f.repo.file_in_tree(&end, Path::new("b.txt"), 1 << 20).unwrap(), None);
    assert_eq!(f.repo.file_in_tree(&end, Path::new("src"), 1 << 20).unwrap(), None);
    for bad in ["../repo/a.txt", "./a.txt", "/etc/passwd", ""] {
        let read = f.repo.file_in_tree(&end, Path::new(bad), 1 << 20);
        assert!(matches!(read, Err(GitError::PathEscape { .. })), "{bad}: {read:?}");
    }
    assert!(matches!(
        f.repo.file_in_tree("HEAD", Path::new("a.txt"), 1 << 20),
        Err(GitError::UnknownRef { .. })
    ));
    assert!(matches!(f.repo.diff_trees("--output=/tmp/x", &end), Err(GitError::UnknownRef { .. })));

    // Cleaned up with the session.
    assert_eq!(f.repo.drop_snapshots("session-1").unwrap(), 2);
    assert!(f.repo.snapshot_keys().unwrap().is_empty());
    assert_eq!(f.repo.snapshot_at("session-1", "1-end").unwrap(), None);
    assert!(matches!(
        f.repo.record_snapshot(&wt, "../heads/main", "1"),
        Err(GitError::UnknownRef { .. })
    ));
}

#[test]
fn big_files_are_snapshotted_and_refused_for_quoting() {
    let f = fixture();
    let wt = f.worktree("big");
    let start = f.repo.record_snapshot(&wt, "s", "1-start").unwrap();
    let big: Vec<u8> =
        (0..24u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(wt.path.join("big.bin"), &big).unwrap();
    let end = f.repo.record_snapshot(&wt, "s", "1-end").unwrap();
    let diff = f.repo.diff_trees(&start, &end).unwrap();
    assert!(change(&diff.files, "big.bin").binary, "{diff:?}");
    let read = f.repo.file_in_tree(&end, Path::new("big.bin"), 8 << 20);
    assert!(matches!(read, Err(GitError::TooLarge { size, .. }) if size == 24 << 20), "{read:?}");
}

#[test]
fn a_git_file_the_agent_wrote_does_not_redirect_the_snapshot() {
    let f = fixture();
    let wt = f.worktree("hostile");
    // Another repository the agent would like the host to write to.
    let evil = f.root.parent().unwrap().join("evil");
    std::fs::create_dir(&evil).unwrap();
    run_git(&evil, &["init", "-q"]);
    let evil_objects = run_git(&evil, &["count-objects", "-v"]);
    // The worktree's `.git` gitlink now points there, and a nested `.git` sits in a subdirectory.
    write(&wt.path.join(".git"), &format!("gitdir: {}\n", evil.join(".git").display()));
    write(&wt.path.join("nested/.git"), &format!("gitdir: {}\n", evil.join(".git").display()));
    write(&wt.path.join("a.txt"), "changed by the agent\n");
    let start = run_git(&f.root, &["rev-parse", "main^{tree}"]);
    let end = f.repo.record_snapshot(&wt, "s", "1-end").unwrap();

    // The snapshot and its ref are in the session's repository, with the agent's edit.
    assert_eq!(run_git(&f.root, &["rev-parse", "refs/nucleic/turns/s/1-end"]), end);
    let diff = f.repo.diff_trees(&start, &end).unwrap();
    assert_eq!(change(&diff.files, "a.txt").status, FileStatus::Modified);
    assert!(diff.files.iter().all(|c| !c.path.ends_with(".git")), "{diff:?}");
    // The nested repository without a commit is left out, not a failure (of the diff too).
    assert_eq!(f.repo.diff(&wt).unwrap().files.len(), 1);
    // The other repository got nothing.
    assert_eq!(run_git(&evil, &["for-each-ref"]), "");
    assert_eq!(run_git(&evil, &["count-objects", "-v"]), evil_objects);
}
