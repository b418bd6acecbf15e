//! Session start vs a bare `git worktree add` on a 20k-file repo.

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

// ----- 1. session start vs git worktree add ------------------------------------------------

pub(crate) async fn session_start(host: &Arc<Host>, scratch: &Path, root: &Path) -> Res<()> {
    println!("\n== 1. session start vs bare `git worktree add` (20,000 files, tmpfs) ==");
    let project =
        host.add_project(&root.to_string_lossy(), Some("repo-20k".into()), |_| {}).await?;
    let bare_dir = scratch.join("bare-worktrees");
    std::fs::create_dir_all(&bare_dir)?;
    let rounds = env_usize("HOST_BENCH_ROUNDS", 8);
    let (mut adds, mut starts, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    // Round 0 warms both paths up and is not counted.
    for round in 0..=rounds {
        let mut add_ms = 0.0;
        let mut start_ms = 0.0;
        let session_first = round % 2 == 1;
        for step in 0..2 {
            if (step == 0) == session_first {
                let t = Instant::now();
                let s =
                    host.new_session(sim_session(&project.project_id, "say hi"), "bench").await?;
                start_ms = ms(t.elapsed());
                // Let the first turn finish and be folded before the next measurement.
                wait_turns(host, &s.session_id, 1).await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            } else {
                let path = bare_dir.join(format!("wt_{round}"));
                let t = Instant::now();
                let out = Command::new("git")
                    .args(["worktree", "add", "--quiet", "-b", &format!("b_{round}")])
                    .arg(&path)
                    .arg("HEAD")
                    .current_dir(root)
                    .stdin(Stdio::null())
                    .output()?;
                add_ms = ms(t.elapsed());
                if !out.status.success() {
                    return Err(format!(
                        "git worktree add: {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                    .into());
                }
            }
        }
        let label = if round == 0 { "warm-up".to_owned() } else { format!("round {round}") };
        let first = if session_first { "session first" } else { "add first" };
        println!(
            "  {label:>8} ({first}): worktree add {add_ms:7.1} ms | session start {start_ms:7.1} ms | ratio {:.2}",
            start_ms / add_ms
        );
        if round > 0 {
            adds.push(add_ms);
            starts.push(start_ms);
            ratios.push(start_ms / add_ms);
        }
    }
    let overhead: Vec<f64> = starts.iter().zip(&adds).map(|(s, a)| s - a).collect();
    println!("  bare `git worktree add`   {} ms", spread(&adds, 1));
    println!("  session start             {} ms", spread(&starts, 1));
    println!("  start − add (same round)  {} ms", spread(&overhead, 1));
    let ratio = median(&ratios);
    println!(
        "  ratio start ÷ add         {}  target ≤ 1.2 → {}",
        spread(&ratios, 2),
        if ratio <= 1.2 { "PASS" } else { "FAIL" }
    );
    Ok(())
}

pub(crate) fn sim_session(project_id: &str, prompt: &str) -> NewSession {
    NewSession {
        project_id: project_id.into(),
        base_ref: None,
        backend: Some(Backend::Simulated),
        model: None,
        permission_mode: Some("bypassPermissions".into()),
        title: None,
        mode: None,
        prompt: prompt.into(),
    }
}

/// Waits (in process) until the session has completed `turns` turns in all; returns the last
/// seq seen.
pub(crate) async fn wait_turns(host: &Host, id: &str, turns: usize) -> Res<u64> {
    let mut events = host.subscribe(id, 1).await?;
    let (mut seen, mut last) = (0, 0);
    while seen < turns {
        let event = tokio::time::timeout(STALL, events.next())
            .await
            .map_err(|_| format!("session {id}: no event for {} s", STALL.as_secs()))??
            .ok_or_else(|| format!("session {id}: the stream ended"))?;
        last = event.seq;
        if matches!(event.kind, EventKind::TurnCompleted(_)) {
            seen += 1;
        }
    }
    Ok(last)
}
