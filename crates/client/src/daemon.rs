//! The local daemon of a `$NUCLEIC_HOME`: found through `daemon.json` and `token`, and started
//! (by a [`DaemonStarter`] the binary supplies) only when no live host holds the home.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_protocol::{DAEMON_FILE, TOKEN_FILE};

use crate::error::{ClientError, seconds};
use crate::transport::{Endpoint, Socket};

/// How to start a daemon, and who holds a home: the binary's business (it knows its own
/// executable and the host's lock), not the protocol's.
pub trait DaemonStarter: Send + Sync + std::fmt::Debug {
    /// The pid of the live host holding `home`'s lock, if one does (it may be starting or
    /// stopping, and then has no `daemon.json` that answers yet).
    fn holder(&self, home: &Path) -> Option<u32>;
    /// Starts a daemon on `home`, detached, its output going to `log`.
    fn start(&self, home: &Path, log: &Path) -> std::io::Result<std::process::Child>;
}

/// What `daemon.json` says about the running daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonInfo {
    /// Its loopback port (0 with `--no-tcp`).
    pub port: u16,
    pub pid: Option<u32>,
    /// Its Unix socket, if it serves on one.
    pub socket: Option<PathBuf>,
}

impl DaemonInfo {
    /// Where to connect: the Unix socket when there is one, else the port.
    pub fn endpoint(&self) -> Endpoint {
        match &self.socket {
            Some(path) => Endpoint::Unix { path: path.clone(), port: self.port },
            None => Endpoint::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], self.port))),
        }
    }
}

/// `daemon.json` of `home`, if it exists and reads.
pub fn read_daemon_file(home: &Path) -> Option<DaemonInfo> {
    let text = std::fs::read_to_string(home.join(DAEMON_FILE)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let socket = v.get("socket").and_then(|s| s.as_str()).map(PathBuf::from);
    let pid = v.get("pid").and_then(serde_json::Value::as_u64).and_then(|p| u32::try_from(p).ok());
    Some(DaemonInfo { port: u16::try_from(v.get("port")?.as_u64()?).ok()?, pid, socket })
}

/// The bearer token of `home`'s host.
pub fn read_token(home: &Path) -> Result<String, ClientError> {
    let path = home.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(token) => Ok(token.trim().to_owned()),
        Err(source) => Err(ClientError::Io { path, source }),
    }
}

/// The daemon of one home.
#[derive(Clone)]
pub struct LocalDaemon {
    home: PathBuf,
    starter: Option<Arc<dyn DaemonStarter>>,
    /// A credential other than the home's token (an MCP grant's), sent instead of it.
    credential: Option<Arc<str>>,
}

impl std::fmt::Debug for LocalDaemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credential.
        f.debug_struct("LocalDaemon")
            .field("home", &self.home)
            .field("starter", &self.starter)
            .field("credential", &self.credential.as_ref().map(|_| "…"))
            .finish()
    }
}

/// How often `daemon.json` is looked at again while a daemon starts.
const POLL: Duration = Duration::from_millis(50);
/// A daemon we started that is gone, with nobody holding the home, for this long has failed.
const GONE_FOR: Duration = Duration::from_secs(1);

impl LocalDaemon {
    /// The daemon of `home`, only found, never started.
    pub fn new(home: impl Into<PathBuf>) -> LocalDaemon {
        LocalDaemon { home: home.into(), starter: None, credential: None }
    }

    /// Authenticates with `credential` (an MCP grant's) instead of the home's token, which is
    /// then never read.
    pub fn with_credential(mut self, credential: &str) -> LocalDaemon {
        self.credential = Some(credential.trim().into());
        self
    }

    /// Starts a daemon with `starter` when no live host holds the home.
    pub fn with_starter(mut self, starter: Arc<dyn DaemonStarter>) -> LocalDaemon {
        self.starter = Some(starter);
        self
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Connects to the daemon, waiting until `deadline` for one to answer. With `start` (and
    /// a starter), a daemon is started when no live host holds the home; a host that holds it
    /// but does not answer (starting, or stopping: `daemon.json` missing or stale) is waited
    /// for, never joined by a second one. `daemon.json` is never deleted here: only its host
    /// removes it. Returns the socket and the daemon's port.
    pub(crate) async fn open(
        &self,
        start: bool,
        deadline: Instant,
        connect_within: Duration,
    ) -> Result<(Socket, u16), ClientError> {
        let home = &self.home;
        let io = |source| ClientError::Io { path: home.clone(), source };
        std::fs::create_dir_all(home).map_err(io)?;
        let log = home.join("daemon.log");
        let waited = deadline.saturating_duration_since(Instant::now());
        let mut started: Option<std::process::Child> = None;
        let mut ours_gone_since: Option<Instant> = None;
        let mut last: Option<ClientError> = None;
        loop {
            if let Some(info) = read_daemon_file(home) {
                match self.connect(&info, connect_within).await {
                    Ok(socket) => return Ok((socket, info.port)),
                    // A refused credential is final: waiting changes nothing.
                    Err(e @ ClientError::Refused(_)) => return Err(e),
                    Err(e) => last = Some(e),
                }
            }
            let starter = self.starter.as_ref().filter(|_| start);
            let holder = self.starter.as_ref().and_then(|s| s.holder(home));
            if let (Some(starter), None) = (starter, holder) {
                match &mut started {
                    None => {
                        let child = starter.start(home, &log).map_err(|e| {
                            ClientError::Daemon(format!("cannot start the daemon: {e}"))
                        })?;
                        started = Some(child);
                    }
                    // Ours is gone and, for a moment now, no host holds the home: it failed.
                    // (A host that won the lock from it names itself in the lock file at once.)
                    Some(child) => {
                        if let Ok(Some(status)) = child.try_wait() {
                            let since = *ours_gone_since.get_or_insert_with(Instant::now);
                            if since.elapsed() >= GONE_FOR {
                                return Err(ClientError::Daemon(format!(
                                    "the daemon did not start ({status}); see {}",
                                    log.display()
                                )));
                            }
                        }
                    }
                }
            } else {
                ours_gone_since = None;
            }
            if Instant::now() >= deadline {
                return Err(self.gave_up(holder, waited, &log, last));
            }
            tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
        }
    }

    async fn connect(&self, info: &DaemonInfo, within: Duration) -> Result<Socket, ClientError> {
        let token = match &self.credential {
            Some(credential) => credential.to_string(),
            None => read_token(&self.home)?,
        };
        Socket::open(&info.endpoint(), &token, within).await
    }

    fn gave_up(
        &self,
        holder: Option<u32>,
        waited: Duration,
        log: &Path,
        last: Option<ClientError>,
    ) -> ClientError {
        let home = self.home.display();
        let waited = seconds(waited);
        let last = last.map(|e| format!(" (last: {e})")).unwrap_or_default();
        ClientError::Daemon(match holder {
            Some(pid) => format!(
                "a nucleic host (pid {pid}) holds {home} but did not answer within {waited}: it may be starting or stopping; try again, or stop it (kill {pid})"
            ),
            None if self.starter.is_some() => {
                format!("the daemon did not answer within {waited}; see {}{last}", log.display())
            }
            None => format!("no daemon of {home} answered within {waited}{last}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_json_gives_the_port_or_the_unix_socket() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(read_daemon_file(home.path()), None);
        std::fs::write(home.path().join(DAEMON_FILE), r#"{"port": 4242, "pid": 7}"#).unwrap();
        let info = read_daemon_file(home.path()).unwrap();
        assert_eq!(info.endpoint(), Endpoint::Tcp("127.0.0.1:4242".parse().unwrap()));
        assert_eq!(info.pid, Some(7));
        std::fs::write(home.path().join(DAEMON_FILE), r#"{"port": 0, "socket": "/s/d.sock"}"#)
            .unwrap();
        let info = read_daemon_file(home.path()).unwrap();
        assert_eq!(info.endpoint(), Endpoint::Unix { path: "/s/d.sock".into(), port: 0 });
        std::fs::write(home.path().join(DAEMON_FILE), "{not json").unwrap();
        assert_eq!(read_daemon_file(home.path()), None);
    }

    #[tokio::test]
    async fn with_no_daemon_and_no_starter_the_wait_ends_saying_so() {
        let home = tempfile::tempdir().unwrap();
        let daemon = LocalDaemon::new(home.path());
        let deadline = Instant::now() + Duration::from_millis(200);
        let started = Instant::now();
        let e = daemon.open(true, deadline, Duration::from_millis(100)).await.unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(e.to_string().contains("no daemon of"), "{e}");
        assert!(e.to_string().contains("within 0.2 s"), "{e}");
    }
}
