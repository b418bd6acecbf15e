//! Helpers: a server on a loopback port over a fresh host, raw HTTP, a `nucleic-client`
//! connection (what every front end uses) for tests of what the host answers, and a raw
//! WebSocket for tests of the wire itself (malformed, oversized and unauthenticated messages,
//! device hellos, close codes, the documented JSON) that a client library never sends.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_server::{AppState, ServerLimits};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub struct Server {
    pub dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub token: String,
    pub repo: std::path::PathBuf,
    pub host: Arc<Host>,
    pub state: AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

pub fn git_repo(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ] {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(&root)
                .status()
                .unwrap()
                .success()
        );
    }
    root
}

pub async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let repo = git_repo(dir.path());
    serve_in(dir, repo, None, ServerLimits::default()).await
}

/// A server whose login links work for `ttl`.
pub async fn start_with_login_ttl(ttl: Duration) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let repo = git_repo(dir.path());
    serve_in(dir, repo, Some(ttl), ServerLimits::default()).await
}

/// A server with these bounds (short timeouts, a small cap).
pub async fn start_with_limits(limits: ServerLimits) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let repo = git_repo(dir.path());
    serve_in(dir, repo, None, limits).await
}

/// A host over `dir/home` and a server for it on a fresh port.
async fn serve_in(
    dir: tempfile::TempDir,
    repo: std::path::PathBuf,
    login_ttl: Option<Duration>,
    limits: ServerLimits,
) -> Server {
    let home = dir.path().join("home");
    let host = Host::open(HostConfig {
        home: home.clone(),
        agents: AgentPaths {
            claude: None,
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: "/nonexistent".into(),
            sim_prefix: Vec::new(),
            nucleic: "/nonexistent".into(),
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(5),
        agent_env: Vec::new(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    })
    .await
    .unwrap();
    let token = host.token().to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut state = AppState::new(Arc::clone(&host), addr).with_limits(limits);
    if let Some(ttl) = login_ttl {
        state = state.with_login_link_ttl(ttl);
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(nucleic_server::serve(listener, state.clone(), async move {
        let _ = stopped.await;
    }));
    Server { dir, addr, token, repo, host, state, stop: Some(stop), task: Some(task) }
}

impl Server {
    /// Stops this server and its host, then opens both again on the same home (a new port).
    pub async fn restart(mut self) -> Server {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
        let Server { dir, repo, host, state, .. } = self;
        let limits = state.limits();
        drop(state);
        drop(host);
        serve_in(dir, repo, None, limits).await
    }

    pub fn host_header(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    /// `GET path` with `extra` header lines (each ending in CRLF) and the right `Host`.
    pub async fn get(&self, path: &str, extra: &str) -> Reply {
        let host = self.host_header();
        request(
            self.addr,
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"),
        )
        .await
    }

    /// A one-time login URL's path and query (`/login?token=…`), minted in process.
    pub fn login_path(&self) -> String {
        let url = self.state.login_link().unwrap();
        let prefix = format!("http://{}", self.host_header());
        url.strip_prefix(&prefix).unwrap().to_owned()
    }

    /// `POST path` with a JSON body and `extra` header lines, with the right `Host`.
    pub async fn post_json(&self, path: &str, body: &Value, extra: &str) -> Reply {
        let host = self.host_header();
        let body = body.to_string();
        request(
            self.addr,
            format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
        .await
    }

    /// A fresh single-use challenge for a device proof.
    pub async fn challenge(&self) -> String {
        let reply = self.post_json("/api/challenge", &json!({}), "").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["nonce"].as_str().unwrap().to_owned()
    }

    /// Signs a browser-like device in with a fresh login link and a new P-256 key.
    pub async fn sign_in(&self, name: &str) -> TestDevice {
        let key = new_key();
        let token = self.login_path().split("token=").nth(1).unwrap().to_owned();
        let reply =
            self.post_json("/api/devices", &registration(&token, &key, Some(name)), "").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        TestDevice { id: reply.json()["deviceID"].as_str().unwrap().to_owned(), key }
    }
}

/// A device key pair held by a test.
pub struct TestDevice {
    pub id: String,
    pub key: p256::ecdsa::SigningKey,
}

impl TestDevice {
    /// The `device` field of a hello for `nonce`.
    pub fn proof(&self, nonce: &str) -> Value {
        use base64::Engine;
        use p256::ecdsa::signature::Signer;
        let message = nucleic_protocol::hello_proof_message(nonce, &self.id);
        let signature: p256::ecdsa::Signature = self.key.sign(message.as_bytes());
        json!({
            "deviceID": self.id,
            "nonce": nonce,
            "signature": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.to_bytes()),
        })
    }
}

/// A random P-256 signing key.
pub fn new_key() -> p256::ecdsa::SigningKey {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).unwrap();
        if let Ok(key) = p256::ecdsa::SigningKey::from_slice(&bytes) {
            return key;
        }
    }
}

/// The body of `POST /api/devices`.
pub fn registration(token: &str, key: &p256::ecdsa::SigningKey, name: Option<&str>) -> Value {
    use base64::Engine;
    // SubjectPublicKeyInfo for an uncompressed P-256 point: the fixed DER header, then 04‖X‖Y.
    let prefix = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    let point = key.verifying_key().to_encoded_point(false);
    let der: Vec<u8> = prefix.iter().copied().chain(point.as_bytes().iter().copied()).collect();
    let mut body = json!({
        "token": token,
        "publicKey": base64::engine::general_purpose::STANDARD.encode(&der),
    });
    if let Some(name) = name {
        body["name"] = json!(name);
    }
    body
}

/// A WebSocket with no token (as a browser opens it), from the server's own origin.
pub async fn browser_ws(s: &Server) -> Socket {
    let mut request = format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
    let origin = format!("http://127.0.0.1:{}", s.addr.port());
    request.headers_mut().insert("origin", origin.parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
}

/// Sends a hello with `device` (a proof, or null) on a token-less socket; returns the reply.
pub async fn device_hello(socket: &mut Socket, device: Value) -> Value {
    send(
        socket,
        json!({"type": "hello", "clientID": "b1", "clientName": "claims to be the CLI", "protocolVersion": 1, "device": device}),
    )
    .await;
    recv(socket).await
}

/// The close frame's code once the host closes `socket` (within 10 s).
pub async fn close_code(socket: &mut Socket) -> Option<u16> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the host did not close the connection within 10 s");
        match frame {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return None,
        }
    }
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Sends a raw request and reads the whole response (chunked bodies decoded).
pub async fn request(addr: SocketAddr, request: String) -> Reply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..split]).into_owned();
    let mut body = out[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if headers.iter().any(|(n, v)| n == "transfer-encoding" && v == "chunked") {
        let mut decoded = Vec::new();
        let mut rest = &body[..];
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&rest[end + 2..end + 2 + size]);
            rest = &rest[end + 2 + size + 2..];
        }
        body = decoded;
    }
    Reply { status, headers, body }
}

/// A raw HTTP/1.1 request; returns (status, body).
pub async fn http(addr: SocketAddr, request: String) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

pub fn get(addr: SocketAddr, host: &str, extra: &str) -> String {
    let _ = addr;
    format!("GET /api/health HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

/// A `nucleic-client` connection with the host's token; a lost connection is an error.
pub async fn client(s: &Server) -> nucleic_client::Client {
    let mut options = nucleic_client::ClientOptions::new("test", "test client");
    options.reconnect = nucleic_client::Backoff::never();
    options.reply_within = Duration::from_secs(10);
    let endpoint = nucleic_client::Endpoint::Tcp(s.addr);
    nucleic_client::Client::connect(endpoint, &s.token, options).await.unwrap()
}

/// The refusal's code of a request that was refused.
pub fn refused<T: std::fmt::Debug>(
    reply: Result<T, nucleic_client::ClientError>,
) -> (Option<nucleic_protocol::ProtocolErrorCode>, String) {
    match reply {
        Err(nucleic_client::ClientError::Rejected(r)) => (r.code, r.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub async fn ws(
    s: &Server,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let mut request = format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {}", s.token).parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
}

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn send(socket: &mut Socket, value: Value) {
    socket.send(Message::Text(value.to_string().into())).await.unwrap();
}

pub async fn recv(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Message::Text(t) = frame {
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["type"] != "sessionChanged" {
                return v;
            }
        }
    }
}

pub async fn hello(socket: &mut Socket) {
    send(socket, json!({"type": "hello", "clientID": "c1", "clientName": "test client", "protocolVersion": 1})).await;
    assert_eq!(recv(socket).await["type"], "welcome");
}
