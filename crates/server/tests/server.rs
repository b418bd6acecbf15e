//! The server over real sockets: auth, Host/Origin checks, the handshake, malformed / unknown /
//! oversized messages, idempotent message ids, and cursor errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

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

struct Server {
    _dir: tempfile::TempDir,
    addr: SocketAddr,
    token: String,
    repo: std::path::PathBuf,
}

fn git_repo(dir: &Path) -> std::path::PathBuf {
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

async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let host = Host::open(HostConfig {
        home: home.clone(),
        agents: AgentPaths {
            claude: None,
            codex: None,
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
    Server { _dir: dir, addr, token, repo }
}

/// A raw HTTP/1.1 request; returns (status, body).
async fn http(addr: SocketAddr, request: String) -> (u16, String) {
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

fn get(addr: SocketAddr, host: &str, extra: &str) -> String {
    let _ = addr;
    format!("GET /api/health HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn requests_need_the_token_and_a_loopback_host() {
    let s = start().await;
    let host = format!("127.0.0.1:{}", s.addr.port());
    let auth = format!("Authorization: Bearer {}\r\n", s.token);
    assert_eq!(http(s.addr, get(s.addr, &host, &auth)).await.0, 200);
    assert_eq!(
        http(s.addr, get(s.addr, &format!("localhost:{}", s.addr.port()), &auth)).await.0,
        200
    );
    assert_eq!(http(s.addr, get(s.addr, &host, "")).await.0, 401);
    assert_eq!(http(s.addr, get(s.addr, &host, "Authorization: Bearer nope\r\n")).await.0, 401);
    let cookie = format!("Cookie: a=b; nucleic_token={}\r\n", s.token);
    assert_eq!(http(s.addr, get(s.addr, &host, &cookie)).await.0, 200);
    // DNS rebinding: right token, wrong Host.
    assert_eq!(http(s.addr, get(s.addr, "evil.example:80", &auth)).await.0, 403);
    let cross = format!("{auth}Origin: http://evil.example\r\n");
    assert_eq!(http(s.addr, get(s.addr, &host, &cross)).await.0, 403);
    let same = format!("{auth}Origin: http://{host}\r\n");
    assert_eq!(http(s.addr, get(s.addr, &host, &same)).await.0, 200);
}

async fn ws(
    s: &Server,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let mut request = format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {}", s.token).parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(socket: &mut Socket, value: Value) {
    socket.send(Message::Text(value.to_string().into())).await.unwrap();
}

async fn recv(socket: &mut Socket) -> Value {
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

async fn hello(socket: &mut Socket) {
    send(socket, json!({"type": "hello", "clientID": "c1", "clientName": "test client", "protocolVersion": 1})).await;
    assert_eq!(recv(socket).await["type"], "welcome");
}

#[tokio::test]
async fn the_first_message_must_be_a_hello_in_our_version() {
    let s = start().await;
    let mut socket = ws(&s).await;
    send(&mut socket, json!({"type": "listProjects", "messageID": "m1"})).await;
    let reply = recv(&mut socket).await;
    assert_eq!(
        (reply["type"].as_str(), reply["code"].as_str()),
        (Some("error"), Some("badHandshake"))
    );
    let mut socket = ws(&s).await;
    send(
        &mut socket,
        json!({"type": "hello", "clientID": "c", "clientName": "x", "protocolVersion": 99}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["code"], "badHandshake");
}

#[tokio::test]
async fn malformed_unknown_and_oversized_messages_get_clear_replies_and_the_connection_lives() {
    let s = start().await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    socket.send(Message::Text("{not json".into())).await.unwrap();
    assert_eq!(recv(&mut socket).await["code"], "badMessage");
    send(&mut socket, json!({"type": "teleport", "messageID": "m2"})).await;
    let reply = recv(&mut socket).await;
    assert_eq!(
        (reply["type"].as_str(), reply["messageType"].as_str(), reply["messageID"].as_str()),
        (Some("unsupported"), Some("teleport"), Some("m2"))
    );
    send(&mut socket, json!({"type": "subscribe", "messageID": "m3", "sessionID": "s"})).await;
    let reply = recv(&mut socket).await;
    assert_eq!(
        (reply["code"].as_str(), reply["messageID"].as_str()),
        (Some("badMessage"), Some("m3"))
    );
    let big = "x".repeat(nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES + 10);
    send(
        &mut socket,
        json!({"type": "sendInput", "messageID": "m4", "sessionID": "s", "text": big}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["code"], "tooLarge");
    send(
        &mut socket,
        json!({"type": "subscribe", "messageID": "m5", "sessionID": "nope", "fromSeq": 1}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["code"], "notFound");
    // Still alive.
    send(&mut socket, json!({"type": "listProjects", "messageID": "m6"})).await;
    assert_eq!(recv(&mut socket).await["type"], "projects");
}

#[tokio::test]
async fn a_resent_message_id_gets_the_same_reply_without_doing_the_work_twice() {
    let s = start().await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    let add = json!({"type": "intent", "messageID": "add-1", "intent": {"kind": "addProject", "path": s.repo}});
    send(&mut socket, add.clone()).await;
    let first = recv(&mut socket).await;
    assert_eq!(first["type"], "ack", "{first}");
    send(&mut socket, add).await;
    assert_eq!(recv(&mut socket).await, first, "same reply, not a duplicate-project error");
    send(&mut socket, json!({"type": "listProjects", "messageID": "l"})).await;
    assert_eq!(recv(&mut socket).await["projects"].as_array().unwrap().len(), 1);
    // A new id for the same project is a real second request: refused as a duplicate.
    send(&mut socket, json!({"type": "intent", "messageID": "add-2", "intent": {"kind": "addProject", "path": s.repo}})).await;
    let dup = recv(&mut socket).await;
    assert_eq!(dup["type"], "error", "{dup}");
}

#[tokio::test]
async fn http_one_shots_share_the_protocol() {
    let s = start().await;
    let host = format!("127.0.0.1:{}", s.addr.port());
    let body = json!({"type": "listProjects", "messageID": "h1"}).to_string();
    let req = format!(
        "POST /api/message HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.token,
        body.len()
    );
    let (status, reply) = http(s.addr, req).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&reply).unwrap()["type"], "projects");
    let body =
        json!({"type": "subscribe", "messageID": "h2", "sessionID": "s", "fromSeq": 1}).to_string();
    let req = format!(
        "POST /api/message HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.token,
        body.len()
    );
    let (status, reply) = http(s.addr, req).await;
    assert_eq!(status, 422);
    assert_eq!(serde_json::from_str::<Value>(&reply).unwrap()["code"], "invalidRequest");
}
