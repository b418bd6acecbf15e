//! A real Matrix homeserver for tests: Synapse from the venv `scripts/install-synapse.sh`
//! made, with a generated config (SQLite, 127.0.0.1 only on a free port, rate limits lifted),
//! started and waited for under a deadline, users registered by shared secret, logged in, and
//! a small blocking client-server API client for the test's own users.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thiserror::Error;

/// The pinned version (`scripts/install-synapse.sh`).
pub const VERSION: &str = "1.163.2";
/// How long Synapse may take to answer after it was started (about 12 s on a busy 2-core box).
pub const START_DEADLINE: Duration = Duration::from_secs(120);
/// How long one API call or one `register_new_matrix_user` may take.
const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// What went wrong with the homeserver.
#[derive(Debug, Error)]
pub enum SynapseError {
    #[error(
        "Synapse {VERSION} is not installed at {0}: run scripts/install-synapse.sh (scripts/test.sh does)"
    )]
    NotInstalled(PathBuf),
    #[error("synapse: {what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("synapse: {0}")]
    Failed(String),
    #[error("synapse: {what} timed out after {after:?}{detail}")]
    Timeout { what: String, after: Duration, detail: String },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SynapseError {
    let what = what.into();
    move |source| SynapseError::Io { what, source }
}

/// The venv of the pinned Synapse: `$NUCLEIC_SYNAPSE_CACHE` or `~/.cache/nucleic/synapse`.
pub fn venv() -> PathBuf {
    let cache = std::env::var_os("NUCLEIC_SYNAPSE_CACHE").map(PathBuf::from).unwrap_or_else(|| {
        let base = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
        base.join("nucleic").join("synapse")
    });
    cache.join(format!("synapse-{VERSION}"))
}

/// A logged-in user: its id and access token.
#[derive(Debug, Clone)]
pub struct Login {
    pub user_id: String,
    pub token: String,
}

/// A running Synapse, killed when dropped.
#[derive(Debug)]
pub struct Synapse {
    dir: PathBuf,
    venv: PathBuf,
    port: u16,
    child: Option<Child>,
    /// How long the last start took until `/versions` answered.
    pub started_in: Duration,
}

impl Synapse {
    /// Generates a config in `dir` and starts Synapse on a free loopback port.
    pub fn start(dir: &Path) -> Result<Synapse, SynapseError> {
        let venv = venv();
        if !venv.join("bin").join("register_new_matrix_user").exists() {
            return Err(SynapseError::NotInstalled(venv));
        }
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let port = free_port()?;
        let config = dir.join("homeserver.yaml");
        let mut generate = Command::new(venv.join("bin").join("python"));
        generate
            .args(["-m", "synapse.app.homeserver", "--server-name", "localhost", "--config-path"])
            .arg(&config)
            .arg("--data-directory")
            .arg(dir)
            .args(["--generate-config", "--report-stats=no"])
            .current_dir(dir);
        run_within(generate, CALL_DEADLINE, "generating the homeserver config", dir)?;
        let text = std::fs::read_to_string(&config).map_err(io("reading homeserver.yaml"))?;
        let text = localize(&text, port)?;
        std::fs::write(&config, text).map_err(io("writing homeserver.yaml"))?;
        let mut synapse =
            Synapse { dir: dir.to_path_buf(), venv, port, child: None, started_in: Duration::ZERO };
        synapse.launch()?;
        Ok(synapse)
    }

    fn launch(&mut self) -> Result<(), SynapseError> {
        let started = Instant::now();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("synapse.out"))
            .map_err(io("opening synapse.out"))?;
        let err = log.try_clone().map_err(io("opening synapse.out"))?;
        let child = Command::new(self.venv.join("bin").join("python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(self.dir.join("homeserver.yaml"))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(io("starting synapse"))?;
        self.child = Some(child);
        let deadline = started + START_DEADLINE;
        let mut last;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(SynapseError::Failed(format!(
                    "exited ({status}) before it answered; its output: {}",
                    self.tail()
                )));
            }
            match self.request("GET", "/_matrix/client/versions", None, None) {
                Ok((200, _)) => break,
                Ok((status, body)) => last = format!("HTTP {status}: {body}"),
                Err(e) => last = e.to_string(),
            }
            if Instant::now() >= deadline {
                return Err(SynapseError::Timeout {
                    what: format!(
                        "waiting for GET /_matrix/client/versions on 127.0.0.1:{}",
                        self.port
                    ),
                    after: START_DEADLINE,
                    detail: format!(" (last: {last}); its output: {}", self.tail()),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self.started_in = started.elapsed();
        Ok(())
    }

    /// The last lines Synapse wrote (for error messages).
    fn tail(&self) -> String {
        let mut text = std::fs::read_to_string(self.dir.join("synapse.out")).unwrap_or_default();
        text.push_str(
            &std::fs::read_to_string(self.dir.join("homeserver.log")).unwrap_or_default(),
        );
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills Synapse (SIGKILL: a crash, not a shutdown) and waits for it to be gone.
    pub fn kill(&mut self) -> Result<(), SynapseError> {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            child.wait().map_err(io("waiting for synapse to die"))?;
        }
        Ok(())
    }

    /// Kills and starts it again on the same port and database; how long it was gone.
    pub fn restart(&mut self) -> Result<Duration, SynapseError> {
        let started = Instant::now();
        self.kill()?;
        self.launch()?;
        Ok(started.elapsed())
    }

    /// Registers `user` with `password` through the shared secret (`register_new_matrix_user`).
    pub fn register(&self, user: &str, password: &str) -> Result<(), SynapseError> {
        let mut register = Command::new(self.venv.join("bin").join("register_new_matrix_user"));
        register
            .arg("-c")
            .arg(self.dir.join("homeserver.yaml"))
            .args(["-u", user, "-p", password, "--no-admin"])
            .arg(self.base_url());
        let out = run_within(register, CALL_DEADLINE, &format!("registering {user}"), &self.dir)?;
        if !out.contains("Success") {
            return Err(SynapseError::Failed(format!("registering {user}: {out}")));
        }
        Ok(())
    }

    /// Registers and logs in `user`.
    pub fn user(&self, user: &str, password: &str) -> Result<Login, SynapseError> {
        self.register(user, password)?;
        let body = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user},
            "password": password,
        });
        let (status, answer) =
            self.request("POST", "/_matrix/client/v3/login", None, Some(&body))?;
        match (status, answer["user_id"].as_str(), answer["access_token"].as_str()) {
            (200, Some(id), Some(token)) => {
                Ok(Login { user_id: id.to_owned(), token: token.to_owned() })
            }
            _ => Err(SynapseError::Failed(format!("login of {user}: HTTP {status}: {answer}"))),
        }
    }

    /// One client-server API call (HTTP/1.1, `Connection: close`) under a deadline; its status
    /// and JSON body (`null` when the body is not JSON).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<(u16, Value), SynapseError> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let (status, body) = self.raw(method, path, token, "application/json", body.as_bytes())?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    /// One call with a body of any type (a media upload) and the answer's bytes (a download).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), SynapseError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let what = || format!("{method} {path}");
        let mut stream = TcpStream::connect_timeout(&addr, CALL_DEADLINE).map_err(io(what()))?;
        stream.set_read_timeout(Some(CALL_DEADLINE)).map_err(io(what()))?;
        stream.set_write_timeout(Some(CALL_DEADLINE)).map_err(io(what()))?;
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{auth}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).map_err(io(what()))?;
        stream.write_all(body).map_err(io(what()))?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).map_err(io(what()))?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(raw.len());
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let body = raw.get(split + 4..).unwrap_or_default();
        let status =
            head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| {
                SynapseError::Failed(format!("{}: no HTTP status in {head:?}", what()))
            })?;
        let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_vec()
        };
        Ok((status, body))
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// The generated config made for a loopback-only test: only 127.0.0.1 on `port` (IPv6
/// loopback may be absent in a namespace), rate limits lifted, no key servers, no stats.
fn localize(config: &str, port: u16) -> Result<String, SynapseError> {
    // 1.163 writes the addresses as a block list; older ones as a flow list.
    let (bind, local) = [
        ("    - ::1\n    - 127.0.0.1\n", "    - 127.0.0.1\n"),
        ("bind_addresses: ['::1', '127.0.0.1']", "bind_addresses: ['127.0.0.1']"),
    ]
    .into_iter()
    .find(|(bind, _)| config.contains(bind))
    .ok_or_else(|| {
        SynapseError::Failed(
            "the generated config binds no '::1' and '127.0.0.1' (a new Synapse?)".into(),
        )
    })?;
    if !config.contains("port: 8008") {
        return Err(SynapseError::Failed("the generated config has no listener on 8008".into()));
    }
    let lifted = "{per_second: 10000, burst_count: 10000}";
    Ok(format!(
        "{}\n# Nucleic's tests: loopback only, no limits, nothing contacted.\n\
         trusted_key_servers: []\nsuppress_key_server_warning: true\nenable_metrics: false\n\
         rc_message: {lifted}\nrc_registration: {lifted}\nrc_joins: {{local: {lifted}, remote: {lifted}}}\n\
         rc_login: {{address: {lifted}, account: {lifted}, failed_attempts: {lifted}}}\n\
         rc_invites: {{per_room: {lifted}, per_user: {lifted}, per_issuer: {lifted}}}\n",
        config.replace(bind, local).replace("port: 8008", &format!("port: {port}"))
    ))
}

/// A chunked body's data.
fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&rest[..at]).trim().to_owned();
        let Ok(size) = usize::from_str_radix(&size, 16) else { break };
        let after = &rest[at + 2..];
        if size == 0 || after.len() < size {
            break;
        }
        out.extend_from_slice(&after[..size]);
        rest = after[size..].strip_prefix(b"\r\n").unwrap_or(&after[size..]);
    }
    out
}

fn free_port() -> Result<u16, SynapseError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io("finding a free port"))?;
    Ok(listener.local_addr().map_err(io("finding a free port"))?.port())
}

/// Runs `command` to its end within `deadline`; its stdout and stderr.
fn run_within(
    mut command: Command,
    deadline: Duration,
    what: &str,
    dir: &Path,
) -> Result<String, SynapseError> {
    let out_path = dir.join("command.out");
    let out = std::fs::File::create(&out_path).map_err(io(what))?;
    let err = out.try_clone().map_err(io(what))?;
    let mut child =
        command.stdin(Stdio::null()).stdout(out).stderr(err).spawn().map_err(io(what))?;
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io(what))? {
            break status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SynapseError::Timeout {
                what: what.to_owned(),
                after: deadline,
                detail: String::new(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        return Err(SynapseError::Failed(format!("{what}: {status}: {text}")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_listener_is_moved_to_loopback_and_a_changed_config_is_said() {
        let config =
            "listeners:\n  - bind_addresses:\n    - ::1\n    - 127.0.0.1\n    port: 8008\n";
        let out = localize(config, 4242).unwrap();
        assert!(out.contains("port: 4242") && out.contains("bind_addresses:\n    - 127.0.0.1\n"));
        assert!(!out.contains("::1"));
        let old = "listeners:\n  - port: 8008\n    bind_addresses: ['::1', '127.0.0.1']\n";
        assert!(localize(old, 1).unwrap().contains("bind_addresses: ['127.0.0.1']"));
        assert!(localize("listeners: []", 1).is_err());
        assert_eq!(dechunk(b"4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n"), b"abcdef");
    }
}
