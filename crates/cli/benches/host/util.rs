//! Helpers: synthetic repos, git, /proc readings, statistics.

#![allow(unused_imports)]

use std::collections::HashMap;
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{
    Backend, ClientMessage, EventKind, HostMessage, NewSession, PROTOCOL_VERSION, Verbosity,
};
use nucleic_server::{AppState, load_or_create_token};
use serde_json::Value;

use super::*;

// ----- helpers ------------------------------------------------------------------------------

/// xorshift64*: deterministic, no dependency.
#[derive(Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// A repository like the reference's synthetic ones: `src/a*/b*/f*.txt`, 150–300 B per file,
/// one commit, `git repack -adq`.
pub(crate) fn build_repo(
    root: &Path,
    dirs_a: usize,
    dirs_b: usize,
    per_leaf: usize,
) -> Res<PathBuf> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (dirs_a * dirs_b * per_leaf) as u64);
    for a in 0..dirs_a {
        for b in 0..dirs_b {
            let leaf = root.join(format!("src/a{a}/b{b}"));
            std::fs::create_dir_all(&leaf)?;
            for f in 0..per_leaf {
                let size = rng.range(150, 300);
                let mut text = String::with_capacity(size + 16);
                while text.len() < size {
                    text.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
                    text.push(if rng.range(0, 9) == 0 { '\n' } else { ' ' });
                }
                text.truncate(size - 1);
                text.push('\n');
                std::fs::write(leaf.join(format!("f{f}.txt")), text)?;
            }
        }
    }
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "synthetic"])?;
    git(root, &["repack", "-adq"])?;
    Ok(root.canonicalize()?)
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> Res<String> {
    let out = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn transcript_path(home: &Path, id: &str) -> PathBuf {
    home.join("sessions").join(id).join("transcript.jsonl")
}

/// The seq of the transcript's last complete line.
pub(crate) fn transcript_last_seq(path: &Path) -> Res<u64> {
    let text = std::fs::read_to_string(path)?;
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => return Ok(0),
    };
    let line = complete.rsplit('\n').next().unwrap_or_default();
    let value: Value = serde_json::from_str(line)?;
    value["seq"].as_u64().ok_or_else(|| format!("{}: last line has no seq", path.display()).into())
}

/// A `Name:  value kB` (or plain number) field of `/proc/<pid>/status`; 0 if unreadable.
pub(crate) fn proc_status_kb(pid: &str, field: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return 0 };
    text.lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// This process's children (the agents) and their total RSS in kB.
pub(crate) fn children_rss_kb() -> (usize, u64) {
    let me = std::process::id().to_string();
    let (mut count, mut kb) = (0, 0);
    for pid in children(&me) {
        count += 1;
        kb += proc_status_kb(&pid, "VmRSS");
    }
    (count, kb)
}

pub(crate) fn children(parent: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|p| p == parent))
                    .unwrap_or(false)
            })
        })
        .collect()
}

pub(crate) fn wait_for_children(limit: Duration) {
    let me = std::process::id().to_string();
    let deadline = Instant::now() + limit;
    while !children(&me).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = children(&me);
    if !left.is_empty() {
        eprintln!("warning: {} agent processes still running after the bench", left.len());
    }
}

pub(crate) fn unix_ms_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn median(values: &[f64]) -> f64 {
    percentile(values, 0.5)
}

pub(crate) fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// `median (min–max)`.
pub(crate) fn spread(values: &[f64], decimals: usize) -> String {
    format!(
        "{:.d$} ({:.d$}–{:.d$})",
        median(values),
        percentile(values, 0.0),
        percentile(values, 1.0),
        d = decimals
    )
}
