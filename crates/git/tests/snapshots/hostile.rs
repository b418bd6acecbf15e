//! The hostile-repository defences with a kept opened repository and a kept snapshot index:
//! what the agent plants between two snapshots (a `core.fsmonitor`, hooks, a filter, a
//! rewritten `.git`, an `include.path` FIFO, files marked assume-unchanged, stat settings that
//! would let an edit pass for unchanged) never runs, never redirects a snapshot and never
//! hides an edit from it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nucleic_git::{GitError, Repo};

use crate::hostile::{Traps, admin_dir, safe_git, set_config};
use crate::support::{fixture, write};

/// A file's contents in a snapshot tree, read by the test's safe git.
fn in_tree(root: &Path, tree: &str, path: &str) -> String {
    safe_git(root, &["show", &format!("{tree}:{path}")])
}

#[test]
fn programs_planted_between_two_snapshots_never_run() {
    let f = fixture();
    let wt = f.worktree("planted");
    let traps = Traps::new(f.root.parent().unwrap());
    let index = f.root.parent().unwrap().join("state/snapshot.index");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    let repo = Repo::open(&f.root).unwrap();
    traps.during("first snapshot", || repo.record_snapshot_kept(&wt, "s", "1", &index)).unwrap();

    // The agent plants, between two turns, programs in the repository's and its worktree's
    // config, a hooks dir, and a filter for every file.
    let config = f.root.join(".git/config");
    set_config(&config, "core.fsmonitor", &traps.script("fsmonitor", "exit 1"));
    set_config(&config, "filter.evil.clean", &traps.script("filter-clean", "echo FILTERED"));
    set_config(&config, "extensions.worktreeConfig", "true");
    let worktree_config = admin_dir(&f, &wt).join("config.worktree");
    set_config(&worktree_config, "core.fsmonitor", &traps.script("wt-fsmonitor", "exit 1"));
    let hooks = traps.dir.join("hooks");
    traps.hooks_in(&hooks, "");
    set_config(&worktree_config, "core.hooksPath", hooks.to_str().unwrap());
    write(&wt.path.join(".gitattributes"), "* filter=evil\n");
    write(&wt.path.join("a.txt"), "edited by the agent\n");

    let tree = traps
        .during("second snapshot (repository opened again)", || {
            Repo::open(&f.root)?.record_snapshot_kept(&wt, "s", "2", &index)
        })
        .unwrap();
    assert_eq!(in_tree(&f.root, &tree, "a.txt"), "edited by the agent", "a filter ran");
    let tree = traps
        .during("third snapshot (the repository kept)", || {
            write(&wt.path.join("b.txt"), "also edited\n");
            Repo::open(&f.root)?.record_snapshot_kept(&wt, "s", "3", &index)
        })
        .unwrap();
    assert_eq!(in_tree(&f.root, &tree, "b.txt"), "also edited");
}

#[test]
fn a_git_file_rewritten_between_two_snapshots_never_redirects_them() {
    let f = fixture();
    let wt = f.worktree("relinked");
    let traps = Traps::new(f.root.parent().unwrap());
    let index = f.root.parent().unwrap().join("state/snapshot.index");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    let start = Repo::open(&f.root).unwrap().record_snapshot_kept(&wt, "s", "1", &index).unwrap();

    let other = f.root.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    safe_git(&other, &["init", "-q", "-b", "main"]);
    set_config(&other.join(".git/config"), "core.fsmonitor", &traps.script("other-fsm", "exit 1"));
    traps.hooks_in(&other.join(".git/hooks"), "other-");
    let other_state = || {
        let refs = safe_git(&other, &["for-each-ref"]);
        let objects = safe_git(&other, &["count-objects", "-v"]);
        (refs, objects, std::fs::read(other.join(".git/index")).ok())
    };
    let before = other_state();
    write(&wt.path.join(".git"), &format!("gitdir: {}\n", other.join(".git").display()));
    write(&wt.path.join("a.txt"), "agent\n");

    let end = traps
        .during("snapshot after the rewrite", || {
            Repo::open(&f.root)?.record_snapshot_kept(&wt, "s", "2", &index)
        })
        .unwrap();
    assert_eq!(safe_git(&f.root, &["rev-parse", "refs/nucleic/turns/s/2"]), end);
    assert_eq!(in_tree(&f.root, &end, "a.txt"), "agent");
    let diff = f.repo.diff_trees(&start, &end).unwrap();
    let paths: Vec<_> = diff.files.iter().map(|c| c.path.display().to_string()).collect();
    assert_eq!(paths, ["a.txt"], "the snapshot is of the session's own worktree");
    assert_eq!(other_state(), before, "the other repository was touched");
}

/// An `include.path` naming a FIFO planted between two snapshots: the snapshot is killed at its
/// deadline, and once the include is gone the next one is correct and finds no stale lock.
#[test]
fn a_fifo_include_planted_between_two_snapshots_cannot_hang_them() {
    let f = fixture();
    let wt = f.worktree("fifo");
    let traps = Traps::new(f.root.parent().unwrap());
    let index = f.root.parent().unwrap().join("state/snapshot.index");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    let repo = Repo::open(&f.root).unwrap().with_git_deadline(Duration::from_millis(500));
    repo.record_snapshot_kept(&wt, "s", "1", &index).unwrap();

    let fifo = traps.dir.join("config.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let config = f.root.join(".git/config");
    set_config(&config, "include.path", fifo.to_str().unwrap());
    write(&wt.path.join("a.txt"), "during the fifo\n");
    let started = Instant::now();
    let hung = traps.during("snapshot", || repo.record_snapshot_kept(&wt, "s", "2", &index));
    assert!(matches!(hung, Err(GitError::TimedOut { .. })), "{hung:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    let unset = Command::new("git")
        .args(["config", "--file"])
        .arg(&config)
        .args(["--unset", "include.path"])
        .status()
        .unwrap();
    assert!(unset.success());
    let tree = repo.record_snapshot_kept(&wt, "s", "3", &index).unwrap();
    assert_eq!(in_tree(&f.root, &tree, "a.txt"), "during the fifo");
    let mut lock = index.as_os_str().to_owned();
    lock.push(".lock");
    assert!(!Path::new(&lock).exists(), "a lock is left");
}

/// The agent marks a file assume-unchanged in its own index and turns on every setting that
/// would let a same-size edit with its mtime set back pass for unchanged: neither the kept
/// index nor a copy of the worktree's index misses the edit.
#[test]
fn marks_and_stat_settings_in_the_agents_hands_cannot_hide_an_edit() {
    let f = fixture();
    let wt = f.worktree("hidden");
    let index = f.root.parent().unwrap().join("state/snapshot.index");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    safe_git(&wt.path, &["update-index", "--assume-unchanged", "a.txt"]);
    safe_git(&wt.path, &["update-index", "--skip-worktree", "b.txt"]);
    let config = f.root.join(".git/config");
    set_config(&config, "core.ignoreStat", "true");
    set_config(&config, "core.checkStat", "minimal");
    set_config(&config, "core.trustctime", "false");
    let repo = Repo::open(&f.root).unwrap();
    let first = repo.record_snapshot_kept(&wt, "s", "1", &index).unwrap();
    assert_eq!(in_tree(&f.root, &first, "a.txt"), "one\ntwo\nthree");

    // Same size, mtime set back to what it was: only the ctime tells.
    let sneak = |name: &str, text: &str| {
        let path = wt.path.join(name);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    };
    std::thread::sleep(Duration::from_millis(20));
    sneak("a.txt", "one\nTWO\nthree\n");
    sneak("b.txt", "ALPHA\nbeta\n");
    let kept = repo.record_snapshot_kept(&wt, "s", "2", &index).unwrap();
    assert_eq!(in_tree(&f.root, &kept, "a.txt"), "one\nTWO\nthree", "kept index");
    assert_eq!(in_tree(&f.root, &kept, "b.txt"), "ALPHA\nbeta", "kept index");
    let copied = repo.snapshot_tree(&wt).unwrap();
    assert_eq!(copied, kept, "a copy of the worktree's index hid an edit");
}
