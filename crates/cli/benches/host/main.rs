//! Host benchmarks for issue 3, in one process; figures and caveats in `docs/benchmarks.md`.
//!
//! 1. **Session start vs `git worktree add`**: `Host::new_session` (simulated agent, no setup
//!    script, `bypassPermissions`, prompt "say hi"), timed until it returns, against a bare
//!    `git worktree add -b b_N <path> HEAD`, on a synthetic 20k-file repository on tmpfs. The two
//!    alternate (order flipping each round), every worktree at a fresh path, nothing deleted until
//!    the end.
//! 2. **50 parallel sessions** of the simulated agent streaming to one WebSocket client. The
//!    daemon (`Host` + `nucleic_server` on 127.0.0.1:0) runs in this process, the client on its
//!    own thread and runtime. A paced run (`slow`: 200 ms between chunks, like a live model) and a
//!    flat-out run report events/s delivered, host RSS, and latency from each event's `at`
//!    (stamped by the session writer) to the client. Five probe sessions (this binary started as
//!    the `claude` backend, see [`probe_agent`]) write timestamped lines throughout, which
//!    measures agent stdout → writer, → an in-process subscriber and → the client. Fails if any
//!    stream has a gap or a duplicate, or ends short of its transcript's last seq. The flat-out
//!    run goes twice, with turn snapshots on and off (`Host::set_turn_snapshots`), and counts
//!    the git processes the host started (`nucleic_git::git_processes`) per turn boundary it
//!    snapshotted (new refs under `refs/nucleic/turns/`).
//! 3. **Catch-up of 100k events from a cursor**: one session driven to ≥ 100k events, then read
//!    from seq 1 while it is live and idle (fails if that stalls), and after a daemon restart
//!    (replay) over the WebSocket from seq 1 and from the middle, in-process from seq 1, and as
//!    one `read_transcript` pass (the floor), interleaved.
//! 4. **The warm worktree pool** (`HOST_BENCH_PARTS=4`, not in the default run: it builds a
//!    100,000-file repository): pooled session start, the fallback path (a base given by its
//!    commit, which no pooled worktree is for) and a bare `git worktree add`, interleaved; then
//!    the pool following its base moved by one commit of one file, against a bare add
//!    (`pool.rs`; `HOST_BENCH_POOL_ROUNDS`, default 5).
//!
//! 5. **Memory** (`HOST_BENCH_PARTS=5`, not in the default run): host RSS with 100 idle and 20
//!    streaming sessions against a stated bound, and a churn soak of short sessions (created,
//!    finished, discarded) that must leave no worktree, branch, process or descriptor behind and
//!    keep RSS flat (`memory.rs`; `HOST_BENCH_IDLE`, `HOST_BENCH_STREAMING`, `HOST_BENCH_CHURN`;
//!    `HOST_BENCH_EXIT_LIVE=1` exits right after it with the host open, for a heap profiler).
//!
//! Run: `cargo bench -p nucleic-cli --bench host` (about 45 s). Knobs: `HOST_BENCH_ROUNDS`
//! (part 1, default 8), `HOST_BENCH_SESSIONS` (part 2, default 50), `HOST_BENCH_EVENTS` (part 3,
//! default 100000), `HOST_BENCH_DIR` (scratch, default `/dev/shm`), `HOST_BENCH_PARTS` (default
//! `123`).

use std::error::Error;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_server::AppState;

/// The Rust allocator, counted: live heap bytes next to RSS tell a Rust-side retention from
/// the allocator's own growth (fragmentation) or C allocations (SQLite) in part 5.
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Bytes the Rust allocator has handed out and not had back.
pub(crate) fn rust_heap_bytes() -> i64 {
    let s = ALLOCATOR.stats();
    // A `realloc` is counted in these two already (`bytes_reallocated` is its net change).
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

pub(crate) type BoxError = Box<dyn Error + Send + Sync>;
pub(crate) type Res<T> = Result<T, BoxError>;

mod catchup;
mod client;
mod footprint;
mod memory;
mod parallel;
mod pool;
mod start;
mod util;

#[allow(unused_imports)]
use catchup::*;
#[allow(unused_imports)]
use client::*;
#[allow(unused_imports)]
use footprint::*;
#[allow(unused_imports)]
use memory::*;
#[allow(unused_imports)]
use parallel::*;
#[allow(unused_imports)]
use pool::*;
#[allow(unused_imports)]
use start::*;
#[allow(unused_imports)]
use util::*;

pub(crate) const WORDS: &[&str] = &[
    "the", "file", "test", "build", "check", "function", "error", "module", "should", "write",
    "config", "update", "because", "returns", "value", "path", "crate", "session", "is", "to",
    "and", "not", "this", "output", "line", "handler", "fix", "cargo", "passes", "code",
];

/// How long the client waits for any message before calling the run broken.
pub(crate) const STALL: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    if std::env::var_os(PROBE_ENV).is_some() {
        return probe_agent();
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host bench FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Removes the scratch directory however the run ends.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn run() -> Res<()> {
    let base = PathBuf::from(std::env::var("HOST_BENCH_DIR").unwrap_or_else(|_| "/dev/shm".into()));
    let scratch = Scratch(base.join(format!("nucleic-host-bench-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0)?;
    println!(
        "host bench: {} cores, {}, scratch {}",
        std::thread::available_parallelism().map_or(0, usize::from),
        git(&scratch.0, &["--version"])?.trim(),
        scratch.0.display()
    );

    let parts = std::env::var("HOST_BENCH_PARTS").unwrap_or_else(|_| "123".into());
    let t = Instant::now();
    let big = build_repo(&scratch.0.join("repo-20k"), 20, 20, 50)?;
    println!("built the 20k-file repository in {:.1} s", t.elapsed().as_secs_f64());
    let small = build_repo(&scratch.0.join("repo-small"), 2, 5, 10)?;

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if parts.contains('4') {
        let t = Instant::now();
        let huge = build_repo(&scratch.0.join("repo-100k"), 50, 40, 50)?;
        println!("built the 100k-file repository in {:.1} s", t.elapsed().as_secs_f64());
        let outcome = runtime.block_on(async {
            let daemon = Daemon::start(&scratch.0.join("home-pool")).await?;
            let result = pool_bench(&daemon.host, &scratch.0, &huge).await;
            daemon.shutdown().await;
            result
        });
        if let Err(e) = outcome {
            drop(runtime);
            wait_for_children(Duration::from_secs(10));
            return Err(e);
        }
    }
    let outcome = runtime.block_on(async_main(&scratch.0, &big, &small));
    drop(runtime);
    wait_for_children(Duration::from_secs(10));
    outcome
}

pub(crate) async fn async_main(scratch: &Path, big: &Path, small: &Path) -> Res<()> {
    let home = scratch.join("home");
    let daemon = Daemon::start(&home).await?;
    let parts = std::env::var("HOST_BENCH_PARTS").unwrap_or_else(|_| "123".into());
    let result = async {
        if parts.contains('1') {
            session_start(&daemon.host, scratch, big).await?;
            stop_all(&daemon.host).await;
        }
        if parts.contains('2') {
            parallel_sessions(&daemon, &home, small).await?;
            stop_all(&daemon.host).await;
        }
        if parts.contains('5') {
            let measured = memory_bench(&daemon.host, &home, small).await;
            if std::env::var_os("HOST_BENCH_EXIT_LIVE").is_some() {
                // For a heap profiler: exit with the host still open, so what it holds after
                // the churn shows as "leaked" (`heaptrack`, docs/benchmarks.md).
                std::process::exit(i32::from(measured.is_err()));
            }
            measured?;
            stop_all(&daemon.host).await;
        }
        if parts.contains('3') {
            return Ok(Some(catch_up_live(&daemon, &home, small).await?));
        }
        Ok::<_, BoxError>(None)
    }
    .await;
    daemon.shutdown().await;
    let Some(live) = result? else { return Ok(()) };
    // The same transcript once its session is no longer live: a restarted daemon replays it.
    let daemon = Daemon::start(&home).await?;
    let replayed = catch_up_replay(&daemon, &live).await;
    daemon.shutdown().await;
    replayed?;
    match live.failure {
        Some(failure) => Err(failure.into()),
        None => Ok(()),
    }
}

/// The host and its server (`nucleic serve` without the daemon file), in this process.
#[derive(Debug)]
pub(crate) struct Daemon {
    pub(crate) host: Arc<Host>,
    pub(crate) addr: SocketAddr,
    pub(crate) token: String,
    pub(crate) stop: tokio::sync::oneshot::Sender<()>,
    pub(crate) server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Daemon {
    pub(crate) async fn start(home: &Path) -> Res<Daemon> {
        let host = Host::open(HostConfig {
            home: home.to_owned(),
            agents: AgentPaths {
                // `claude` is this bench binary acting as a latency probe (see `probe_agent`).
                claude: Some(std::env::current_exe()?),
                codex: None,
                gemini: None,
                opencode: None,
                qwen: None,
                sim_program: PathBuf::from(env!("CARGO_BIN_EXE_nucleic")),
                sim_prefix: vec!["__sim-agent".into()],
                nucleic: PathBuf::from(env!("CARGO_BIN_EXE_nucleic")),
            },
            // The defaults (20 live sessions, 50 worktrees) would refuse part 2.
            limits: Limits { max_live_sessions: 1000, max_worktrees: 1000, min_free_bytes: 0 },
            approval_timeout: None,
            setup_timeout: Duration::from_secs(60),
            agent_env: vec![(PROBE_ENV.into(), "1".into())],
            agent_isolation: nucleic_host::AgentIsolation::Auto,
            // As the daemon runs agents (HOST_BENCH_KEEPERS=off: as the host's children).
            keepers: match std::env::var("HOST_BENCH_KEEPERS").as_deref() {
                Ok("off") => None,
                _ => Some(nucleic_host::KeeperSettings::new(PathBuf::from(env!(
                    "CARGO_BIN_EXE_nucleic"
                )))),
            },
            policy: false,
        })
        .await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(nucleic_server::serve(
            listener,
            AppState::new(host.clone(), addr),
            async move {
                let _ = stopped.await;
            },
        ));
        let token = host.token().to_string();
        Ok(Daemon { host, addr, token, stop, server })
    }

    pub(crate) async fn shutdown(self) {
        stop_all(&self.host).await;
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.server).await;
    }
}

/// Stops every session's agent and waits (briefly) for the processes to go.
pub(crate) async fn stop_all(host: &Host) {
    for s in host.list_sessions(None, true).await.unwrap_or_default() {
        let _ = host.stop(&s.session_id).await;
    }
    let _ = tokio::task::spawn_blocking(|| wait_for_children(Duration::from_secs(10))).await;
}
