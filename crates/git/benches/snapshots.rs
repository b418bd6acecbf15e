//! Times a turn snapshot (`Repo::record_snapshot`: the working tree as a tree object in a
//! temporary index, kept by a ref) and a turn's diff (`Repo::diff_trees` between two snapshots)
//! in a worktree of a synthetic repository, 20,000 files by default, next to a plain
//! `git status` of the same worktree in the same round (the machine's load moves both).
//!
//! `cargo bench -p nucleic-git --bench snapshots` (SNAP_FILES, SNAP_ROUNDS to change the size).

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
        .stdout(std::process::Stdio::null())
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"])
        .args(["-c", "commit.gpgsign=false", "-C"])
        .arg(dir)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn main() {
    let files = env_usize("SNAP_FILES", 20_000);
    let rounds = env_usize("SNAP_ROUNDS", 30);
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::Builder::new().prefix("nucleic-snap-").tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let root = scratch.path().join("repo");
    for i in 0..files {
        let dir = root.join(format!("src/a{}/b{}", i / 1000, (i / 100) % 10));
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("file {i}\n{}\n", "some words on a line ".repeat(8));
        std::fs::write(dir.join(format!("f{i}.txt")), text).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "synthetic"]);
    git(&root, &["repack", "-adq"]);
    let repo = Repo::open(&root).unwrap();
    let spec = WorktreeSpec {
        slug: "snap".into(),
        base_ref: "main".into(),
        copy_files: vec![],
        setup: None,
    };
    let wt = repo.create_worktree(&spec).unwrap();
    // Build output the snapshot must skip (ignored).
    let target = wt.path.join("target");
    std::fs::create_dir_all(&target).unwrap();
    for i in 0..2_000 {
        std::fs::write(target.join(format!("o{i}.o")), "object\n").unwrap();
    }

    let mut snapshot_ms = Vec::with_capacity(rounds);
    let mut diff_ms = Vec::with_capacity(rounds);
    let mut status_ms = Vec::with_capacity(rounds);
    let mut previous = repo.record_snapshot(&wt, "bench", "0").unwrap();
    for round in 1..=rounds {
        // A turn's typical work: some edits, a new file.
        for i in 0..20 {
            let path = wt.path.join(format!("src/a0/b0/f{}.txt", (round * 20 + i) % 100));
            std::fs::write(path, format!("turn {round} edit {i}\n")).unwrap();
        }
        std::fs::write(wt.path.join(format!("new-{round}.txt")), "new\n").unwrap();
        // The yardstick: what a plain `git status` of the same worktree costs right now.
        let start = Instant::now();
        git(&wt.path, &["status", "--porcelain", "--untracked-files=all"]);
        status_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        let start = Instant::now();
        let tree =
            Repo::open(&root).unwrap().record_snapshot(&wt, "bench", &round.to_string()).unwrap();
        snapshot_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        let start = Instant::now();
        let diff = Repo::open(&root).unwrap().diff_trees(&previous, &tree).unwrap();
        diff_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(diff.files.len() >= 2, "{:?}", diff.files);
        assert!(diff.files.iter().all(|f| !f.path.starts_with("target")));
        previous = tree;
    }
    report(&format!("turn snapshot ({files} files, {rounds} rounds)"), snapshot_ms);
    report(&format!("turn diff ({files} files, {rounds} rounds)"), diff_ms);
    report(&format!("plain git status, same worktree ({files} files, {rounds} rounds)"), status_ms);
    let start = Instant::now();
    let dropped = repo.drop_snapshots("bench").unwrap();
    println!("dropping {dropped} snapshot refs: {:.1} ms", start.elapsed().as_secs_f64() * 1000.0);
}

fn report(name: &str, mut times: Vec<f64>) {
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let (min, max) = (times[0], times[times.len() - 1]);
    println!("{name}: median {median:.1} ms (min {min:.1}, max {max:.1})");
}
