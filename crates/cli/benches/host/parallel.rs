//! Fifty parallel sessions streaming to one WebSocket client: throughput, RSS, latency.

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

// ----- 2. parallel sessions -----------------------------------------------------------------

/// Probe sessions: the bench binary itself, started as the `claude` backend, writing one
/// timestamped line every `PROBE_INTERVAL` (see [`probe_agent`]).
pub(crate) const PROBES: usize = 5;

pub(crate) async fn parallel_sessions(daemon: &Daemon, home: &Path, root: &Path) -> Res<()> {
    let (host, addr, token) = (&daemon.host, daemon.addr, daemon.token.as_str());
    let n = env_usize("HOST_BENCH_SESSIONS", 50);
    println!("\n== 2. {n} parallel simulated sessions → one WebSocket client ==");
    let project =
        host.add_project(&root.to_string_lossy(), Some("repo-small".into()), |_| {}).await?;
    let rss_before = proc_status_kb("self", "VmRSS");
    let threads_before = proc_status_kb("self", "Threads");
    let mut targets = Vec::new();
    let mut starts = Vec::new();
    let t = Instant::now();
    for _ in 0..n {
        let s0 = Instant::now();
        let s = host.new_session(sim_session(&project.project_id, "say hi"), "bench").await?;
        starts.push(ms(s0.elapsed()));
        let path = transcript_path(home, &s.session_id);
        targets.push(Target { id: s.session_id, path, probe: false });
    }
    let created = t.elapsed();
    for target in &targets {
        wait_turns(host, &target.id, 1).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = proc_status_kb("self", "VmRSS");
    let (agents, agents_kb) = children_rss_kb();
    println!(
        "  created {n} sessions one after another in {:.1} s (each {} ms; 100-file repo)",
        created.as_secs_f64(),
        spread(&starts, 0)
    );
    println!(
        "  host RSS {:.0} MiB before, {:.0} MiB with {n} idle sessions (+{:.2} MiB each); threads {threads_before} → {}; {agents} agent processes, {:.0} MiB RSS in all ({:.1} MiB each)",
        rss_before as f64 / 1024.0,
        rss_idle as f64 / 1024.0,
        (rss_idle.saturating_sub(rss_before)) as f64 / 1024.0 / n as f64,
        proc_status_kb("self", "Threads"),
        agents_kb as f64 / 1024.0,
        agents_kb as f64 / 1024.0 / agents.max(1) as f64,
    );
    // Probes, and an in-process subscriber to each (no socket) for comparison.
    let watched: Arc<std::sync::Mutex<Vec<(Instant, f64)>>> = Arc::default();
    let mut watchers = Vec::new();
    for _ in 0..PROBES {
        let mut request = sim_session(&project.project_id, "probe");
        request.backend = Some(Backend::ClaudeCode);
        request.permission_mode = None;
        let s = host.new_session(request, "bench").await?;
        let mut events = host.subscribe(&s.session_id, 1).await?;
        let watched = watched.clone();
        watchers.push(tokio::spawn(async move {
            while let Ok(Some(event)) = events.next().await {
                if let Some(ns) = probe_ns(&event.kind) {
                    let latency = unix_ms_now() - ns as f64 / 1e6;
                    if let Ok(mut w) = watched.lock() {
                        w.push((Instant::now(), latency));
                    }
                }
            }
        }));
        let path = transcript_path(home, &s.session_id);
        targets.push(Target { id: s.session_id, path, probe: true });
    }

    // Paced: `slow` makes the agent sleep 200 ms between stream chunks, like a live model;
    // the sessions start 4 ms apart so their chunks are not all in phase.
    let paced_name = "paced (`slow`: 200 ms between chunks, starts staggered over 200 ms)";
    let paced = Workload {
        name: paced_name,
        turns: 1,
        stagger: Duration::from_millis(4),
        prompt: |_| {
            let writes: Vec<String> =
                (0..10).map(|i| format!("write p{i}.txt containing paced line {i}")).collect();
            format!("slow: {}", writes.join(" then "))
        },
    };
    let paced_token = token.to_owned();
    let targets_paced = targets.clone();
    let mut report =
        join(client_thread(move || stream_client(addr, paced_token, targets_paced, paced))).await?;
    in_window(&mut report, &watched);
    report.print(paced_name, n);
    // Flat out, twice in the same run: with turn snapshots (the host's default) and without,
    // counting the git processes the host starts and the boundaries it snapshots.
    let mut flat_rates = Vec::new();
    for snapshots in [true, false] {
        host.set_turn_snapshots(snapshots);
        let refs_before = snapshot_refs(root)?;
        let spawned = nucleic_git::git_processes();
        let token = token.to_owned();
        let targets = targets.clone();
        let workload = flat_out();
        let mut report =
            join(client_thread(move || stream_client(addr, token, targets, workload))).await?;
        // The last turns' end snapshots run after their TurnCompleted went out: wait for git
        // to go quiet before counting.
        let spawned = settled_git_processes().await - spawned;
        let boundaries = snapshot_refs(root)? - refs_before;
        in_window(&mut report, &watched);
        let label =
            if snapshots { "flat out, turn snapshots on" } else { "flat out, turn snapshots off" };
        report.print(&format!("{} ({label})", flat_out().name), n);
        let per = if boundaries == 0 { 0.0 } else { spawned as f64 / boundaries as f64 };
        println!(
            "     git processes started by the host: {spawned}, turn boundaries snapshotted: {boundaries} ({per:.2} git processes per boundary, counted)"
        );
        flat_rates.push(report.events as f64 / report.elapsed.as_secs_f64());
    }
    host.set_turn_snapshots(true);
    if let [on, off] = flat_rates[..] {
        println!(
            "  flat out with turn snapshots ÷ without (same run): {:.2} ({on:.0} / {off:.0} events/s)",
            on / off
        );
    }
    for w in watchers {
        w.abort();
    }
    Ok(())
}

/// Flat out: every agent answers as fast as it can, 6 turns of 60 tool calls each.
fn flat_out() -> Workload {
    Workload {
        name: "flat out (6 turns × 60 tool calls, all at once)",
        turns: 6,
        stagger: Duration::ZERO,
        prompt: |turn| {
            let writes: Vec<String> = (0..60)
                .map(|i| format!("write w{i}.txt containing turn {turn} line {i} of the answer"))
                .collect();
            writes.join(" then ")
        },
    }
}

/// Keeps the in-process probe latencies that fall inside the report's run.
fn in_window(report: &mut StreamReport, watched: &std::sync::Mutex<Vec<(Instant, f64)>>) {
    if let Ok(w) = watched.lock() {
        report.probe_in_process = w
            .iter()
            .filter(|(t, _)| *t >= report.t0 && *t <= report.t0 + report.elapsed)
            .map(|(_, l)| *l)
            .collect();
    }
}

/// How many turn snapshot refs the project's repository has (each boundary makes one).
fn snapshot_refs(root: &Path) -> Res<usize> {
    Ok(git(root, &["for-each-ref", "--format=x", "refs/nucleic/turns/"])?.lines().count())
}

/// The host's git process count once it has not moved for a second (at most 30 s).
async fn settled_git_processes() -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = nucleic_git::git_processes();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = nucleic_git::git_processes();
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// CPU time used so far: this process (host + client) and the whole machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cpu {
    pub(crate) at: Instant,
    pub(crate) process_ticks: u64,
    pub(crate) busy_ticks: u64,
}

impl Cpu {
    pub(crate) fn now() -> Cpu {
        let process_ticks = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                let rest = s.rsplit_once(')')?.1.to_owned();
                let f: Vec<u64> = rest
                    .split_whitespace()
                    .skip(11)
                    .take(2)
                    .filter_map(|v| v.parse().ok())
                    .collect();
                Some(f.iter().sum())
            })
            .unwrap_or(0);
        // /proc/stat "cpu" line: user nice system idle iowait irq softirq steal ...
        let busy_ticks = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| {
                let line = s.lines().next()?.to_owned();
                let f: Vec<u64> =
                    line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
                Some(f.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, v)| v).sum())
            })
            .unwrap_or(0);
        Cpu { at: Instant::now(), process_ticks, busy_ticks }
    }

    /// (this process's cores busy, the machine's cores busy) on average since `self`.
    pub(crate) fn since(self) -> (f64, f64) {
        let now = Cpu::now();
        let secs = (now.at - self.at).as_secs_f64() * 100.0; // USER_HZ = 100
        (
            (now.process_ticks - self.process_ticks) as f64 / secs,
            (now.busy_ticks - self.busy_ticks) as f64 / secs,
        )
    }
}

/// The clock a probe line carries.
pub(crate) fn probe_ns(kind: &EventKind) -> Option<u64> {
    let EventKind::Raw(raw) = kind else { return None };
    serde_json::from_str::<Value>(raw.native.as_str()).ok()?["tNs"].as_u64()
}

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    /// A probe session (always streaming; latency only).
    pub(crate) probe: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Workload {
    pub(crate) name: &'static str,
    pub(crate) turns: usize,
    /// Delay between the sessions' first prompts.
    pub(crate) stagger: Duration,
    /// The prompt of `turn` (0-based).
    pub(crate) prompt: fn(usize) -> String,
}

#[derive(Debug)]
pub(crate) struct StreamReport {
    pub(crate) t0: Instant,
    /// Cores busy on average during the run: this process, the whole machine.
    pub(crate) cpu: (f64, f64),
    /// Probe line written → an in-process subscriber in the host's runtime, ms.
    pub(crate) probe_in_process: Vec<f64>,
    pub(crate) events: u64,
    pub(crate) elapsed: Duration,
    /// Writer (`at`) → client, ms, for the simulated sessions' events.
    pub(crate) latency: Vec<f64>,
    /// Probe line written → the writer's `at` (rounded up to the next ms: an upper bound), ms.
    pub(crate) probe_to_writer: Vec<f64>,
    /// Probe line written → client, ms (µs resolution).
    pub(crate) probe_to_client: Vec<f64>,
    pub(crate) session_changes: u64,
    pub(crate) rss_peak_kb: u64,
    pub(crate) hwm_kb: u64,
    pub(crate) threads_peak: u64,
    pub(crate) verified_sessions: usize,
    pub(crate) verified_events: u64,
}

impl StreamReport {
    pub(crate) fn print(&self, name: &str, n: usize) {
        let secs = self.elapsed.as_secs_f64();
        let p = |v: &[f64], q| percentile(v, q);
        println!("  -- {name}");
        println!(
            "     {} events in {:.2} s = {:.0} events/s to the client ({:.0} per session per s); {} sessionChanged messages besides",
            self.events,
            secs,
            self.events as f64 / secs,
            self.events as f64 / secs / n as f64,
            self.session_changes
        );
        println!(
            "     writer (`at`, ms resolution) → client: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            p(&self.latency, 0.50),
            p(&self.latency, 0.99),
            p(&self.latency, 1.0),
        );
        println!(
            "     probe stdout line → writer (≤): p50 {:.1} ms, p99 {:.1} ms | → client: p50 {:.2} ms, p99 {:.1} ms, max {:.1} ms ({} lines from {PROBES} probes)",
            p(&self.probe_to_writer, 0.50),
            p(&self.probe_to_writer, 0.99),
            p(&self.probe_to_client, 0.50),
            p(&self.probe_to_client, 0.99),
            p(&self.probe_to_client, 1.0),
            self.probe_to_client.len()
        );
        println!(
            "     probe stdout line → in-process subscriber (no socket): p50 {:.2} ms, p99 {:.1} ms, max {:.1} ms",
            p(&self.probe_in_process, 0.50),
            p(&self.probe_in_process, 0.99),
            p(&self.probe_in_process, 1.0),
        );
        println!(
            "     CPU: host+client process {:.2} cores, whole machine {:.2} of 2 cores (agents included)",
            self.cpu.0, self.cpu.1
        );
        println!(
            "     host RSS peak {:.0} MiB (VmHWM {:.0} MiB), up to {} threads",
            self.rss_peak_kb as f64 / 1024.0,
            self.hwm_kb as f64 / 1024.0,
            self.threads_peak,
        );
        println!(
            "     no event lost: {} sessions, each seq 1..last gapless and last = the transcript's last seq ({} events in all)",
            self.verified_sessions, self.verified_events
        );
    }
}

#[derive(Debug, Default)]
pub(crate) struct Tracked {
    pub(crate) last: u64,
    pub(crate) turns: usize,
    pub(crate) probe: bool,
}

/// One client, subscribed to every session from seq 1: catches up, then sends each simulated
/// session its prompts (the next one when a turn completes) and checks every stream is gapless.
pub(crate) async fn stream_client(
    addr: SocketAddr,
    token: String,
    targets: Vec<Target>,
    workload: Workload,
) -> Res<StreamReport> {
    let mut client = connect(addr, &token).await?;
    let mut tracked: HashMap<String, Tracked> = HashMap::new();
    let mut expected: HashMap<String, u64> = HashMap::new();
    for (index, target) in targets.iter().enumerate() {
        expected.insert(target.id.clone(), transcript_last_seq(&target.path)?);
        tracked.insert(target.id.clone(), Tracked { probe: target.probe, ..Tracked::default() });
        let subscribe = ClientMessage::Subscribe {
            message_id: format!("sub-{index}"),
            session_id: target.id.clone(),
            from_seq: 1,
            verbosity: Verbosity::Full,
        };
        send(&mut client, &subscribe).await?;
    }
    let mut report = StreamReport {
        t0: Instant::now(),
        cpu: (0.0, 0.0),
        probe_in_process: Vec::new(),
        events: 0,
        elapsed: Duration::ZERO,
        latency: Vec::new(),
        probe_to_writer: Vec::new(),
        probe_to_client: Vec::new(),
        session_changes: 0,
        rss_peak_kb: 0,
        hwm_kb: 0,
        threads_peak: 0,
        verified_sessions: 0,
        verified_events: 0,
    };
    // Catch up to the idle state.
    while tracked.iter().any(|(id, t)| t.last < expected.get(id).copied().unwrap_or(0)) {
        let message = recv(&mut client, STALL).await?;
        check(&mut tracked, message)?;
    }

    let sims: Vec<&Target> = targets.iter().filter(|t| !t.probe).collect();
    let mut unstarted = sims.iter().map(|t| t.id.clone()).rev().collect::<Vec<_>>();
    let t0 = Instant::now();
    let cpu = Cpu::now();
    let mut last_event = t0;
    if workload.stagger.is_zero() {
        while let Some(id) = unstarted.pop() {
            send(&mut client, &send_input(&id, 0, (workload.prompt)(0))).await?;
        }
    }
    let mut starter = tokio::time::interval(workload.stagger.max(Duration::from_millis(1)));
    let mut sample = tokio::time::interval(Duration::from_millis(100));
    let mut done = 0;
    while done < sims.len() {
        let frame = tokio::select! {
            message = client.next() => message?,
            _ = starter.tick(), if !unstarted.is_empty() => {
                if let Some(id) = unstarted.pop() {
                    send(&mut client, &send_input(&id, 0, (workload.prompt)(0))).await?;
                }
                continue;
            }
            _ = sample.tick() => {
                report.rss_peak_kb = report.rss_peak_kb.max(proc_status_kb("self", "VmRSS"));
                report.threads_peak = report.threads_peak.max(proc_status_kb("self", "Threads"));
                continue;
            }
            () = tokio::time::sleep_until((last_event + STALL).into()) => {
                let mut stuck = Vec::new();
                for target in &sims {
                    let t = tracked.get(&target.id).ok_or("untracked session")?;
                    if t.turns < workload.turns {
                        stuck.push(format!(
                            "{}: {} turns, client at seq {}, transcript at {}",
                            target.id,
                            t.turns,
                            t.last,
                            transcript_last_seq(&target.path)?
                        ));
                    }
                }
                return Err(format!(
                    "no event for {} s; {} sessions unfinished:\n  {}",
                    STALL.as_secs(),
                    stuck.len(),
                    stuck.join("\n  ")
                )
                .into());
            }
        };
        let message = frame;
        if matches!(message, HostMessage::SessionChanged { .. }) {
            report.session_changes += 1;
        }
        let Some(event) = check(&mut tracked, message)? else { continue };
        let now = unix_ms_now();
        let at = event.at.unix_millis() as f64;
        let t = tracked.get_mut(&event.session_id).ok_or("untracked session")?;
        if t.probe {
            if let Some(ns) = probe_ns(&event.kind) {
                let written = ns as f64 / 1e6;
                report.probe_to_writer.push(at + 1.0 - written);
                report.probe_to_client.push(now - written);
            }
            continue;
        }
        report.events += 1;
        last_event = Instant::now();
        report.latency.push(now - at);
        if matches!(event.kind, EventKind::TurnCompleted(_)) {
            t.turns += 1;
            if t.turns < workload.turns {
                let message = send_input(&event.session_id, t.turns, (workload.prompt)(t.turns));
                send(&mut client, &message).await?;
            } else {
                done += 1;
            }
        }
    }
    report.cpu = cpu.since();
    report.elapsed = last_event - t0;
    report.t0 = t0;
    report.hwm_kb = proc_status_kb("self", "VmHWM");

    // Everything written must arrive: once the sessions are quiet, each one's last seq must be
    // its transcript's (probes keep streaming; they are only checked for gaps).
    let deadline = Instant::now() + STALL;
    loop {
        let mut behind = 0;
        for target in &sims {
            let last = transcript_last_seq(&target.path)?;
            let seen = tracked.get(&target.id).map_or(0, |t| t.last);
            if seen > last {
                let id = &target.id;
                return Err(
                    format!("session {id}: client saw seq {seen} > transcript {last}").into()
                );
            }
            if seen < last {
                behind += 1;
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{behind} sessions never delivered their last events").into());
        }
        let quiet = if behind == 0 { 300 } else { 100 };
        match recv_quiet(&mut client, Duration::from_millis(quiet)).await? {
            Some(message) => {
                if let Some(event) = check(&mut tracked, message)?
                    && behind == 0
                    && tracked.get(&event.session_id).is_some_and(|t| !t.probe)
                {
                    // A simulated session wrote more after looking finished: look again.
                    continue;
                }
            }
            None if behind == 0 => break,
            None => {}
        }
        if behind == 0 {
            // Only probe traffic arrives: check the transcripts once more, then stop.
            let settled = sims.iter().all(|target| {
                transcript_last_seq(&target.path).ok() == tracked.get(&target.id).map(|t| t.last)
            });
            if settled {
                break;
            }
        }
    }
    report.verified_sessions = sims.len();
    report.verified_events = sims.iter().filter_map(|t| tracked.get(&t.id)).map(|t| t.last).sum();
    client.close().await;
    Ok(report)
}

/// Checks an event's seq against its session's stream (gapless, no duplicate) and returns it.
pub(crate) fn check(
    tracked: &mut HashMap<String, Tracked>,
    message: HostMessage,
) -> Res<Option<nucleic_protocol::Event>> {
    match message {
        HostMessage::Event { event } => {
            let t = tracked
                .get_mut(&event.session_id)
                .ok_or_else(|| format!("event of an unsubscribed session {}", event.session_id))?;
            if event.seq != t.last + 1 {
                return Err(format!(
                    "session {}: expected seq {}, got {} (events lost or duplicated)",
                    event.session_id,
                    t.last + 1,
                    event.seq
                )
                .into());
            }
            t.last = event.seq;
            Ok(Some(event))
        }
        HostMessage::Error { code, message, .. } => {
            Err(format!("the host answered an error: {code:?}: {message}").into())
        }
        _ => Ok(None),
    }
}

pub(crate) fn send_input(id: &str, turn: usize, text: String) -> ClientMessage {
    ClientMessage::SendInput {
        message_id: format!("in-{id}-{turn}"),
        session_id: id.to_owned(),
        text,
    }
}

/// Set in the environment of every agent the bench's host starts; the bench binary, started
/// as `claude`, then acts as the probe agent.
pub(crate) const PROBE_ENV: &str = "NUCLEIC_HOST_BENCH_PROBE";

/// Lines per second a probe writes.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_millis(20);

/// The probe agent: from its first input line until stdin closes, writes
/// `{"type":"bench_probe","n":N,"tNs":<unix ns>}` every `PROBE_INTERVAL`, the clock read just
/// before the write. The host keeps such lines as `raw` events.
pub(crate) fn probe_agent() -> ExitCode {
    use std::io::{BufRead, Write};
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if line.is_err() || tx.send(()).is_err() {
                break;
            }
        }
    });
    if rx.recv().is_err() {
        return ExitCode::SUCCESS;
    }
    let mut out = std::io::stdout().lock();
    for n in 1u64.. {
        if let Err(std::sync::mpsc::TryRecvError::Disconnected) = rx.try_recv() {
            break;
        }
        let ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let line = format!("{{\"type\":\"bench_probe\",\"n\":{n},\"tNs\":{ns}}}\n");
        if out.write_all(line.as_bytes()).and_then(|()| out.flush()).is_err() {
            break;
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
    ExitCode::SUCCESS
}
