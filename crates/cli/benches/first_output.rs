//! Time to first agent output: from `Host::new_session` (worktree, keeper, bubblewrap, the real
//! pinned `claude`, the first prompt) to the agent's `sessionStarted` and its first streamed
//! text, against the bare CLI started by hand with the same flags and prompt — rounds
//! interleaved in one process, both against Nucleic's mock Anthropic server, inside a
//! loopback-only network namespace (the bench re-runs itself under `unshare --net`).
//!
//! `cargo bench -p nucleic-cli --bench first_output` (FIRST_OUTPUT_ROUNDS, default 9).

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
    })
}

/// The host: `new_session` to `sessionStarted` and the first assistant text.
async fn hosted(host: &Host, project: &str) -> Res<Times> {
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
    Ok(Times { init: init.ok_or("no init")?, text: text.ok_or("no text")?, returned })
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let rounds: usize =
        std::env::var("FIRST_OUTPUT_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(9);
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root)?;
    git(&root, &["init", "-q", "-b", "main"])?;
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"])?;
    let mock = MockAnthropic::start(Script::text("hello there, from the mock")).await?;
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(HostConfig {
        home: dir.path().join("home"),
        agents: AgentPaths {
            claude: Some(real_claude()),
            codex: None,
            sim_program: PathBuf::from(env!("CARGO_BIN_EXE_nucleic")),
            sim_prefix: vec!["__sim-agent".into()],
        },
        limits: Limits { max_live_sessions: 100, max_worktrees: 100, min_free_bytes: 0 },
        approval_timeout: None,
        setup_timeout: Duration::from_secs(10),
        agent_env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: Some(KeeperSettings::new(PathBuf::from(env!("CARGO_BIN_EXE_nucleic")))),
        // As the daemon runs sessions (NUCLEIC_POLICY is on by default).
        policy: true,
    })
    .await?;
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
            "round {round}: bare init {:.0} ms, text {:.0} ms | host new_session returned {:.0} ms, sessionStarted {:.0} ms, text {:.0} ms",
            pair.0.init, pair.0.text, pair.1.returned, pair.1.init, pair.1.text
        );
        b.push(pair.0);
        h.push(pair.1);
    }
    let ratio = |f: fn(&Times) -> f64| median(b.iter().zip(&h).map(|(x, y)| f(y) / f(x)).collect());
    println!(
        "bare CLI: init {:.0} ms, first text {:.0} ms | host: sessionStarted {:.0} ms, first text {:.0} ms (medians of {rounds})",
        median(b.iter().map(|t| t.init).collect()),
        median(b.iter().map(|t| t.text).collect()),
        median(h.iter().map(|t| t.init).collect()),
        median(h.iter().map(|t| t.text).collect()),
    );
    let init_ratio = ratio(|t| t.init);
    println!(
        "ratio host ÷ bare: to init {init_ratio:.2} (target ≤ 1.1 → {}), to first text {:.2}",
        if init_ratio <= 1.1 { "PASS" } else { "FAIL" },
        ratio(|t| t.text)
    );
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
