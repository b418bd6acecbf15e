//! Helpers: a server on a loopback port over a fresh host, raw HTTP, and a WebSocket client.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_server::{AppState, load_or_create_token};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub struct Server {
    pub dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub token: String,
    pub repo: std::path::PathBuf,
    pub host: Arc<Host>,
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
    let home = dir.path().join("home");
    let host = Host::open(HostConfig {
        home: home.clone(),
        agents: AgentPaths {
            claude: None,
            sim_program: "/nonexistent".into(),
            sim_prefix: Vec::new(),
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(5),
        agent_env: Vec::new(),
    })
    .await
    .unwrap();
    let token = load_or_create_token(&home).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::new(Arc::clone(&host), token.clone(), addr);
    tokio::spawn(nucleic_server::serve(listener, state, std::future::pending()));
    let repo = git_repo(dir.path());
    Server { dir, addr, token, repo, host }
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
