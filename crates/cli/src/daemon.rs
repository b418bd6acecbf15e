//! Talking to the daemon from the CLI: find it (or start it), connect over the WebSocket, say
//! hello, and exchange requests and replies.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::{SinkExt, StreamExt};
use nucleic_protocol::{ClientMessage, HostMessage, PROTOCOL_VERSION};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::home_lock;
use crate::serve::DAEMON_FILE;

/// A byte stream to the daemon: TCP on loopback, or its Unix socket (`serve --no-tcp`).
trait Duplex: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug> Duplex
    for T
{
}

type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Duplex>>;

/// A connection to the daemon.
#[derive(Debug)]
pub struct Daemon {
    socket: Socket,
    /// The daemon's loopback port.
    port: u16,
    next_id: u64,
    /// Messages that arrived while a request waited for its reply (events, mostly).
    pending: std::collections::VecDeque<HostMessage>,
}

/// Longest wait for a daemon to accept a connection, and then to welcome it.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// The daemon's port (0 with `--no-tcp`) and its Unix socket, if it serves on one.
fn daemon_port(home: &Path) -> Option<(u16, Option<PathBuf>)> {
    let text = std::fs::read_to_string(home.join(DAEMON_FILE)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let socket = v.get("socket").and_then(|s| s.as_str()).map(PathBuf::from);
    Some((u16::try_from(v.get("port")?.as_u64()?).ok()?, socket))
}

async fn connect(home: &Path, port: u16, unix: Option<&Path>) -> anyhow::Result<Socket> {
    let token =
        std::fs::read_to_string(home.join(nucleic_server::TOKEN_FILE)).context("no token file")?;
    let mut request = format!("ws://127.0.0.1:{port}/ws").into_client_request()?;
    request.headers_mut().insert("authorization", format!("Bearer {}", token.trim()).parse()?);
    let open = async {
        let stream: Box<dyn Duplex> = match unix {
            Some(path) => Box::new(tokio::net::UnixStream::connect(path).await?),
            None => Box::new(tokio::net::TcpStream::connect(("127.0.0.1", port)).await?),
        };
        let (socket, _) = tokio_tungstenite::client_async(request, stream).await?;
        Ok::<_, anyhow::Error>(socket)
    };
    let at = unix.map_or_else(|| format!("on port {port}"), |p| format!("at {}", p.display()));
    tokio::time::timeout(CONNECT_WITHIN, open).await.map_err(|_| {
        anyhow::anyhow!("the daemon {at} did not answer within {} s", CONNECT_WITHIN.as_secs())
    })?
}

impl Daemon {
    /// Connects to the daemon of `home`, starting it (detached) if no host runs there.
    pub async fn connect(home: &Path) -> anyhow::Result<Daemon> {
        let (socket, port) = find_or_start(home).await?;
        let mut daemon =
            Daemon { socket, port, next_id: 0, pending: std::collections::VecDeque::new() };
        // Random per process: a reused pid must never be answered from another's remembered
        // replies (message ids restart at `m1` in every process).
        let client_id = format!("cli-{}", uuid::Uuid::new_v4());
        daemon
            .send(&ClientMessage::Hello {
                device: None,
                client_id,
                client_name: format!("terminal ({})", whoami()),
                protocol_version: PROTOCOL_VERSION,
                // One event per message suits a terminal; batches are for browsers.
                features: vec![],
            })
            .await?;
        let welcome = tokio::time::timeout(CONNECT_WITHIN, daemon.recv()).await.map_err(|_| {
            anyhow::anyhow!("the daemon did not welcome us within {} s", CONNECT_WITHIN.as_secs())
        })?;
        match welcome? {
            HostMessage::Welcome { .. } => Ok(daemon),
            other => bail!("the daemon refused the connection: {}", describe(&other)),
        }
    }

    /// The daemon's loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A fresh message id.
    pub fn id(&mut self) -> String {
        self.next_id += 1;
        format!("m{}", self.next_id)
    }

    pub async fn send(&mut self, message: &ClientMessage) -> anyhow::Result<()> {
        self.socket.send(Message::Text(serde_json::to_string(message)?.into())).await?;
        Ok(())
    }

    /// The next message that is not a session summary broadcast.
    pub async fn recv(&mut self) -> anyhow::Result<HostMessage> {
        if let Some(message) = self.pending.pop_front() {
            return Ok(message);
        }
        self.recv_socket().await
    }

    async fn recv_socket(&mut self) -> anyhow::Result<HostMessage> {
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Text(t))) => {
                    let message: HostMessage = serde_json::from_str(&t)?;
                    if !matches!(message, HostMessage::SessionChanged { .. }) {
                        return Ok(message);
                    }
                }
                Some(Ok(Message::Close(_))) | None => bail!("the daemon closed the connection"),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
            }
        }
    }

    /// Sends `message` and waits for its reply; an `error` reply becomes an `Err`.
    pub async fn request(&mut self, message: ClientMessage) -> anyhow::Result<HostMessage> {
        let id = message.message_id().map(str::to_owned);
        self.send(&message).await?;
        loop {
            let reply = self.recv_socket().await?;
            let reply_id = match &reply {
                HostMessage::Ack { message_id, .. }
                | HostMessage::Projects { message_id, .. }
                | HostMessage::Sessions { message_id, .. }
                | HostMessage::GitFacts { message_id, .. }
                | HostMessage::Files { message_id, .. }
                | HostMessage::Branches { message_id, .. }
                | HostMessage::Devices { message_id, .. }
                | HostMessage::Push { message_id, .. }
                | HostMessage::FileContent { message_id, .. } => Some(message_id.clone()),
                HostMessage::Error { message_id, .. }
                | HostMessage::Unsupported { message_id, .. } => message_id.clone(),
                HostMessage::Welcome { .. }
                | HostMessage::Event { .. }
                | HostMessage::Events { .. }
                | HostMessage::SessionChanged { .. } => None,
            };
            if reply_id.is_some() && reply_id == id {
                if let HostMessage::Error { .. } | HostMessage::Unsupported { .. } = reply {
                    bail!("{}", describe(&reply));
                }
                return Ok(reply);
            }
            self.pending.push_back(reply);
        }
    }
}

/// One line for a person.
pub fn describe(message: &HostMessage) -> String {
    match message {
        HostMessage::Error { code, message, resolved_by, .. } => {
            let code = serde_json::to_value(code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            match resolved_by {
                Some(by) => format!("{message} [{code}; answered by {by}]"),
                None => format!("{message} [{code}]"),
            }
        }
        HostMessage::Unsupported { message_type, .. } => {
            format!("the daemon does not support {message_type}")
        }
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn whoami() -> String {
    std::env::var("USER").unwrap_or_else(|_| "user".into())
}

/// How long a CLI waits for a daemon to answer: one it started, or a live host on the home that
/// is still starting (or stopping).
const START_WAIT: Duration = Duration::from_secs(15);

/// Connects to the daemon of `home`; starts one only when no live host holds the home's lock. A
/// host that holds it but does not answer (starting, or stopping: `daemon.json` missing or
/// stale) is waited for, up to [`START_WAIT`] — never joined by a second one. `daemon.json` is
/// never deleted here: only its host removes it.
async fn find_or_start(home: &Path) -> anyhow::Result<(Socket, u16)> {
    std::fs::create_dir_all(home)?;
    let log: PathBuf = home.join("daemon.log");
    let deadline = Instant::now() + START_WAIT;
    let mut started: Option<std::process::Child> = None;
    let mut ours_gone_since: Option<Instant> = None;
    loop {
        if let Some((port, unix)) = daemon_port(home)
            && let Ok(socket) = connect(home, port, unix.as_deref()).await
        {
            return Ok((socket, port));
        }
        let holder = home_lock::holder(home);
        if holder.is_none() {
            match &mut started {
                None => started = Some(spawn_daemon(home, &log)?),
                // Ours is gone and, for a moment now, no host holds the home: it failed. (A
                // host that won the lock from it names itself in the lock file right away.)
                Some(child) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        let since = *ours_gone_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= Duration::from_secs(1) {
                            bail!("the daemon did not start ({status}); see {}", log.display());
                        }
                    }
                }
            }
        } else {
            ours_gone_since = None;
        }
        if Instant::now() >= deadline {
            match holder {
                Some(pid) => bail!(
                    "a nucleic host (pid {pid}) holds {} but did not answer within {} s: it may be starting or stopping; try again, or stop it (kill {pid})",
                    home.display(),
                    START_WAIT.as_secs()
                ),
                None => bail!(
                    "the daemon did not answer within {} s; see {}",
                    START_WAIT.as_secs(),
                    log.display()
                ),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `nucleic serve` on `home`, detached, logging to `log`.
fn spawn_daemon(home: &Path, log: &Path) -> anyhow::Result<std::process::Child> {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(log)?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("serve")
        .arg("--home")
        .arg(home)
        .args(["--bind", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().context("cannot start the daemon")
}
