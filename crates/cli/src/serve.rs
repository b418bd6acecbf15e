//! `nucleic serve`: the daemon. Opens the host under `$NUCLEIC_HOME`, serves the sync protocol on
//! loopback, and advertises its port in `daemon.json` (0600) for CLI clients.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_server::AppState;

use crate::locate::{find_claude, find_codex};
use crate::signals::StopSignals;

/// The file a running daemon writes its address into.
pub const DAEMON_FILE: &str = "daemon.json";

/// Host settings for `home`, with agents found the usual way.
pub fn host_config(home: &Path) -> anyhow::Result<HostConfig> {
    Ok(HostConfig {
        home: home.to_owned(),
        agents: AgentPaths {
            claude: find_claude(),
            codex: find_codex(),
            sim_program: std::env::current_exe().context("cannot find the nucleic executable")?,
            sim_prefix: vec!["__sim-agent".into()],
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(600),
        agent_env: Vec::new(),
    })
}

/// Runs the daemon until Ctrl-C or SIGTERM.
pub async fn serve(home: PathBuf, bind: SocketAddr) -> anyhow::Result<ExitCode> {
    if !bind.ip().is_loopback() {
        eprintln!(
            "nucleic: warning: serving on {bind}, reachable beyond this machine (token still required)"
        );
    }
    let signals = StopSignals::install().context("cannot catch SIGINT / SIGTERM")?;
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let host = Host::open(host_config(&home)?).await?;
    let recovery = host.recovery();
    if !recovery.is_clean() {
        println!(
            "nucleic: recovered: {} session(s) interrupted, {} orphan agent(s) stopped, {} torn transcript tail(s) cut, {} row(s) caught up, {} session(s) missing their worktree{}",
            recovery.interrupted.len(),
            recovery.orphans_stopped.len(),
            recovery.torn_tails,
            recovery.rows_caught_up,
            recovery.missing_worktrees.len(),
            recovery
                .catalog_rebuilt_from
                .as_ref()
                .map(|p| format!("; catalog rebuilt (damaged one kept at {})", p.display()))
                .unwrap_or_default()
        );
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}"))?;
    let addr = listener.local_addr()?;
    write_daemon_file(&home, addr)?;
    println!(
        "nucleic: serving on http://{addr} (token in {})",
        home.join(nucleic_server::TOKEN_FILE).display()
    );
    let state = AppState::new(host, addr);
    match state.login_link() {
        Ok(url) => println!("nucleic: sign a browser in (once, within 10 minutes): {url}"),
        Err(e) => eprintln!("nucleic: cannot mint a sign-in link: {e}"),
    }
    let result = nucleic_server::serve(listener, state, signals.wait()).await;
    let _ = std::fs::remove_file(home.join(DAEMON_FILE));
    result.context("the server failed")?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write_daemon_file(home: &Path, addr: SocketAddr) -> anyhow::Result<()> {
    let path = home.join(DAEMON_FILE);
    let tmp = home.join(format!("{DAEMON_FILE}.tmp"));
    let body = serde_json::json!({ "port": addr.port(), "pid": std::process::id() }).to_string();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(body.as_bytes())?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}
