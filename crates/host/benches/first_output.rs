//! Time to first agent output: from `Host::new_session` (worktree, keeper, bubblewrap, the real
//! pinned `claude`, the first prompt) to the agent's `sessionStarted` and its first streamed
//! text, against the bare CLI started by hand with the same flags and prompt — rounds
//! interleaved in one process, both against Nucleic's mock Anthropic server, inside a
//! loopback-only network namespace (the bench re-runs itself under `unshare --net`).
//!
//! Rounds are pairs (one bare start, one hosted, in alternating order), so a load that comes
//! and goes hits both sides of a pair alike; the ratio is taken per pair and reported as the
//! median with its spread. The host takes its worktree from the warm pool (the product's
//! default), waiting before each hosted start until the pool is full again. The host's own
//! phases are printed per start (`NUCLEIC_TRACE_START`).
//!
//! `cargo bench -p nucleic-host --bench first_output` (FIRST_OUTPUT_ROUNDS, default 15;
//! FIRST_OUTPUT_FILES, files in the repository, default 2,000). Run it without `nice` and note
//! the load average it prints.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nucleic_agents::claude::ClaudeOptions;
use nucleic_host::{AgentPaths, Host, HostConfig, KeeperSettings, Limits};
use nucleic_protocol::{Backend, EventKind, NewSession};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const ISOLATED: &str = "NUCLEIC_BENCH_ISOLATED";
const PROMPT: &str = "say hello";

/// Milliseconds to the init line and to the first text delta (and, for the host, until
/// `new_session` returned: worktree, keeper, agent spawned, prompt sent, session indexed).
#[derive(Debug, Clone, Copy)]
struct Times {
    init: f64,
    text: f64,
    returned: f64,
    /// Whether the host's session got a pooled worktree (a full pool when it started).
    pooled: bool,
}

/// The bare CLI: spawned with the flags Nucleic uses, the prompt written at once.
fn bare(env: &[(String, String)], cwd: &Path) -> Res<Times> {
    let spec = ClaudeOptions::new(real_claude(), cwd.to_owned()).spawn_spec()?;
    let start = Instant::now();
    let mut child = Command::new(&spec.program)
        .args(&spec.args)
        .current_dir(cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let message = serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": PROMPT}]}});
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    writeln!(stdin, "{message}")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut init = None;
    let mut text = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        if init.is_none() && line.contains("\"subtype\":\"init\"") {
            init = Some(ms);
        }
        if text.is_none() && line.contains("\"text_delta\"") {
            text = Some(ms);
        }
        if init.is_some() && text.is_some() {
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Ok(Times {
        init: init.ok_or("no init line")?,
        text: text.ok_or("no text delta")?,
        returned: 0.0,
        pooled: false,
    })
}

/// The host: `new_session` to `sessionStarted` and the first assistant text.
async fn hosted(host: &Host, project: &str) -> Res<Times> {
    let pooled = pool_full(host, project).await?;
    let request = NewSession {
        project_id: project.to_owned(),
        base_ref: None,
        backend: Some(Backend::ClaudeCode),
        model: None,
        permission_mode: None,
        title: None,
        mode: None,
        prompt: PROMPT.into(),
    };
    // Timed by the writer's `at` (when the event was written), not by when this subscriber,
    // which starts after `new_session` returns, happens to read it.
    let start = now_millis();
    let summary = host.new_session(request, "bench").await?;
    let returned = (now_millis() - start) as f64;
    let mut events = host.subscribe(&summary.session_id, 1).await?;
    let (mut init, mut text) = (None, None);
    while init.is_none() || text.is_none() {
        let event = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .map_err(|_| "no output within 60 s")??
            .ok_or("the session ended")?;
        let ms = (event.at.unix_millis() - start) as f64;
        match &event.kind {
            EventKind::SessionStarted(_) if init.is_none() => init = Some(ms),
            EventKind::AssistantText(_) if text.is_none() => text = Some(ms),
            _ => {}
        }
    }
    host.stop(&summary.session_id).await?;
    Ok(Times { init: init.ok_or("no init")?, text: text.ok_or("no text")?, returned, pooled })
}

/// Waits (20 s at most) until the project's warm pool is full; whether it is.
async fn pool_full(host: &Host, project: &str) -> Res<bool> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pool = host.project_summary_of(project).await?.pool.ok_or("pools do not run")?;
        if pool.ready >= pool.size {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            eprintln!("the pool is not full after 20 s ({pool:?}): this start takes the slow path");
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn median(v: Vec<f64>) -> f64 {
    quantile(v, 0.5)
}

/// The `q` quantile (nearest rank) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let at = ((v.len() - 1) as f64 * q).round() as usize;
    v[at]
}

/// `median (quartiles a–b, range c–d)` of per-pair ratios.
fn spread(v: &[f64]) -> String {
    let q = |x| quantile(v.to_vec(), x);
    format!(
        "{:.2} (quartiles {:.2}–{:.2}, range {:.2}–{:.2})",
        q(0.5),
        q(0.25),
        q(0.75),
        q(0.0),
        q(1.0)
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|e| e.to_string(), |l| l.trim().to_owned())
}

fn git(dir: &Path, args: &[&str]) -> Res<()> {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .status()?
        .success();
    if ok { Ok(()) } else { Err(format!("git {args:?} failed").into()) }
}

async fn run() -> Res<()> {
    let number = |name: &str, default| {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let rounds: usize = number("FIRST_OUTPUT_ROUNDS", 15);
    let files: usize = number("FIRST_OUTPUT_FILES", 2000);
    println!("load average at the start: {}", loadavg());
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root)?;
    git(&root, &["init", "-q", "-b", "main"])?;
    for i in 0..files {
        let sub = root.join(format!("src/m{}", i % 50));
        std::fs::create_dir_all(&sub)?;
        std::fs::write(sub.join(format!("f{i}.rs")), format!("pub fn f{i}() -> u32 {{ {i} }}\n"))?;
    }
    git(&root, &["add", "-A"])?;
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"])?;
    let mock = MockAnthropic::start(Script::text("hello there, from the mock")).await?;
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(HostConfig {
        home: dir.path().join("home"),
        agents: AgentPaths {
            claude: Some(real_claude()),
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: PathBuf::from(env!("CARGO_BIN_EXE_nucleic-entry-points")),
            sim_prefix: vec!["__sim-agent".into()],
            nucleic: PathBuf::from(env!("CARGO_BIN_EXE_nucleic-entry-points")),
        },
        limits: Limits { max_live_sessions: 100, max_worktrees: 100, min_free_bytes: 0 },
        approval_timeout: None,
        setup_timeout: Duration::from_secs(10),
        agent_env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: Some(KeeperSettings::new(PathBuf::from(env!(
            "CARGO_BIN_EXE_nucleic-entry-points"
        )))),
        // As the daemon runs sessions (NUCLEIC_POLICY is on by default).
        policy: true,
    })
    .await?;
    // The warm pool, as `nucleic serve` runs it.
    host.start_pools();
    let project = host.add_project(root.to_str().ok_or("path")?, None, |_| {}).await?;
    // One of each first: the CLI's caches warm up.
    bare(&env, &root)?;
    hosted(&host, &project.project_id).await?;
    let (mut b, mut h) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let pair = if round % 2 == 0 {
            let x = bare(&env, &root)?;
            (x, hosted(&host, &project.project_id).await?)
        } else {
            let y = hosted(&host, &project.project_id).await?;
            (bare(&env, &root)?, y)
        };
        println!(
            "round {round}: bare init {:.0} ms, text {:.0} ms | host{} new_session returned {:.0} ms, sessionStarted {:.0} ms, text {:.0} ms | ratio {:.2}",
            pair.0.init,
            pair.0.text,
            if pair.1.pooled { " (pooled)" } else { " (slow path)" },
            pair.1.returned,
            pair.1.init,
            pair.1.text,
            pair.1.init / pair.0.init
        );
        b.push(pair.0);
        h.push(pair.1);
    }
    let ratios =
        |f: fn(&Times) -> f64| -> Vec<f64> { b.iter().zip(&h).map(|(x, y)| f(y) / f(x)).collect() };
    println!(
        "bare CLI: init {:.0} ms, first text {:.0} ms | host: sessionStarted {:.0} ms, first text {:.0} ms, new_session returned {:.0} ms (medians of {rounds}; {} of {rounds} pooled)",
        median(b.iter().map(|t| t.init).collect()),
        median(b.iter().map(|t| t.text).collect()),
        median(h.iter().map(|t| t.init).collect()),
        median(h.iter().map(|t| t.text).collect()),
        median(h.iter().map(|t| t.returned).collect()),
        h.iter().filter(|t| t.pooled).count(),
    );
    let to_init = ratios(|t| t.init);
    let init_ratio = median(to_init.clone());
    println!(
        "per-pair ratio host ÷ bare, to init: {} → target ≤ 1.1 {}",
        spread(&to_init),
        if init_ratio <= 1.1 { "PASS" } else { "FAIL" },
    );
    println!("per-pair ratio host ÷ bare, to first text: {}", spread(&ratios(|t| t.text)));
    println!("load average at the end: {}", loadavg());
    Ok(())
}

fn main() -> std::process::ExitCode {
    if std::env::var_os(ISOLATED).is_none() {
        // Nothing leaves the machine: run again inside a loopback-only network namespace.
        let Ok(exe) = std::env::current_exe() else { return std::process::ExitCode::FAILURE };
        let status = Command::new("unshare")
            .args(["--net", "--", "sh", "-c", r#"ip link set lo up && exec "$@""#, "sh"])
            .arg(exe)
            .args(std::env::args_os().skip(1))
            .env(ISOLATED, "1")
            .env(nucleic_host::TRACE_START_VARIABLE, "1")
            .status();
        return match status {
            Ok(s) if s.success() => std::process::ExitCode::SUCCESS,
            Ok(_) => std::process::ExitCode::FAILURE,
            Err(e) => {
                eprintln!("first_output bench: cannot run unshare (needs root, util-linux): {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("first_output bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("first_output bench FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
