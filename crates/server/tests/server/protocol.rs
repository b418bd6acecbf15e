//! Auth, Host/Origin checks, the handshake, malformed / unknown / oversized messages,
//! idempotent message ids, cursor errors.

use futures_util::SinkExt;
use nucleic_protocol::{ClientMessage, HostMessage, Intent, IntentResult};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

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
    // The token as a cookie opens nothing: browsers send 127.0.0.1 cookies to every port.
    let cookie = format!("Cookie: a=b; nucleic_token={}\r\n", s.token);
    assert_eq!(http(s.addr, get(s.addr, &host, &cookie)).await.0, 401);
    // DNS rebinding: right token, wrong Host.
    assert_eq!(http(s.addr, get(s.addr, "evil.example:80", &auth)).await.0, 403);
    let cross = format!("{auth}Origin: http://evil.example\r\n");
    assert_eq!(http(s.addr, get(s.addr, &host, &cross)).await.0, 403);
    let same = format!("{auth}Origin: http://{host}\r\n");
    assert_eq!(http(s.addr, get(s.addr, &host, &same)).await.0, 200);
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
    let mut client = client(&s).await;
    let path = s.repo.to_string_lossy().into_owned();
    let add = |message_id: &str| ClientMessage::Intent {
        message_id: message_id.into(),
        intent: Intent::add_project(&path),
    };
    let first = client.request(add("add-1")).await.unwrap();
    assert!(matches!(first, HostMessage::Ack { result: Some(IntentResult::Project(_)), .. }));
    let again = client.request(add("add-1")).await.unwrap();
    assert_eq!(again, first, "same reply, not a duplicate-project error");
    assert_eq!(client.list_projects().await.unwrap().len(), 1);
    // A new id for the same project is a real second request: refused as a duplicate.
    let (code, message) = refused(client.request(add("add-2")).await);
    assert!(code.is_some(), "{message}");
}

/// Two tabs of one browser (one client id) flushing the same queued action, or a resend while
/// the first copy is still being carried out: the work is done once, every copy gets its reply.
/// Before copies waited for the first, each one that arrived before the first reply was
/// remembered ran again (here: "already registered" errors).
#[tokio::test]
async fn copies_of_a_message_id_in_flight_at_once_run_once() {
    let s = start().await;
    let mut clients = Vec::new();
    for _ in 0..8 {
        let mut options = nucleic_client::ClientOptions::new("tab", "a tab");
        options.client_id = "one-browser".into();
        options.reconnect = nucleic_client::Backoff::never();
        let endpoint = nucleic_client::Endpoint::Tcp(s.addr);
        clients.push(nucleic_client::Client::connect(endpoint, &s.token, options).await.unwrap());
    }
    let path = s.repo.to_string_lossy().into_owned();
    let add =
        ClientMessage::Intent { message_id: "flush-1".into(), intent: Intent::add_project(&path) };
    // Every copy is on the wire before any reply is read.
    for client in &mut clients {
        client.send(add.clone()).await.unwrap();
    }
    let within = std::time::Duration::from_secs(10);
    let replies =
        futures_util::future::join_all(clients.iter_mut().map(|c| c.next_within(within))).await;
    let replies: Vec<HostMessage> = replies.into_iter().map(Result::unwrap).collect();
    for reply in &replies {
        assert_eq!(reply, &replies[0], "every copy gets the first copy's reply");
    }
    assert!(matches!(replies[0], HostMessage::Ack { .. }), "{:?}", replies[0]);
    assert_eq!(clients[0].list_projects().await.unwrap().len(), 1);
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

#[tokio::test]
async fn shutting_down_closes_open_websockets_as_going_away() {
    use futures_util::StreamExt;
    let s = start().await;
    let mut talking = ws(&s).await;
    hello(&mut talking).await;
    let mut silent = ws(&s).await; // never says hello
    // A graceful shutdown that waited for these connections would never end.
    let s = tokio::time::timeout(std::time::Duration::from_secs(10), s.restart()).await.unwrap();
    for socket in [&mut talking, &mut silent] {
        let mut code = None;
        while let Ok(Some(Ok(frame))) =
            tokio::time::timeout(std::time::Duration::from_secs(5), socket.next()).await
        {
            if let Message::Close(Some(close)) = frame {
                code = Some(u16::from(close.code));
            }
        }
        assert_eq!(code, Some(1001), "closed as going away");
    }
    // The restarted server answers as usual.
    let mut again = ws(&s).await;
    hello(&mut again).await;
}
