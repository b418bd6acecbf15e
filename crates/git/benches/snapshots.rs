//! Times a turn snapshot as the host takes it (`Repo::open` of the project, then
//! `Repo::record_snapshot_kept`: `git add -A` into the session's kept snapshot index, the trees
//! and the ref written in-process), the same with a fresh copy of the worktree's index
//! (`Repo::record_snapshot`), and a turn's diff (`Repo::diff_trees` between two snapshots) in a
//! worktree of a synthetic repository, 20,000 files by default, next to a plain `git status` of
//! the same worktree in the same round (the machine's load moves both). Counts the git
//! processes each snapshot started (`nucleic_git::git_processes`).
//!
//! `cargo bench -p nucleic-git --bench snapshots` (SNAP_FILES, SNAP_ROUNDS to change the size).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use nucleic_git::{Repo, WorktreeSpec, git_processes};

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

    let index = scratch.path().join("snapshot.index");
    let mut snapshot_ms = Vec::with_capacity(rounds);
    let mut copied_ms = Vec::with_capacity(rounds);
    let mut diff_ms = Vec::with_capacity(rounds);
    let mut status_ms = Vec::with_capacity(rounds);
    let mut processes = Vec::with_capacity(rounds);
    let mut previous = repo.record_snapshot_kept(&wt, "bench", "0", &index).unwrap();
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
        let spawned = git_processes();
        let start = Instant::now();
        let name = round.to_string();
        let tree =
            Repo::open(&root).unwrap().record_snapshot_kept(&wt, "bench", &name, &index).unwrap();
        snapshot_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        processes.push(git_processes() - spawned);
        // The same tree through a fresh copy of the worktree's own index (reviews, git facts).
        let start = Instant::now();
        let copied = Repo::open(&root).unwrap().snapshot_tree(&wt).unwrap();
        copied_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(copied, tree, "the kept index and a copy of the worktree's disagree");
        let start = Instant::now();
        let diff = Repo::open(&root).unwrap().diff_trees(&previous, &tree).unwrap();
        diff_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(diff.files.len() >= 2, "{:?}", diff.files);
        assert!(diff.files.iter().all(|f| !f.path.starts_with("target")));
        previous = tree;
    }
    let median = |times: &[f64]| {
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let ratio = median(&snapshot_ms) / median(&status_ms);
    let copied_ratio = median(&copied_ms) / median(&status_ms);
    report(&format!("turn snapshot, kept index ({files} files, {rounds} rounds)"), snapshot_ms);
    report(&format!("turn snapshot tree, copy of the worktree's index ({files} files)"), copied_ms);
    report(&format!("turn diff ({files} files, {rounds} rounds)"), diff_ms);
    report(&format!("plain git status, same worktree ({files} files, {rounds} rounds)"), status_ms);
    println!(
        "turn snapshot ÷ git status (medians, same run): {ratio:.2} (copy of the index: {copied_ratio:.2})"
    );
    let (min, max) = (processes.iter().min().unwrap(), processes.iter().max().unwrap());
    println!("git processes per turn snapshot (open + record, counted): {min}–{max}");
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
