//! Chat bridges' users as the host knows them, by effect: a chat user the bridge never reported
//! cannot be acted for; one the person unpairs (from a device: the cockpit) is cut off at once —
//! the open connection closed, its rename not done — and stays refused across a host restart and
//! a stale report, until a later pairing; a chat user's own connection can neither report nor
//! unpair, nor can an MCP client list.

use nucleic_client::{Client, ClientError};
use nucleic_protocol::{
    ChatBridgeReport, ChatBridgeReported, ChatBridgeState, ChatBridges, ChatPerson, Intent,
    ProtocolErrorCode,
};
use serde_json::json;

use crate::support::*;

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis(),
    )
    .unwrap()
}

fn report(people: &[(&str, i64)]) -> ChatBridgeReport {
    ChatBridgeReport {
        bridge: "telegram:7001".into(),
        state: ChatBridgeState::Running,
        last_error: None,
        paired: people
            .iter()
            .map(|(p, at)| ChatPerson { person: (*p).into(), chat: "42".into(), paired_at: *at })
            .collect(),
        strangers_ignored: 0,
        outbox_queued: 0,
    }
}

async fn report_as_bridge(bridge: &mut Client, people: &[(&str, i64)]) -> Vec<String> {
    let reported: ChatBridgeReported =
        bridge.intent_as(Intent::ReportChatBridge { report: report(people) }).await.unwrap();
    reported.unpaired
}

async fn rename(client: &mut Client, session: &str, title: &str) -> Result<(), ClientError> {
    client
        .intent(Intent::Rename { session_id: session.to_owned(), title: title.to_owned() })
        .await
        .map(|_| ())
}

/// The session's title now, through the token.
async fn title(s: &Server, session: &str) -> String {
    let mut own = client(s).await;
    own.session(session).await.unwrap().title
}

fn refused_because(result: Result<Client, ClientError>, says: &str) {
    match result {
        Err(ClientError::Refused(why)) => assert!(why.contains(says), "{why}"),
        other => panic!("expected a refused hello, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unpaired_chat_user_is_cut_off_at_once_and_stays_refused_until_they_pair_again() {
    let s = start().await;
    let session = crate::files::agentless_session(&s).await;
    let mut bridge = client(&s).await;
    // Never reported: nobody may act for them.
    refused_because(bridge.acting_for("telegram:42").await, "not paired");
    let paired_at = now_ms() - 1000;
    assert!(report_as_bridge(&mut bridge, &[("telegram:42", paired_at)]).await.is_empty());
    let mut acting = bridge.acting_for("telegram:42").await.unwrap();
    rename(&mut acting, &session, "from the chat").await.unwrap();
    assert_eq!(title(&s, &session).await, "from the chat");

    // The chat user's own connection may not report, list or unpair.
    for intent in [
        Intent::ReportChatBridge { report: report(&[("telegram:666", now_ms())]) },
        Intent::ListChatBridges,
        Intent::UnpairChatPerson { person: "telegram:42".into() },
    ] {
        let (code, why) = refused(acting.intent(intent).await);
        assert_eq!(code, Some(ProtocolErrorCode::Forbidden), "{why}");
    }
    refused_because(bridge.acting_for("telegram:666").await, "not paired");

    // The person unpairs them from a signed-in device (the cockpit's way).
    let device = s.sign_in("phone").await;
    let mut phone = browser_ws(&s).await;
    let welcome = device_hello(&mut phone, device.proof(&s.challenge().await)).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    send(&mut phone, json!({"type": "intent", "messageID": "u1", "intent": {"kind": "unpairChatPerson", "person": "telegram:42"}})).await;
    let ack = recv(&mut phone).await;
    assert_eq!(ack["result"]["kind"], "chatBridges", "{ack}");
    assert_eq!(ack["result"]["bridges"][0]["paired"], json!([]), "{ack}");

    // At once: the open connection is closed, and what it asks for after is not done.
    let after = rename(&mut acting, &session, "after the unpairing").await;
    assert!(after.is_err(), "{after:?}");
    assert_eq!(title(&s, &session).await, "from the chat");
    refused_because(bridge.acting_for("telegram:42").await, "was unpaired");

    // A restart keeps it; a stale report (paired before the unpairing) is answered with the
    // user to drop, and does not bring them back.
    let s = s.restart().await;
    let mut bridge = client(&s).await;
    refused_because(bridge.acting_for("telegram:42").await, "was unpaired");
    assert_eq!(report_as_bridge(&mut bridge, &[("telegram:42", paired_at)]).await, ["telegram:42"]);
    refused_because(bridge.acting_for("telegram:42").await, "was unpaired");
    let listed: ChatBridges = bridge.intent_as(Intent::ListChatBridges).await.unwrap();
    assert!(listed.bridges[0].paired.is_empty(), "{listed:?}");

    // Paired again (a later pairing): accepted.
    assert!(report_as_bridge(&mut bridge, &[("telegram:42", now_ms() + 1)]).await.is_empty());
    let mut again = bridge.acting_for("telegram:42").await.unwrap();
    rename(&mut again, &session, "paired again").await.unwrap();
    assert_eq!(title(&s, &session).await, "paired again");
}

#[tokio::test]
async fn only_the_person_lists_or_unpairs_and_reports_are_bounded() {
    let s = start().await;
    let mut person = client(&s).await;
    // An MCP client may not list the bridges (their users' ids).
    let granted: nucleic_protocol::McpGranted = person
        .intent_as(Intent::GrantMcp {
            name: "planner".into(),
            scopes: nucleic_protocol::McpScope::ALL.to_vec(),
            session_id: None,
        })
        .await
        .unwrap();
    let mut options = nucleic_client::ClientOptions::new("mcp", "mcp");
    options.reconnect = nucleic_client::Backoff::never();
    let mut mcp =
        Client::connect(nucleic_client::Endpoint::Tcp(s.addr), &granted.credential, options)
            .await
            .unwrap();
    let (code, _) = refused(mcp.intent(Intent::ListChatBridges).await);
    assert_eq!(code, Some(ProtocolErrorCode::Forbidden));
    // Unpairing someone nobody paired says so; a report with a hostile id is refused whole.
    let (code, _) =
        refused(person.intent(Intent::UnpairChatPerson { person: "telegram:1".into() }).await);
    assert_eq!(code, Some(ProtocolErrorCode::NotFound));
    let mut hostile = report(&[("telegram:\u{1b}]2;x\u{7}", now_ms())]);
    let (code, _) =
        refused(person.intent(Intent::ReportChatBridge { report: hostile.clone() }).await);
    assert_eq!(code, Some(ProtocolErrorCode::InvalidRequest));
    hostile.paired.clear();
    hostile.bridge = "x".repeat(10_000);
    let (code, _) = refused(person.intent(Intent::ReportChatBridge { report: hostile }).await);
    assert_eq!(code, Some(ProtocolErrorCode::InvalidRequest));
    let listed: ChatBridges = person.intent_as(Intent::ListChatBridges).await.unwrap();
    assert!(listed.bridges.is_empty(), "{listed:?}");
}
