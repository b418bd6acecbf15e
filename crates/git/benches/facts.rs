//! Times what the cockpit's git-facts poll costs: `diff` (with untracked files and the patch),
//! `ahead_behind` and `conflict_preview` of one worktree of a synthetic repository.
//!
//! `cargo bench -p nucleic-git --bench facts` (FACTS_FILES, FACTS_ROUNDS to change the size;
//! FACTS_ONE_CALL=1 also times `Repo::facts`, the single-snapshot call the host makes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use nucleic_git::{Repo, WorktreeSpec};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"])
        .args(["-c", "commit.gpgsign=false", "-C"])
        .arg(dir)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn main() {
    let files = env_usize("FACTS_FILES", 5_000);
    let rounds = env_usize("FACTS_ROUNDS", 40);
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::Builder::new().prefix("nucleic-facts-").tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let root = scratch.path().join("repo");
    for i in 0..files {
        let dir = root.join(format!("src/d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("file {i}\n{}\n", "some words on a line ".repeat(8));
        std::fs::write(dir.join(format!("f{i}.txt")), text).unwrap();
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "synthetic"]);
    git(&root, &["repack", "-adq"]);
    let repo = Repo::open(&root).unwrap();
    let spec = WorktreeSpec {
        slug: "facts".into(),
        base_ref: "main".into(),
        copy_files: vec![],
        setup: None,
    };
    let wt = repo.create_worktree(&spec).unwrap();
    // A session's typical work: a commit, some edits, some new files.
    std::fs::write(wt.path.join("src/d0/f0.txt"), "changed\n").unwrap();
    git(&wt.path, &["commit", "-qam", "agent commit"]);
    for i in 1..20 {
        std::fs::write(wt.path.join(format!("src/d0/f{i}.txt")), format!("edit {i}\n")).unwrap();
    }
    for i in 0..5 {
        std::fs::write(wt.path.join(format!("new-{i}.txt")), "new\n").unwrap();
    }

    let mut times = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        let start = Instant::now();
        let repo = Repo::open(&root).unwrap();
        let diff = repo.diff(&wt).unwrap();
        let counts = repo.ahead_behind(&wt, "main").unwrap();
        let conflicts = repo.conflict_preview(&wt, "main").unwrap();
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        assert_eq!((diff.files.len(), counts.ahead, conflicts.len()), (25, 1, 0));
        if round > 0 {
            times.push(elapsed); // round 0 warms the caches
        }
    }
    report(&format!("git facts, 3 calls ({files} files, {rounds} rounds)"), times);
    if std::env::var_os("FACTS_ONE_CALL").is_some() {
        let mut times = Vec::with_capacity(rounds);
        for round in 0..=rounds {
            let start = Instant::now();
            let facts = Repo::open(&root).unwrap().facts(&wt, "main").unwrap();
            let elapsed = start.elapsed().as_secs_f64() * 1000.0;
            assert_eq!((facts.diff.files.len(), facts.ahead_behind.ahead), (25, 1));
            if round > 0 {
                times.push(elapsed);
            }
        }
        report(&format!("git facts, Repo::facts ({files} files, {rounds} rounds)"), times);
    }
}

fn report(name: &str, mut times: Vec<f64>) {
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let (min, max) = (times[0], times[times.len() - 1]);
    println!("{name}: median {median:.1} ms (min {min:.1}, max {max:.1})");
}
