//! What the tests share: a counting upstream HTTP server, and a proxy served behind a bridge.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use nucleic_egress::{
    AgentProcess, AllowList, EgressEvent, EgressRules, ProxyConfig, Resolver, bind_loopback,
    bridge, serve_with,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// An HTTP server that answers every request `hello` (or streams `body_bytes` of `x`), and
/// counts the connections it accepted and keeps the request heads it read.
pub struct Upstream {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub fn start(ip: &str, body_bytes: usize) -> Upstream {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (accepted.clone(), heads.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(mut s) = stream else { continue };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                        head.push(b[0]);
                    }
                    seen.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
                    if body_bytes == 0 {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
                        return;
                    }
                    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\n\r\n");
                    let chunk = vec![b'x'; 64 * 1024];
                    let mut left = body_bytes;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if s.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n;
                    }
                });
            }
        });
        Upstream { port, accepted, heads }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The request heads it read, in order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// A proxy on a Unix socket, with a bridge in front of it.
pub struct Proxy {
    pub socket: PathBuf,
    /// The bridge's proxy port in front of it (as the agent's `HTTPS_PROXY`).
    pub port: u16,
    events: UnboundedReceiver<EgressEvent>,
    _dir: tempfile::TempDir,
    _task: tokio::task::JoinHandle<()>,
}

/// Short deadlines, so that a test of one fails on its own long before the harness's.
pub fn test_config(resolver: Resolver) -> ProxyConfig {
    ProxyConfig {
        head_deadline: Duration::from_millis(500),
        connect_deadline: Duration::from_secs(2),
        resolver,
        ..ProxyConfig::default()
    }
}

impl Proxy {
    pub fn start(allowed: &[String], resolver: Resolver) -> Proxy {
        let rules = Arc::new(AllowList::parse(allowed).unwrap());
        Proxy::start_with(rules, test_config(resolver))
    }

    pub fn start_with(rules: Arc<dyn EgressRules>, config: ProxyConfig) -> Proxy {
        Proxy::start_for(rules, config, None)
    }

    /// A proxy whose bridge takes process `agent` for the agent program (`None`: no agent
    /// started yet, so every connection counts as a command's).
    pub fn start_for(
        rules: Arc<dyn EgressRules>,
        config: ProxyConfig,
        agent: Option<u32>,
    ) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(serve_with(listener, rules, tx, config));
        let (port, _) = start_bridge_for(&socket, &[], agent);
        Proxy { socket, port, events, _dir: dir, _task: task }
    }

    /// Sends `request` raw to the bridge's proxy port and reads the whole answer (the proxy
    /// closes after one).
    pub async fn ask(&self, request: &[u8]) -> String {
        let (port, request) = (self.port, request.to_vec());
        tokio::task::spawn_blocking(move || fetch_through(port, &request)).await.unwrap()
    }

    pub async fn next_event(&mut self) -> EgressEvent {
        tokio::time::timeout(Duration::from_secs(5), self.events.recv())
            .await
            .expect("no proxy event within 5 s")
            .unwrap()
    }

    /// Asserts that no event is pending.
    pub fn no_event(&mut self) {
        let pending = self.events.try_recv();
        assert!(pending.is_err(), "an unexpected event: {pending:?}");
    }
}

pub fn refused(event: &EgressEvent) -> bool {
    matches!(event, EgressEvent::Refused { .. })
}

/// Connects to `127.0.0.1:port` as an agent inside the sandbox would, sends `request`, and
/// returns all it read (within 5 s).
pub fn fetch_through(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Starts a bridge to `socket` with its proxy port and one forward per target: their ports.
pub fn start_bridge(socket: &Path, forwards: &[String]) -> (u16, Vec<u16>) {
    start_bridge_for(socket, forwards, None)
}

/// [`start_bridge`], with process `agent` for the agent program.
pub fn start_bridge_for(socket: &Path, forwards: &[String], agent: Option<u32>) -> (u16, Vec<u16>) {
    let pid = Arc::new(OnceLock::new());
    if let Some(agent) = agent {
        pid.set(AgentProcess { pid: agent, name: "agent".into() }).unwrap();
    }
    let proxy = bind_loopback(0).unwrap();
    let proxy_port = proxy.local_addr().unwrap().port();
    let mut listeners = Vec::new();
    let mut ports = Vec::new();
    for target in forwards {
        let l = bind_loopback(0).unwrap();
        ports.push(l.local_addr().unwrap().port());
        listeners.push((l, target.clone()));
    }
    let socket = socket.to_owned();
    std::thread::spawn(move || bridge(&socket, proxy, listeners, pid));
    (proxy_port, ports)
}
