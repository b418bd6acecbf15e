//! What a keeper costs an agent: start-up (spawn → first output line) and output throughput
//! through the keeper (spool file + socket) against the same agent started directly, rounds
//! interleaved in one process so the ratios hold on a busy machine; and the keeper's memory.
//!
//! `cargo bench -p nucleic-host --bench keeper` (KEEPER_BENCH_ROUNDS, KEEPER_BENCH_MB).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nucleic_agents::keeper::{KeeperDir, KeeperSpec, Reach, attach, release, start_keeper};
use nucleic_agents::process::SpawnSpec;
use nucleic_agents::supervisor::{Streams, launch};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn sh(script: &str, cwd: &std::path::Path) -> SpawnSpec {
    SpawnSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: cwd.to_owned(),
        env: Vec::new(),
        isolation: None,
    }
}

/// Starts `spec` directly or under a keeper in `scratch/<n>`; returns its streams.
async fn start(spec: &SpawnSpec, kept: Option<&KeeperDir>) -> Res<Streams> {
    match kept {
        None => Ok(launch(spec)?.1),
        Some(dir) => {
            let program = PathBuf::from(env!("CARGO_BIN_EXE_nucleic-entry-points"));
            start_keeper(&program, dir, &KeeperSpec::new(spec.clone()))?;
            Ok(attach(dir, Reach::Starting, Duration::from_secs(10)).await?.streams)
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    (min, max)
}

async fn run() -> Res<()> {
    let rounds = env_usize("KEEPER_BENCH_ROUNDS", 15);
    let mb = env_usize("KEEPER_BENCH_MB", 200);
    let scratch = tempfile::tempdir_in("/dev/shm")?;
    let mut n = 0;
    let mut next_dir = || {
        n += 1;
        KeeperDir(scratch.path().join(format!("k{n}")))
    };
    println!("keeper bench: {rounds} rounds, {mb} MB of output per throughput round");

    // Start-up: spawn → the first line the agent writes, read by the host.
    let (mut direct, mut kept) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for keeper in [round % 2 == 0, round % 2 == 1] {
            let dir = keeper.then(&mut next_dir);
            let t = Instant::now();
            let streams =
                start(&sh("echo ready; exec sleep 5", scratch.path()), dir.as_ref()).await?;
            // The exit future holds a direct child: dropped, it stops the child's tree (which
            // made a direct round read "" whenever the kill beat the `echo`).
            let (stdout, _, exit) = streams.into_parts();
            let mut line = String::new();
            tokio::io::BufReader::new(stdout).read_line(&mut line).await?;
            drop(exit);
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(line, "ready\n");
            if let Some(dir) = &dir {
                kept.push(ms);
                release(dir, Duration::from_secs(5))?;
            } else {
                direct.push(ms);
            }
        }
    }
    let ratios: Vec<f64> = kept.iter().zip(&direct).map(|(k, d)| k / d).collect();
    println!(
        "start → first line: direct {:.1} ms ({:.1}–{:.1}), kept {:.1} ms ({:.1}–{:.1}), kept − direct {:.1} ms, ratio {:.2}",
        median(direct.clone()),
        range(&direct).0,
        range(&direct).1,
        median(kept.clone()),
        range(&kept).0,
        range(&kept).1,
        median(kept.clone()) - median(direct.clone()),
        median(ratios)
    );

    // Throughput: `mb` MB of output lines, read to the end by the host.
    let script = format!(
        "yes 'a line of agent output, about sixty bytes long, in json' | head -c {}",
        mb << 20
    );
    let (mut direct, mut kept, mut keeper_rss) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds.min(7) {
        for keeper in [round % 2 == 0, round % 2 == 1] {
            let dir = keeper.then(&mut next_dir);
            let t = Instant::now();
            let streams = start(&sh(&script, scratch.path()), dir.as_ref()).await?;
            let (mut stdout, _, exit) = streams.into_parts();
            let read = tokio::spawn(async move {
                let mut buf = vec![0u8; 1 << 16];
                let mut total = 0usize;
                loop {
                    match stdout.read(&mut buf).await {
                        Ok(0) | Err(_) => return total,
                        Ok(n) => total += n,
                    }
                }
            });
            if let Some(dir) = &dir {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if let Some(rss) = keeper_rss_kib(dir) {
                    keeper_rss.push(rss as f64);
                }
            }
            let total = read.await?;
            exit.await;
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(total, mb << 20, "every byte arrives");
            let mbps = (total as f64 / (1 << 20) as f64) / secs;
            if let Some(dir) = &dir {
                kept.push(mbps);
                release(dir, Duration::from_secs(5))?;
            } else {
                direct.push(mbps);
            }
        }
    }
    let ratios: Vec<f64> = kept.iter().zip(&direct).map(|(k, d)| k / d).collect();
    println!(
        "output throughput: direct {:.0} MB/s ({:.0}–{:.0}), kept {:.0} MB/s ({:.0}–{:.0}), ratio kept ÷ direct {:.2}",
        median(direct.clone()),
        range(&direct).0,
        range(&direct).1,
        median(kept.clone()),
        range(&kept).0,
        range(&kept).1,
        median(ratios)
    );
    if !keeper_rss.is_empty() {
        println!("keeper RSS while streaming: {:.1} MiB (median)", median(keeper_rss) / 1024.0);
    }
    Ok(())
}

/// The resident memory of the keeper serving `dir` (found by its command line).
fn keeper_rss_kib(dir: &KeeperDir) -> Option<u64> {
    let needle = dir.path().to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let pid = entry.file_name();
        let Some(pid) = pid.to_str().filter(|p| p.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("__keeper") && cmd.contains(&needle) {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            return line.split_whitespace().nth(1)?.parse().ok();
        }
    }
    None
}

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("keeper bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("keeper bench FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
