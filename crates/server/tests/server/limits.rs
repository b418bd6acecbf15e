//! Misbehaving clients meet bounds: headers that never end, WebSockets that never say hello or
//! go silent, too many connections, a client that never reads; replies that are (not)
//! remembered; the hardening headers on every response.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use nucleic_server::ServerLimits;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

use crate::files::agentless_session;
use crate::support::*;

fn short() -> ServerLimits {
    ServerLimits {
        header_read_timeout: Duration::from_millis(300),
        hello_timeout: Duration::from_millis(300),
        ..ServerLimits::default()
    }
}

/// Reads until the server closes the connection (10 s at most); returns how long it took.
async fn until_closed(tcp: &mut tokio::net::TcpStream) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept the connection open for 10 s"),
        }
    }
}

/// Reads frames until a close frame (10 s at most); returns its code and reason, and the text
/// frames seen before it.
async fn close_of(socket: &mut Socket) -> (u16, String, Vec<Value>) {
    let mut texts = Vec::new();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a close within 10 s");
        match frame {
            Some(Ok(Message::Close(Some(close)))) => {
                return (u16::from(close.code), close.reason.to_string(), texts);
            }
            Some(Ok(Message::Text(t))) => texts.push(serde_json::from_str(&t).unwrap()),
            Some(Ok(_)) => {}
            other => panic!("the connection ended without a close frame: {other:?}"),
        }
    }
}

#[tokio::test]
async fn headers_that_never_end_and_idle_keep_alive_connections_are_closed() {
    let s = start_with_limits(short()).await;
    let mut partial = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    partial
        .write_all(format!("GET / HTTP/1.1\r\nHost: {}\r\nX-Slow:", s.host_header()).as_bytes())
        .await
        .unwrap();
    let took = until_closed(&mut partial).await;
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(5), "{took:?}");
    // Nothing sent at all.
    let mut silent = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let took = until_closed(&mut silent).await;
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A keep-alive connection that asks nothing more is closed the same way.
    let mut kept = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    kept.write_all(format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", s.host_header()).as_bytes())
        .await
        .unwrap();
    let took = until_closed(&mut kept).await;
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn a_websocket_without_hello_is_closed_with_a_reason() {
    let s = start_with_limits(short()).await;
    let mut socket = ws(&s).await;
    let started = Instant::now();
    let (code, reason, _) = close_of(&mut socket).await;
    assert_eq!(code, 1008, "{reason}");
    assert!(reason.contains("no hello"), "{reason}");
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn a_silent_websocket_is_closed_but_one_that_answers_pings_is_kept() {
    let limits = ServerLimits {
        ping_interval: Duration::from_millis(100),
        idle_timeout: Duration::from_millis(500),
        ..ServerLimits::default()
    };
    let s = start_with_limits(limits).await;
    let mut healthy = ws(&s).await;
    hello(&mut healthy).await;
    // A client library answers pings whenever it reads, so the silent client is raw TCP.
    let mut silent = raw_websocket(&s).await;
    // The healthy client keeps reading (tungstenite answers each ping with a pong).
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut pings = 0;
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(200), healthy.next()).await {
            Ok(Some(Ok(Message::Ping(_)))) => pings += 1,
            Ok(Some(Ok(Message::Close(c)))) => panic!("a healthy client was closed: {c:?}"),
            Ok(Some(Ok(_))) | Err(_) => {}
            Ok(other) => panic!("{other:?}"),
        }
    }
    assert!(pings >= 5, "{pings} pings");
    send(&mut healthy, json!({"type": "listProjects", "messageID": "still-here"})).await;
    assert_eq!(recv(&mut healthy).await["type"], "projects");
    // The silent one answered no ping.
    let (code, reason) = raw_close_of(&mut silent).await;
    assert_eq!(code, 1008, "{reason}");
    assert!(reason.contains("idle"), "{reason}");
}

#[tokio::test]
async fn connections_beyond_the_cap_are_refused_with_503_until_one_closes() {
    let s = start_with_limits(ServerLimits { max_connections: 3, ..ServerLimits::default() }).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut socket = ws(&s).await;
        hello(&mut socket).await;
        open.push(socket);
    }
    let auth = format!("Authorization: Bearer {}\r\n", s.token);
    let refused = s.get("/api/health", &auth).await;
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(refused.text().contains("limit"), "{}", refused.text());
    // One closes: its slot is free again.
    let mut first = open.remove(0);
    first.close(None).await.unwrap();
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(5), first.next()).await {}
    drop(first);
    let mut status = 0;
    for _ in 0..50 {
        status = s.get("/api/health", &auth).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200);
}

#[tokio::test]
async fn every_response_refuses_framing_sniffing_and_referrers() {
    let s = start().await;
    let auth = format!("Authorization: Bearer {}\r\n", s.token);
    let index = s.get("/", "").await;
    let page = index.text();
    let mut replies = vec![
        ("/", index),
        ("/sessions/x", s.get("/sessions/x", "").await),
        ("/api/health (401)", s.get("/api/health", "").await),
        ("/api/health", s.get("/api/health", &auth).await),
        ("/api/nothing", s.get("/api/nothing", "").await),
        ("/login?token=bad", s.get("/login?token=bad", "").await),
        ("wrong Host", {
            let req = "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
            request(s.addr, req.into()).await
        }),
    ];
    if let Some(start) = page.find("/assets/") {
        let end = page[start..].find('"').unwrap() + start;
        replies.push(("asset", s.get(&page[start..end], "").await));
    }
    for (what, reply) in &replies {
        let csp = reply.header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp:?}");
        assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'self'"), "{what}");
        assert_eq!(reply.header("x-frame-options"), Some("DENY"), "{what}");
        assert_eq!(reply.header("referrer-policy"), Some("no-referrer"), "{what}");
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{what}");
    }
}

/// `POST /api/message` with `body` and extra header lines; returns the reply.
async fn post(s: &Server, body: &Value, extra: &str) -> Value {
    let body = body.to_string();
    let req = format!(
        "POST /api/message HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.host_header(),
        s.token,
        body.len()
    );
    request(s.addr, req).await.json()
}

#[tokio::test]
async fn http_callers_share_no_replies_unless_they_name_the_same_client() {
    let s = start().await;
    let second = git_repo(&s.dir.path().join("second"));
    let third = git_repo(&s.dir.path().join("third"));
    let add = |path: &std::path::Path| json!({"type": "intent", "messageID": "m1", "intent": {"kind": "addProject", "path": path}});
    // Two scripts that both start at `m1` and name no client: each request is carried out.
    let a = post(&s, &add(&s.repo), "").await;
    let b = post(&s, &add(&second), "").await;
    assert_eq!((a["type"].as_str(), b["type"].as_str()), (Some("ack"), Some("ack")), "{a} {b}");
    assert_ne!(a["result"]["projectID"], b["result"]["projectID"]);
    // A named client's resent id is answered from memory, and bound to that client only.
    let named = post(&s, &add(&third), "X-Nucleic-Client-Id: script-1\r\n").await;
    assert_eq!(named["type"], "ack", "{named}");
    let again = post(&s, &add(&third), "X-Nucleic-Client-Id: script-1\r\n").await;
    assert_eq!(again, named, "not a duplicate-project error");
    let other = post(&s, &add(&third), "X-Nucleic-Client-Id: script-2\r\n").await;
    assert_eq!(other["type"], "error", "another client's m1 is its own: a real duplicate");
    let list = post(&s, &json!({"type": "listProjects", "messageID": "m1"}), "").await;
    assert_eq!(list["projects"].as_array().unwrap().len(), 3, "{list}");
}

#[tokio::test]
async fn reads_are_carried_out_again_for_a_resent_id() {
    let s = start().await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    send(&mut socket, json!({"type": "listProjects", "messageID": "list"})).await;
    assert_eq!(recv(&mut socket).await["projects"], json!([]));
    send(&mut socket, json!({"type": "intent", "messageID": "add", "intent": {"kind": "addProject", "path": s.repo}})).await;
    assert_eq!(recv(&mut socket).await["type"], "ack");
    // The same id for a read: read again, not the stale list.
    send(&mut socket, json!({"type": "listProjects", "messageID": "list"})).await;
    assert_eq!(recv(&mut socket).await["projects"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_client_that_does_not_read_is_dropped_with_a_reason() {
    let limits = ServerLimits {
        max_in_flight: 2,
        max_outbox_bytes: 256 << 10,
        send_timeout: Duration::from_millis(500),
        ..ServerLimits::default()
    };
    let s = start_with_limits(limits).await;
    std::fs::write(s.repo.join("big.txt"), "x".repeat(1 << 20)).unwrap();
    let id = agentless_session(&s).await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    for i in 0..60 {
        let read = json!({"type": "readFile", "messageID": format!("r{i}"), "sessionID": id, "path": "big.txt"});
        send(&mut socket, read).await;
    }
    // Not reading: the server's sends stall, then it gives up on this client.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (code, reason, texts) = close_of(&mut socket).await;
    assert_eq!(code, 1008, "{reason}");
    assert!(reason.contains("slow reader"), "{reason}");
    let replies = texts.iter().filter(|v| v["type"] == "fileContent").count();
    assert!(replies < 60, "dropped before every reply was sent ({replies})");
}

/// A WebSocket over raw TCP that has said hello and then does nothing by itself.
async fn raw_websocket(s: &Server) -> tokio::net::TcpStream {
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let upgrade = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        s.host_header(),
        s.token
    );
    tcp.write_all(upgrade.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(tcp.read_u8().await.unwrap());
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    let hello =
        json!({"type": "hello", "clientID": "raw", "clientName": "raw", "protocolVersion": 1});
    let payload = hello.to_string().into_bytes();
    // A masked text frame (mask key 0: the payload goes as is).
    let mut frame = vec![0x81, 0x80 | 126];
    frame.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(&payload);
    tcp.write_all(&frame).await.unwrap();
    tcp
}

/// Reads server frames from a raw WebSocket until a close frame (10 s at most).
async fn raw_close_of(tcp: &mut tokio::net::TcpStream) -> (u16, String) {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let opcode = tcp.read_u8().await.unwrap() & 0x0f;
            let len = match tcp.read_u8().await.unwrap() & 0x7f {
                126 => u64::from(tcp.read_u16().await.unwrap()),
                127 => tcp.read_u64().await.unwrap(),
                n => u64::from(n),
            };
            let mut payload = vec![0; usize::try_from(len).unwrap()];
            tcp.read_exact(&mut payload).await.unwrap();
            if opcode == 0x8 {
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                return (code, String::from_utf8_lossy(&payload[2..]).into_owned());
            }
        }
    })
    .await
    .expect("a close frame within 10 s")
}
