//! Discovery over 2,000 session files of 1 MB each (1,000 Claude Code transcripts in 20 project
//! folders, 1,000 Codex rollouts of every project), against the same run's baseline: reading
//! every one of those files whole, which is what a discovery without windows would cost.
//! `cargo bench -p nucleic-discover`; files on `/dev/shm` when it is there (RAM, like a warm
//! page cache), else the temp dir.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nucleic_discover::{Homes, Limits, discover};
use serde_json::json;

const FILES_EACH: usize = 1_000;
const SIZE: usize = 1024 * 1024;

fn filler(size: usize) -> String {
    let line = json!({"type": "assistant", "message": {"model": "m", "content": [{"type": "text", "text": "x".repeat(900)}]}}).to_string();
    let mut out = String::with_capacity(size + line.len());
    while out.len() < size {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn lay_out(root: &Path) -> (PathBuf, Homes) {
    let filler = filler(SIZE);
    let projects: Vec<PathBuf> = (0..20).map(|i| root.join(format!("src/app{i:02}"))).collect();
    for p in &projects {
        std::fs::create_dir_all(p).unwrap();
    }
    let claude = root.join(".claude/projects");
    for i in 0..FILES_EACH {
        let cwd = &projects[i % projects.len()];
        let slug: String = cwd
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = claude.join(slug);
        std::fs::create_dir_all(&dir).unwrap();
        let head = json!({"type": "user", "cwd": cwd, "sessionId": format!("c{i}"), "timestamp": "2026-12-01T00:00:00Z", "message": {"content": "a prompt"}});
        std::fs::write(dir.join(format!("c{i}.jsonl")), format!("{head}\n{filler}")).unwrap();
    }
    let codex = root.join(".codex/sessions/2026/12/01");
    std::fs::create_dir_all(&codex).unwrap();
    for i in 0..FILES_EACH {
        let cwd = &projects[i % projects.len()];
        let meta = json!({"timestamp": "2026-12-01T00:00:00Z", "type": "session_meta", "payload": {"id": format!("x{i}"), "cwd": cwd, "base_instructions": "b".repeat(20_000)}});
        std::fs::write(
            codex.join(format!("rollout-2026-12-01T00-00-{i:04}-x{i}.jsonl")),
            format!("{meta}\n{filler}"),
        )
        .unwrap();
    }
    let homes = Homes { claude: Some(root.join(".claude")), codex: Some(root.join(".codex")) };
    (projects[0].clone(), homes)
}

fn every_file(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { every_file(&p, out) } else { out.push(p) }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = tempfile::tempdir_in(base).unwrap();
    let started = Instant::now();
    let (checkout, homes) = lay_out(dir.path());
    eprintln!(
        "laid out {} files of {} KiB in {:?}",
        2 * FILES_EACH,
        SIZE / 1024,
        started.elapsed()
    );
    let mut files = Vec::new();
    every_file(&dir.path().join(".claude"), &mut files);
    every_file(&dir.path().join(".codex"), &mut files);
    let limits = Limits { deadline: Duration::from_secs(60), ..Limits::default() };
    let (mut ours, mut whole) = (Vec::new(), Vec::new());
    let mut found = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let d = discover(&checkout, &homes, limits, &[]).unwrap();
        ours.push(t.elapsed());
        found = d.sessions.len();
        assert!(d.truncated.is_none());
        let t = Instant::now();
        let bytes: usize = files.iter().map(|f| std::fs::read(f).unwrap().len()).sum();
        whole.push(t.elapsed());
        assert!(bytes >= 2 * FILES_EACH * SIZE);
    }
    let (ours, whole) = (median(ours), median(whole));
    println!(
        "discovery of one checkout over {} files of 1 MiB: {:.1} ms median of 5 ({found} sessions found); reading every file whole: {:.1} ms; ratio {:.3}",
        files.len(),
        ours.as_secs_f64() * 1e3,
        whole.as_secs_f64() * 1e3,
        ours.as_secs_f64() / whole.as_secs_f64()
    );
}
