//! `nucleic serve`: the daemon. Locks `$NUCLEIC_HOME` (one host per home), opens the host there,
//! serves the sync protocol on loopback, advertises its port in `daemon.json` (0600) for CLI
//! clients, and on SIGINT/SIGTERM stops within [`STOP_BOUND`] (shared with `nucleic demo`). On
//! SIGHUP it hands over instead: it stops serving and exits, leaving the agents to their keepers
//! for the next `nucleic serve` (an upgrade without losing a turn).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use nucleic_host::{AgentIsolation, AgentPaths, Host, HostConfig, KeeperSettings, Limits};
use nucleic_server::AppState;

use crate::home_lock::{self, HomeLock};
use crate::locate::{find_claude, find_codex, find_gemini, find_opencode, find_qwen};
use crate::signals::{StopSignals, force_exit_after};

/// The file a running daemon writes its address into.
pub const DAEMON_FILE: &str = nucleic_protocol::DAEMON_FILE;

/// The daemon's Unix socket with `--no-tcp`.
pub const DAEMON_SOCKET: &str = "daemon.sock";

/// Where the daemon listens.
#[derive(Debug, Clone, Copy)]
pub enum Bind {
    Tcp(SocketAddr),
    /// No TCP port: `$NUCLEIC_HOME/daemon.sock` only.
    UnixOnly,
}

/// Host settings for `home`, with agents found the usual way.
pub fn host_config(home: &Path) -> anyhow::Result<HostConfig> {
    let program = std::env::current_exe().context("cannot find the nucleic executable")?;
    Ok(HostConfig {
        home: home.to_owned(),
        agents: AgentPaths {
            claude: find_claude(),
            codex: find_codex(),
            gemini: find_gemini(),
            opencode: find_opencode(),
            qwen: find_qwen(),
            sim_program: program.clone(),
            sim_prefix: vec![nucleic_agents::entry_points::SIM_AGENT_ENTRY.into()],
            nucleic: program.clone(),
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(600),
        agent_env: Vec::new(),
        agent_isolation: AgentIsolation::from_env().map_err(anyhow::Error::msg)?,
        keepers: KeeperSettings::from_env(program).map_err(anyhow::Error::msg)?,
        policy: HostConfig::policy_from_env().map_err(anyhow::Error::msg)?,
    })
}

/// How long a stop may take in all, from the first SIGINT/SIGTERM to the process's exit; past
/// it, agents are killed and the process exits at once.
pub const STOP_BOUND: Duration = Duration::from_secs(10);

/// Between SIGTERM and SIGKILL for an agent's process tree.
const AGENT_GRACE: Duration = Duration::from_secs(3);

/// Agents stopped and their ends recorded within this (grace, the readers' 2 s drain, margin).
const AGENTS_WITHIN: Duration = Duration::from_secs(7);

/// Open connections get this long to close once the daemon stopped listening.
const SERVER_WITHIN: Duration = Duration::from_secs(2);

/// `--relay` and its settings.
#[derive(Debug, Clone)]
pub struct RemoteArgs {
    pub relay: String,
    pub app_url: Option<String>,
    /// `--relay-ca`: a PEM file of extra CAs for a wss:// relay.
    pub relay_ca: Option<PathBuf>,
    /// `--allow-plain-relay`: ws:// to another machine.
    pub allow_plain_relay: bool,
    /// `--lan`: the direct listener's address.
    pub lan: Option<SocketAddr>,
    /// `--allow-host`: more `Host` names for it.
    pub allow_host: Vec<String>,
}

/// Runs the daemon until Ctrl-C or SIGTERM.
pub async fn serve(
    home: PathBuf,
    bind: Bind,
    remote: Option<RemoteArgs>,
) -> anyhow::Result<ExitCode> {
    if let Bind::Tcp(bind) = bind
        && !bind.ip().is_loopback()
    {
        eprintln!(
            "nucleic: warning: serving on {bind}, reachable beyond this machine (token still required)"
        );
    }
    let limits = crate::tuning::server_limits()?;
    let max_backoff = crate::tuning::relay_max_backoff()?;
    let mut signals = StopSignals::install().context("cannot catch SIGINT / SIGTERM")?;
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("cannot catch SIGHUP")?;
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    // Before anything else touches the home: a second host on it refuses here.
    let lock = HomeLock::acquire(&home, home_lock::UNNAMED_HOLDER_WAIT)?;
    let host = Host::open(host_config(&home)?).await?;
    // Warm worktree pools (`NUCLEIC_WARM_POOL=off` turns them off).
    if std::env::var("NUCLEIC_WARM_POOL").as_deref() != Ok("off") {
        host.start_pools();
    }
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
    let (listener, addr, socket) = match bind {
        Bind::Tcp(bind) => {
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .with_context(|| format!("cannot listen on {bind}"))?;
            let addr = listener.local_addr()?;
            (Listening::Tcp(listener), addr, None)
        }
        Bind::UnixOnly => {
            let path = home.join(DAEMON_SOCKET);
            // A socket file left by a dead daemon (the home lock says none runs now).
            let _ = std::fs::remove_file(&path);
            let listener = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on {}", path.display()))?;
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            (Listening::Unix(listener), SocketAddr::from(([127, 0, 0, 1], 0)), Some(path))
        }
    };
    let mut state = AppState::new(Arc::clone(&host), addr).with_limits(limits);
    let mut lan = None;
    if let Some(remote) = remote {
        let mut direct = Vec::new();
        if let Some(bind) = remote.lan {
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .with_context(|| format!("cannot listen on {bind} (--lan)"))?;
            let at = listener.local_addr()?;
            let mut hosts = remote.allow_host.clone();
            if !at.ip().is_unspecified() {
                hosts.push(at.to_string());
            }
            direct = hosts.iter().map(|h| format!("ws://{h}")).collect();
            println!("nucleic: devices can also connect directly on {at} (the Noise channel only)");
            lan = Some((listener, hosts));
        }
        let remote = nucleic_server::remote::Remote::new(nucleic_server::remote::RemoteConfig {
            relay: remote.relay,
            app: remote.app_url,
            home: home.clone(),
            max_backoff,
            lan: direct,
            relay_ca: remote.relay_ca,
            allow_plain_relay: remote.allow_plain_relay,
        })?;
        println!(
            "nucleic: remote access through {} as host {} (`nucleic pair` pairs a phone)",
            remote.status().relay,
            remote.host_id()
        );
        state = state.with_remote(remote);
    }
    let (relay_stop, relay_stopped) = tokio::sync::watch::channel(false);
    let relay = tokio::spawn(state.clone().run_relay(relay_stopped));
    let mut served = Served::start(listener, state.clone());
    if let Some((listener, hosts)) = lan {
        let mut stopping = state.closing_signal();
        tokio::spawn(nucleic_server::serve_lan(listener, state.clone(), hosts, async move {
            let _ = stopping.wait_for(|s| *s).await;
        }));
    }
    write_daemon_file(&home, addr, socket.as_deref())?;
    // The chat bridge `nucleic chat enable` asked for: a client of this daemon like any other.
    let (chat_stop, chat_stopped) = tokio::sync::watch::channel(false);
    let chat = tokio::spawn(crate::chat_service::supervise(home.clone(), chat_stopped));
    match &socket {
        Some(path) => println!(
            "nucleic: serving on {} only, no TCP port (token in {})",
            path.display(),
            home.join(nucleic_server::TOKEN_FILE).display()
        ),
        None => {
            println!(
                "nucleic: serving on http://{addr} (token in {})",
                home.join(nucleic_server::TOKEN_FILE).display()
            );
            match state.login_link() {
                Ok(url) => println!("nucleic: sign a browser in (once, within 10 minutes): {url}"),
                Err(e) => eprintln!("nucleic: cannot mint a sign-in link: {e}"),
            }
        }
    }
    let failed = tokio::select! {
        _ = hangup.recv() => {
            if !host.keeps_agents() {
                println!("nucleic: SIGHUP received: agents are not kept ({}=off): stopping", nucleic_host::KeeperSettings::VARIABLE);
                None
            } else {
            println!("nucleic: SIGHUP received: handing over (agents keep running under their keepers; the next `nucleic serve` re-adopts them)");
            stop_chat(&chat_stop, chat).await;
            let Served { mut server, stop } = served;
            let _ = stop.send(());
            stop_relay(&relay_stop, relay).await;
            if tokio::time::timeout(SERVER_WITHIN, &mut server).await.is_err() {
                server.abort();
            }
            remove_daemon_file_if_ours(&home);
            drop(state);
            drop(lock);
            return Ok(ExitCode::SUCCESS);
            }
        }
        signal = signals.next() => {
            println!(
                "nucleic: {} received: stopping (within {} s; a second signal stops at once)",
                signal.name(),
                STOP_BOUND.as_secs()
            );
            None
        }
        result = &mut served.server => Some(match result {
            Ok(Ok(())) => anyhow::anyhow!("the server stopped on its own"),
            Ok(Err(e)) => anyhow::Error::new(e).context("the server failed"),
            Err(e) => anyhow::anyhow!("the server task failed: {e}"),
        }),
    };
    force_stop_after(signals, &home, Arc::clone(&host));
    stop_chat(&chat_stop, chat).await;
    stop_relay(&relay_stop, relay).await;
    let complete = stop_daemon(&host, served, &home).await;
    drop(state);
    drop(lock);
    match failed {
        Some(e) => Err(e),
        None if complete => Ok(ExitCode::SUCCESS),
        None => Ok(ExitCode::FAILURE),
    }
}

/// Stops the daemon's chat bridge (its last report reaches the host first), waiting at most
/// 12 s (the bridge's own bound is 10).
async fn stop_chat(stop: &tokio::sync::watch::Sender<bool>, chat: tokio::task::JoinHandle<()>) {
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(12), chat).await;
}

/// Closes the relay connection (its devices are told the host stops), waiting at most 1 s.
async fn stop_relay(stop: &tokio::sync::watch::Sender<bool>, relay: tokio::task::JoinHandle<()>) {
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(1), relay).await;
}

/// The HTTP server of a daemon, running on its own task.
#[derive(Debug)]
pub(crate) struct Served {
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    stop: tokio::sync::oneshot::Sender<()>,
}

/// The listener of `serve`: TCP, or the Unix socket alone.
#[derive(Debug)]
pub(crate) enum Listening {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

impl Served {
    pub(crate) fn start(listener: impl Into<Listening>, state: AppState) -> Served {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let server = match listener.into() {
            Listening::Tcp(l) => tokio::spawn(nucleic_server::serve(l, state, shutdown)),
            Listening::Unix(l) => tokio::spawn(nucleic_server::serve(l, state, shutdown)),
        };
        Served { server, stop }
    }
}

/// From now on a second signal, or the stop outlasting [`STOP_BOUND`], SIGKILLs every process
/// this one started (agents' trees first of all) and exits at once.
pub(crate) fn force_stop_after(signals: StopSignals, home: &Path, host: Arc<Host>) {
    let home = home.to_owned();
    force_exit_after(signals, STOP_BOUND, move |why| {
        // Processes that outlived their agent first (no longer our descendants), then ours.
        let leftovers = host.kill_stopping_agents();
        let killed = nucleic_agents::process::kill_descendants(std::process::id()).len();
        eprintln!("nucleic: {why}: stopping now ({} process(es) killed)", leftovers + killed);
        // The listener closes with the process, a moment from now.
        remove_daemon_file_if_ours(&home);
    });
}

/// Stops a daemon within [`STOP_BOUND`]: the server stops listening at once and closes its
/// connections (abandoned after [`SERVER_WITHIN`]) while the host stops every agent
/// ([`Host::shutdown`]); `daemon.json` goes once nothing listens any more. True when everything
/// stopped in time.
pub(crate) async fn stop_daemon(host: &Host, served: Served, home: &Path) -> bool {
    let Served { mut server, stop } = served;
    let _ = stop.send(());
    let server_stopped = async {
        if tokio::time::timeout(SERVER_WITHIN, &mut server).await.is_ok() {
            return true;
        }
        // Open connections still closing: drop them (the listener is already closed).
        server.abort();
        tokio::time::timeout(Duration::from_millis(500), &mut server).await.is_ok()
    };
    let (report, server_stopped) =
        tokio::join!(host.shutdown(AGENT_GRACE, AGENTS_WITHIN), server_stopped);
    if server_stopped {
        remove_daemon_file_if_ours(home);
    }
    let writers = report.stopped.len() + report.closed.len();
    eprintln!(
        "nucleic: stopped {} agent(s) and closed {writers} session writer(s) in {:.1} s",
        report.stopped.len(),
        report.elapsed.as_secs_f32()
    );
    for late in &report.late {
        eprintln!(
            "nucleic: session {} did not stop in time (waiting for {})",
            late.session_id, late.waiting_for
        );
    }
    if report.starts_in_flight > 0 {
        eprintln!("nucleic: {} agent start(s) still under way", report.starts_in_flight);
    }
    report.is_complete() && server_stopped
}

/// Removes `daemon.json` if it still names this process.
pub(crate) fn remove_daemon_file_if_ours(home: &Path) {
    let path = home.join(DAEMON_FILE);
    let file = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let ours = file
        .as_ref()
        .and_then(|v| v.get("pid")?.as_u64())
        .is_some_and(|pid| pid == u64::from(std::process::id()));
    if ours {
        if file.as_ref().and_then(|v| v.get("socket")).is_some() {
            let _ = std::fs::remove_file(home.join(DAEMON_SOCKET));
        }
        let _ = std::fs::remove_file(path);
    }
}

impl From<tokio::net::TcpListener> for Listening {
    fn from(l: tokio::net::TcpListener) -> Listening {
        Listening::Tcp(l)
    }
}

pub(crate) fn write_daemon_file(
    home: &Path,
    addr: SocketAddr,
    socket: Option<&Path>,
) -> anyhow::Result<()> {
    let mut body = serde_json::json!({ "port": addr.port(), "pid": std::process::id() });
    if let Some(socket) = socket {
        body["socket"] = serde_json::Value::from(socket.display().to_string());
    }
    let body = body.to_string();
    nucleic_host::write_private_file(&home.join(DAEMON_FILE), body.as_bytes())?;
    Ok(())
}
