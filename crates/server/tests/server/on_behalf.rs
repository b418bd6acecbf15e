//! `hello.onBehalfOf`: a connection with the host's token acting for a person (a chat
//! bridge's paired user) is recorded as that person; nobody else may name one, and a name
//! that could pass for another kind of principal is refused.

use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::*;

/// Renames `session` to `title` on `socket` and reads its events from the start until that
/// rename's `sessionUpdated`: its `by`, and the titles of every rename before it.
async fn renamed_by(socket: &mut Socket, session: &str, title: &str) -> (String, Vec<String>) {
    send(
        socket,
        json!({"type": "subscribe", "messageID": "s", "sessionID": session, "fromSeq": 1}),
    )
    .await;
    send(
        socket,
        json!({"type": "intent", "messageID": "r", "intent": {"kind": "rename", "sessionID": session, "title": title}}),
    )
    .await;
    let mut before = Vec::new();
    loop {
        let m = recv(socket).await;
        assert_ne!(m["type"], "error", "{m}");
        let events = match m["type"].as_str() {
            Some("events") => m["events"].as_array().unwrap().clone(),
            _ => vec![m["event"].clone()],
        };
        for e in events.iter().filter(|e| e["kind"]["type"] == "sessionUpdated") {
            let (by, renamed) = (&e["kind"]["by"], e["kind"]["title"].as_str().unwrap_or(""));
            if renamed == title {
                return (by.as_str().unwrap_or_default().to_owned(), before);
            }
            before.push(renamed.to_owned());
        }
    }
}

/// Sends a rename of `session` on a connection whose hello was refused (it may be closed).
async fn try_rename(socket: &mut Socket, session: &str) {
    let intent = json!({"type": "intent", "messageID": "x", "intent": {"kind": "rename", "sessionID": session, "title": "renamed-by-a-refused-connection"}});
    let _ =
        socket.send(tokio_tungstenite::tungstenite::Message::Text(intent.to_string().into())).await;
}

fn hello_for(person: &str) -> serde_json::Value {
    json!({"type": "hello", "clientID": "bridge-1", "clientName": "chat bridge",
           "protocolVersion": 1, "onBehalfOf": person})
}

fn refused_handshake(reply: &serde_json::Value) {
    assert_eq!(
        (reply["type"].as_str(), reply["code"].as_str()),
        (Some("error"), Some("badHandshake")),
        "{reply}"
    );
}

#[tokio::test]
async fn a_token_connection_acting_for_a_person_is_recorded_as_that_person() {
    let s = start().await;
    let session = crate::files::agentless_session(&s).await;
    // Through the shared client, as the chat bridge does it: reported as paired, then acted for.
    let mut own = client(&s).await;
    let report = nucleic_protocol::ChatBridgeReport {
        bridge: "telegram:7001".into(),
        state: nucleic_protocol::ChatBridgeState::Running,
        last_error: None,
        paired: vec![nucleic_protocol::ChatPerson {
            person: "telegram:12345".into(),
            chat: "12345".into(),
            paired_at: 1,
        }],
        strangers_ignored: 0,
        outbox_queued: 0,
    };
    own.intent(nucleic_protocol::Intent::ReportChatBridge { report }).await.unwrap();
    let mut acting = own.acting_for("telegram:12345").await.unwrap();
    acting.subscribe(&session, 1, nucleic_protocol::Verbosity::Full).await.unwrap();
    acting
        .intent(nucleic_protocol::Intent::Rename {
            session_id: session.clone(),
            title: "renamed from a chat".into(),
        })
        .await
        .unwrap();
    let by = loop {
        let message = acting.next_within(std::time::Duration::from_secs(10)).await.unwrap();
        let events = match message {
            nucleic_protocol::HostMessage::Event { event, .. } => vec![event],
            nucleic_protocol::HostMessage::Events { events, .. } => events,
            _ => continue,
        };
        if let Some(by) = events.iter().find_map(|e| match &e.kind {
            nucleic_protocol::EventKind::SessionUpdated(u) => Some(u.by.clone()),
            _ => None,
        }) {
            break by;
        }
    };
    assert_eq!(by, "telegram:12345");
    // The token's own connection is still recorded as the token.
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    assert_eq!(renamed_by(&mut socket, &session, "t2").await.0, "token on this machine");
}

#[tokio::test]
async fn only_the_token_may_act_for_someone_and_only_as_a_person_of_a_service() {
    let s = start().await;
    let session = crate::files::agentless_session(&s).await;
    // Names that would read as another principal, or could carry escapes into a screen.
    for name in ["mcp:planner", "device:abc", "token:x", "telegram:a b", "telegram:\u{1b}[2J", "x"]
    {
        let mut socket = ws(&s).await;
        send(&mut socket, hello_for(name)).await;
        refused_handshake(&recv(&mut socket).await);
        try_rename(&mut socket, &session).await;
        assert_eq!(close_code(&mut socket).await, Some(1002), "{name:?}");
    }
    // A signed-in device may not act for someone: refused before its proof is even looked at.
    let device = s.sign_in("phone").await;
    let mut socket = browser_ws(&s).await;
    let mut hello = hello_for("telegram:12345");
    hello["device"] = device.proof(&s.challenge().await);
    send(&mut socket, hello).await;
    refused_handshake(&recv(&mut socket).await);
    try_rename(&mut socket, &session).await;
    // Neither may an MCP client with a grant's credential.
    let mut person = client(&s).await;
    let granted: nucleic_protocol::McpGranted = person
        .intent_as(nucleic_protocol::Intent::GrantMcp {
            name: "planner".into(),
            scopes: nucleic_protocol::McpScope::ALL.to_vec(),
            session_id: None,
        })
        .await
        .unwrap();
    let mut request = format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
    let bearer = format!("Bearer {}", granted.credential);
    request.headers_mut().insert("authorization", bearer.parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    send(&mut socket, hello_for("telegram:12345")).await;
    refused_handshake(&recv(&mut socket).await);
    try_rename(&mut socket, &session).await;
    let _ = socket.close(None).await;
    // By effect: none of the refused connections' renames happened.
    let mut socket = ws(&s).await;
    crate::support::hello(&mut socket).await;
    let (by, before) = renamed_by(&mut socket, &session, "t3").await;
    assert_eq!(by, "token on this machine");
    assert!(before.iter().all(|t| t != "renamed-by-a-refused-connection"), "{before:?}");
}
