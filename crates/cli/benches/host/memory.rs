//! Part 5: host memory with many sessions, and a churn soak that must leak nothing.
//!
//! (a) `HOST_BENCH_IDLE` (100) sessions of the simulated agent left idle (agent alive, waiting
//! for a follow-up), then `HOST_BENCH_STREAMING` (20) more streaming at once (`slow`: 200 ms
//! between chunks) while host RSS is sampled every 250 ms; fails above [`RSS_BOUND_MIB`].
//! (b) `HOST_BENCH_CHURN` (1,000; the soak is 10,000) short sessions, four at a time,
//! each created, run to its first turn's end and discarded; host RSS sampled every tenth of the
//! run, with where it is (`footprint.rs`), the runtime's live tasks, the catalog's size and the
//! host's per-session entries (`Host::retained`). Fails if RSS grows more than
//! [`CHURN_KIB_PER_SESSION`] per session over the second half, or if any worktree, session
//! branch, agent process, file descriptor or host entry is left behind.
//!
//! Idle sessions' writers let their transcript go after `HOST_BENCH_IDLE_RELEASE_MS` (200;
//! `off` keeps them, as before).

use std::path::Path;
use std::time::{Duration, Instant};

use nucleic_host::Host;
use nucleic_protocol::FinishAction;

use crate::{Footprint, Res, env_usize, git, proc_status_kb, sim_session, stop_all, wait_turns};

/// Host RSS (MiB) that 100 idle and 20 streaming sessions must stay under.
const RSS_BOUND_MIB: f64 = 96.0;
/// RSS growth (KiB per session) allowed over the second half of the churn soak.
const CHURN_KIB_PER_SESSION: f64 = 2.0;

/// Churns shorter than this only report their growth per session (too few to judge it).
const MIN_CHURN_JUDGED: usize = 200;

fn rss_mib() -> f64 {
    proc_status_kb("self", "VmRSS") as f64 / 1024.0
}

/// The catalog's database and write-ahead log, in KiB.
fn catalog_kib(home: &Path) -> u64 {
    ["catalog.sqlite", "catalog.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(home.join(f)).ok())
        .map(|m| m.len() / 1024)
        .sum()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Every live (not zombie) process: its pid, command line and parent pid.
fn processes() -> Vec<(String, String, Option<String>)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| pid.chars().all(|c| c.is_ascii_digit()))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            if fields.next() == Some("Z") {
                return None;
            }
            let parent = fields.next().map(str::to_owned);
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Some((pid, String::from_utf8_lossy(&cmd).into_owned(), parent))
        })
        .collect()
}

/// Whether `cmd` is a keeper this process started (its command line names this host's pid).
fn is_our_keeper(cmd: &str, me: &str) -> bool {
    cmd.contains("__keeper") && cmd.contains(me)
}

/// Processes whose parent is this one or whose command line is a keeper's or the sim's.
fn agent_processes() -> usize {
    let me = std::process::id().to_string();
    processes()
        .iter()
        .filter(|(_, cmd, parent)| {
            parent.as_deref() == Some(me.as_str()) || is_our_keeper(cmd, &me)
        })
        .count()
}

/// This host's keepers: how many, and their proportional set size summed (MiB): what the
/// machine spends on keeping agents beside the host's own RSS (shared pages split between them).
fn keepers_pss() -> (usize, f64) {
    let me = std::process::id().to_string();
    let keepers: Vec<String> = processes()
        .into_iter()
        .filter(|(_, cmd, _)| is_our_keeper(cmd, &me))
        .map(|(pid, _, _)| pid)
        .collect();
    let kib: f64 = keepers
        .iter()
        .filter_map(|pid| {
            let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
            let pss = rollup.lines().find_map(|l| l.strip_prefix("Pss:"))?;
            pss.trim().trim_end_matches("kB").trim().parse::<f64>().ok()
        })
        .sum();
    (keepers.len(), kib / 1024.0)
}

pub(crate) async fn memory_bench(host: &Host, home: &Path, small: &Path) -> Res<()> {
    let idle_n = env_usize("HOST_BENCH_IDLE", 100);
    // Idle sessions' writers let their transcript go after this (HOST_BENCH_IDLE_RELEASE_MS;
    // `off`: they keep it, as before issue 15's item 4).
    let release = match std::env::var("HOST_BENCH_IDLE_RELEASE_MS").as_deref() {
        Ok("off") => None,
        Ok(ms) => Some(Duration::from_millis(ms.parse().unwrap_or(200))),
        Err(_) => Some(Duration::from_millis(200)),
    };
    host.set_idle_release(release).await;
    let streaming_n = env_usize("HOST_BENCH_STREAMING", 20);
    println!("\n== 5a. host RSS: {idle_n} idle + {streaming_n} streaming simulated sessions ==");
    let project = host
        .add_project(&small.to_string_lossy(), Some("repo-mem".into()), |s| s.pool_size = 0)
        .await?;
    let base = rss_mib();
    println!("  before: {}", Footprint::now().brief());
    let mut ids = Vec::new();
    for _ in 0..idle_n {
        let s = host.new_session(sim_session(&project.project_id, "say hi"), "bench").await?;
        ids.push(s.session_id);
    }
    for id in &ids {
        wait_turns(host, id, 1).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // With writers let go, wait until every idle session's is (the deadline passed for all).
    let deadline = Instant::now() + Duration::from_secs(20);
    while release.is_some()
        && host.retained().released_writers < idle_n
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let idle = rss_mib();
    println!("  {idle_n} idle: {}; {:?}", Footprint::now().brief(), host.retained());
    let (keepers, pss) = keepers_pss();
    println!(
        "  their keepers: {keepers} processes, {pss:.1} MiB PSS in all ({:.2} MiB each)",
        pss / keepers.max(1) as f64
    );
    let prompt = {
        let writes: Vec<String> =
            (0..40).map(|i| format!("write m{i}.txt containing streaming line {i}")).collect();
        format!("slow: {}", writes.join(" then "))
    };
    let mut streaming = Vec::new();
    for _ in 0..streaming_n {
        let s = host.new_session(sim_session(&project.project_id, &prompt), "bench").await?;
        streaming.push(s.session_id);
    }
    let sampler = tokio::spawn(async {
        let mut peak = 0f64;
        loop {
            peak = peak.max(rss_mib());
            tokio::time::sleep(Duration::from_millis(250)).await;
            if peak < 0.0 {
                return peak;
            }
        }
    });
    let t = Instant::now();
    for id in &streaming {
        wait_turns(host, id, 1).await?;
    }
    let streamed = t.elapsed();
    let peak = rss_mib().max({
        sampler.abort();
        rss_mib()
    });
    let released =
        release.map_or("kept".to_owned(), |r| format!("let go after {} ms", r.as_millis()));
    println!(
        "  host RSS {base:.0} MiB before, {idle:.0} MiB with {idle_n} idle (writers {released}; +{:.2} MiB each), peak {peak:.0} MiB while {streaming_n} streamed ({:.1} s); bound {RSS_BOUND_MIB:.0} MiB",
        (idle - base) / idle_n.max(1) as f64,
        streamed.as_secs_f64()
    );
    stop_all(host).await;
    if peak > RSS_BOUND_MIB {
        return Err(format!(
            "host RSS peaked at {peak:.0} MiB, over its bound of {RSS_BOUND_MIB:.0} MiB"
        )
        .into());
    }
    for id in ids.iter().chain(&streaming) {
        let _ = host.finish(id, FinishAction::Discard, "bench").await;
    }

    let churn = env_usize("HOST_BENCH_CHURN", 1000);
    println!(
        "\n== 5b. churn: {churn} short sessions created, finished and discarded, 4 at a time =="
    );
    let fds_before = open_fds();
    let tenth = (churn / 10).max(1);
    let mut samples = Vec::new();
    let t = Instant::now();
    let mut done = 0;
    while done < churn {
        let batch = (churn - done).min(4);
        let mut running = Vec::new();
        for _ in 0..batch {
            running.push(
                host.new_session(sim_session(&project.project_id, "say hi"), "bench")
                    .await?
                    .session_id,
            );
        }
        for id in &running {
            wait_turns(host, id, 1).await?;
            host.finish(id, FinishAction::Discard, "bench").await?;
        }
        let before = done;
        done += batch;
        if before / tenth != done / tenth {
            samples.push(rss_mib());
            let tasks = tokio::runtime::Handle::current().metrics().num_alive_tasks();
            println!(
                "    {done}: {}, {tasks} tasks, catalog {} KiB; {:?}",
                Footprint::now().brief(),
                catalog_kib(home),
                host.retained()
            );
        }
    }
    let elapsed = t.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let worktrees = git(small, &["worktree", "list", "--porcelain"])?
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count();
    let branches = git(small, &["for-each-ref", "--format=%(refname)", "refs/heads/nucleic/"])?
        .lines()
        .count();
    let processes = agent_processes();
    let fds_after = open_fds();
    let first = samples.first().copied().unwrap_or(0.0);
    let last = rss_mib();
    // Growth per session over the second half of the churn (after warm-up: the runtime's
    // threads, the allocator's arenas and SQLite's page cache filled in the first).
    let half = samples.get(samples.len() / 2 - 1).copied().unwrap_or(first);
    let per_session_kb = (last - half) * 1024.0 / (churn - churn / 2).max(1) as f64;
    let retained = host.retained();
    let trace: Vec<String> = samples.iter().map(|s| format!("{s:.0}")).collect();
    println!(
        "  {churn} sessions in {:.0} s ({:.0} ms each); host RSS by tenths (MiB): {}; end {last:.0} MiB ({:+.1} MiB from the first tenth)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / churn.max(1) as f64,
        trace.join(" "),
        last - first
    );
    // Over a few sessions one allocator step (a page, an arena's growth) is most of the figure.
    let judged = churn >= MIN_CHURN_JUDGED;
    let verdict = if judged {
        format!("bound {CHURN_KIB_PER_SESSION} KiB")
    } else {
        format!("not judged: under {MIN_CHURN_JUDGED} sessions")
    };
    println!(
        "  second half: {per_session_kb:+.2} KiB per session ({verdict}); host still holds {retained:?}"
    );
    println!(
        "  left behind: {} worktrees besides the main checkout, {branches} session branches, {processes} agent processes, {} file descriptors ({fds_before} → {fds_after})",
        worktrees.saturating_sub(1),
        fds_after.saturating_sub(fds_before)
    );
    if worktrees > 1
        || branches > 0
        || processes > 0
        || fds_after > fds_before + 8
        || retained.total() > 0
    {
        return Err(
            "the churn left worktrees, branches, processes, file descriptors or host entries behind"
                .into()
        );
    }
    if judged && per_session_kb > CHURN_KIB_PER_SESSION {
        return Err(format!(
            "host RSS grew {per_session_kb:.2} KiB per session over the second half of the churn (bound {CHURN_KIB_PER_SESSION} KiB)"
        )
        .into());
    }
    Ok(())
}
