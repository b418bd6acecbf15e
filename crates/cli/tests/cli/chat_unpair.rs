//! The person unpairs a chat user from another client (the cockpit's `unpairChatPerson`, here
//! through the shared client with the host's token as a device would send it): the bridge has
//! reported the user to the host, their next `/cc` task does nothing — no session, told why —
//! and the bridge drops them from its own pairings; a new pairing brings them back. The host's
//! view shows the bridge and its users, and `nucleic chat unpair` reaches the host at once.

use std::time::{Duration, Instant};

use nucleic_protocol::{ChatBridges, Intent};

use crate::chat_bridge::{BridgeProc, ME, TOKEN, cli, pair, sent_containing, setup};
use nucleic_testkit::mock_telegram::MockTelegram;

async fn bridges(home: &std::path::Path) -> ChatBridges {
    let mut daemon = token_client(home).await;
    daemon.intent_as(Intent::ListChatBridges).await.unwrap()
}

async fn token_client(home: &std::path::Path) -> nucleic_client::Client {
    let options = nucleic_client::ClientOptions::new("test", "test");
    let daemon = nucleic_client::LocalDaemon::new(home);
    nucleic_client::Client::local(daemon, options).await.unwrap()
}

async fn sessions(home: &std::path::Path) -> usize {
    let (code, out, err) = cli(home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    out.lines().filter(|l| !l.trim().is_empty()).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_user_unpaired_elsewhere_can_do_nothing_until_paired_again() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let _bridge = BridgeProc::start(&home, &mock, "a");
    pair(&home, &mock).await;
    // The host knows the bridge and its user (the report after a pairing can trail the
    // "Paired" reply on a loaded machine: waited for, with a deadline).
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed = bridges(&home).await;
        if listed.bridges.first().is_some_and(|b| !b.paired.is_empty()) {
            break listed;
        }
        assert!(Instant::now() < deadline, "the bridge's report never listed the user: {listed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(listed.bridges.len(), 1, "{listed:?}");
    let bridge = &listed.bridges[0];
    assert!(bridge.bridge.starts_with("telegram:") && !bridge.bridge.contains("chat-bridge-test"));
    assert_eq!(
        bridge.paired.iter().map(|p| p.person.as_str()).collect::<Vec<_>>(),
        ["telegram:42"]
    );

    let mut person = token_client(&home).await;
    let after: ChatBridges =
        person.intent_as(Intent::UnpairChatPerson { person: "telegram:42".into() }).await.unwrap();
    assert!(after.bridges[0].paired.is_empty(), "{after:?}");

    // By effect: the task starts nothing, and the user is told.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc write unpaired.txt containing x");
    let told = sent_containing(&mock, ME, "unpaired", skip).await;
    assert!(told.text.contains("unpaired"), "{}", told.text);
    sent_containing(&mock, ME, "pair again", skip).await;
    assert_eq!(sessions(&home).await, 0);
    // The bridge dropped them too: `nucleic chat list` no longer lists them.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, out, _) = cli(&home, &["chat", "list"]).await;
        if !out.contains("42  chat") {
            break;
        }
        assert!(Instant::now() < deadline, "still paired in chat.db: {out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A second message from them is ignored like a stranger's: nothing starts.
    mock.push_message(ME, None, ME, "/cc write again.txt containing x");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sessions(&home).await, 0);

    // Paired again: back.
    pair(&home, &mock).await;
    mock.push_message(ME, None, ME, "/cc write back.txt containing x");
    sent_containing(&mock, ME, "Started session", mock.sent().len().saturating_sub(3)).await;
    assert_eq!(sessions(&home).await, 1);

    // `nucleic chat unpair` reaches the host at once (not at the bridge's next report).
    let (code, _, err) = cli(&home, &["chat", "unpair", "42"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(bridges(&home).await.bridges[0].paired.is_empty());
}
