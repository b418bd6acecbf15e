//! The client against a real host (in process, behind a proxy that drops or mutes its
//! connections) and against fake hosts that misbehave.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "client/support.rs"]
mod support;

use std::time::{Duration, Instant};

use nucleic_client::{Backoff, Client, ClientError, Endpoint};
use nucleic_protocol::{ClientMessage, HostMessage, Intent, IntentResult, Verbosity};
use support::{Fake, fake_host, quick, serve};

/// Reads events of `session` until `last` arrived; returns their seqs in arrival order.
async fn seqs_until(client: &mut Client, session: &str, last: u64, seqs: &mut Vec<u64>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while seqs.last().copied().unwrap_or(0) < last {
        assert!(Instant::now() < deadline, "stuck at {:?} of {last}", seqs.last());
        match client.next_within(Duration::from_secs(10)).await.unwrap() {
            HostMessage::Event { event } if event.session_id == session => seqs.push(event.seq),
            HostMessage::Events { events, .. } => {
                seqs.extend(events.iter().filter(|e| e.session_id == session).map(|e| e.seq));
            }
            _ => {}
        }
    }
}

async fn last_seq(client: &mut Client, session: &str) -> u64 {
    client.session(session).await.unwrap().last_seq
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_survives_dropped_connections_with_no_gap_and_no_duplicate() {
    let served = serve().await;
    let mut writer = served.client("writer").await;
    let session = served.imported_session(&mut writer, 3000).await;
    let mut reader = served.client("reader").await;
    reader.subscribe(&session, 1, Verbosity::Full).await.unwrap();
    let mut seqs = Vec::new();
    seqs_until(&mut reader, &session, 100, &mut seqs).await;

    // The connection drops in the middle of the catch-up, and again while new events are
    // written that the reader is not connected to see.
    served.proxy.cut();
    seqs_until(&mut reader, &session, 3000, &mut seqs).await;
    served.proxy.cut();
    for n in 0..5 {
        let rename = Intent::Rename { session_id: session.clone(), title: format!("title {n}") };
        writer.intent(rename).await.unwrap();
    }
    let last = last_seq(&mut writer, &session).await;
    assert!(last > 3000, "renames add events: {last}");
    seqs_until(&mut reader, &session, last, &mut seqs).await;

    let expected: Vec<u64> = (1..=last).collect();
    assert_eq!(seqs, expected, "strictly consecutive from 1 across the reconnects");
    // The first loss may go unnoticed while what was sent before it is still being read, the
    // second cannot: the renames reach the reader only over a new connection.
    let stats = reader.stats();
    eprintln!("{stats:?}");
    assert!(stats.reconnects >= 1, "{stats:?}");
    assert_eq!(reader.next_seq(&session), Some(last + 1));
    // Live again: the next event arrives once.
    writer
        .intent(Intent::Rename { session_id: session.clone(), title: "after".into() })
        .await
        .unwrap();
    seqs_until(&mut reader, &session, last + 1, &mut seqs).await;
    assert_eq!(seqs.len() as u64, last + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_raw_client_keeps_no_cursor_and_does_not_resubscribe_after_a_loss() {
    let served = serve().await;
    let mut writer = served.client("writer").await;
    let session = served.imported_session(&mut writer, 20).await;
    let mut raw = served.client_with("raw", true).await;
    let mut cursor = served.client("cursor").await;
    let last = last_seq(&mut writer, &session).await;
    for client in [&mut raw, &mut cursor] {
        client.subscribe(&session, 1, Verbosity::Full).await.unwrap();
        seqs_until(client, &session, last, &mut Vec::new()).await;
    }
    served.proxy.cut();
    writer.intent(Intent::Rename { session_id: session.clone(), title: "t".into() }).await.unwrap();
    let mut seqs = Vec::new();
    seqs_until(&mut cursor, &session, last + 1, &mut seqs).await;
    assert_eq!(seqs, [last + 1], "resubscribed from its cursor");
    // The raw client reconnects (its next wait notices the loss) but follows nothing.
    let e = raw.next_within(Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(e, ClientError::Timeout { .. }), "{e:?}");
    assert_eq!(raw.next_seq(&session), None, "a raw client keeps no cursor");
    assert_eq!(raw.stats().reconnects, 1, "{:?}", raw.stats());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_resent_after_a_lost_reply_is_answered_once() {
    let served = serve().await;
    let mut client = served.client("resender").await;
    let path = served.dir.path().join("resend.jsonl");
    std::fs::write(&path, support::export_lines(3)).unwrap();
    let message_id = client.id();
    let import = ClientMessage::Intent {
        message_id: message_id.clone(),
        intent: Intent::Import { path: path.display().to_string() },
    };
    // The host carries it out but its reply never reaches the client; the connection then
    // drops, the client reconnects and resends the same message id.
    served.proxy.mute();
    let cut = tokio::spawn({
        let proxy_cut = served.proxy.cut_handle();
        async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            proxy_cut();
        }
    });
    let reply = client.request(import.clone()).await.unwrap();
    cut.await.unwrap();
    let stats = client.stats();
    assert_eq!((stats.reconnects, stats.resends), (1, 1), "{stats:?}");
    // Asked a third time, explicitly: the same remembered answer.
    let again = client.request(import).await.unwrap();
    assert_eq!(reply, again);
    let HostMessage::Ack { result: Some(IntentResult::Session(summary)), .. } = reply else {
        panic!("{reply:?}")
    };
    let sessions = client.list_sessions(None, true).await.unwrap();
    assert_eq!(sessions.len(), 1, "imported once: {sessions:?}");
    assert_eq!(sessions[0].session_id, summary.session_id);
    // Another client using the same message id is its own scope: carried out for it.
    let mut other = served.client("other").await;
    let import = ClientMessage::Intent {
        message_id,
        intent: Intent::Import { path: path.display().to_string() },
    };
    other.request(import).await.unwrap();
    assert_eq!(other.list_sessions(None, true).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn pipelined_requests_unanswered_at_a_loss_are_all_resent_and_answered_once() {
    let served = serve().await;
    let mut client = served.client("pipeliner").await;
    served.proxy.mute();
    let mut ids = Vec::new();
    for n in 0..3 {
        let path = served.dir.path().join(format!("pipelined-{n}.jsonl"));
        std::fs::write(&path, support::export_lines(2)).unwrap();
        let message_id = client.id();
        ids.push(message_id.clone());
        let intent = Intent::Import { path: path.display().to_string() };
        client.send(ClientMessage::Intent { message_id, intent }).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    served.proxy.cut();
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        let message = client.next_within(Duration::from_secs(10)).await.unwrap();
        if let HostMessage::Ack { message_id, .. } = message {
            answered.push(message_id);
        }
    }
    // The host carries out a connection's requests concurrently: any order, each once.
    answered.sort();
    assert_eq!(answered, ids, "each answered once");
    assert_eq!(client.stats().resends, 3, "{:?}", client.stats());
    assert_eq!(client.list_sessions(None, true).await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_of_another_build_is_named_so_and_one_of_this_build_is_not() {
    // A host older than the digest (the fake sends none): said, with what to do.
    let addr = fake_host(Fake::Answers(&[])).await;
    let old = Client::connect(Endpoint::Tcp(addr), "t", quick("old")).await.unwrap();
    assert!(!old.welcome().same_shapes());
    let why = old.welcome().other_build().unwrap();
    assert!(why.contains("older than this client") && why.contains("restart the daemon"), "{why}");
    // A real host of this build: nothing to say.
    let served = serve().await;
    let current = served.client("current").await;
    assert!(current.welcome().same_shapes(), "{:?}", current.welcome());
    assert_eq!(current.welcome().other_build(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_or_unknown_host_message_is_a_clear_error_not_a_panic() {
    let frames: &[&str] =
        &[r#"{"type":"frobnicate","messageID":"m1"}"#, "not json at all", r#"{"type":"ack"}"#];
    let addr = fake_host(Fake::Answers(frames)).await;
    let mut client = Client::connect(Endpoint::Tcp(addr), "t", quick("bad")).await.unwrap();
    let message_id = client.id();
    let first = client.request(ClientMessage::ListProjects { message_id }).await.unwrap_err();
    let text = first.to_string();
    assert!(matches!(first, ClientError::BadMessage { .. }), "{first:?}");
    assert!(text.contains("cannot read") && text.contains("frobnicate"), "{text}");
    // The connection is still usable: the next messages are read (and refused) one by one.
    for expected in ["not json at all", r#"{"type":"ack"}"#] {
        match client.next_within(Duration::from_secs(2)).await {
            Err(ClientError::BadMessage { preview, .. }) => assert_eq!(preview, expected),
            other => panic!("{expected}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_wait_ends_at_its_deadline_saying_what_timed_out() {
    let timed_out = |e: ClientError, what: &str| match e {
        ClientError::Timeout { what: said, .. } => assert!(said.contains(what), "{said}"),
        other => panic!("expected a timeout of {what}, got {other:?}"),
    };
    let started = Instant::now();
    let silent = fake_host(Fake::Silent).await;
    let e = Client::connect(Endpoint::Tcp(silent), "t", quick("a")).await.unwrap_err();
    timed_out(e, "opening the WebSocket");

    let mute = fake_host(Fake::NoWelcome).await;
    let e = Client::connect(Endpoint::Tcp(mute), "t", quick("b")).await.unwrap_err();
    assert!(e.to_string().contains("nothing within 0.3 s"), "{e}");
    timed_out(e, "welcome");

    let unanswering = fake_host(Fake::Answers(&[])).await;
    let mut client = Client::connect(Endpoint::Tcp(unanswering), "t", quick("c")).await.unwrap();
    let message_id = client.id();
    let e = client.request(ClientMessage::ListProjects { message_id }).await.unwrap_err();
    timed_out(e, "the reply to listProjects m1");
    let e = client.next_within(Duration::from_millis(200)).await.unwrap_err();
    timed_out(e, "a message from the host");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // A host that went away: reconnecting gives up at its deadline, naming the loss.
    let served = serve().await;
    let mut options = quick("d");
    options.reconnect = Backoff {
        first: Duration::from_millis(20),
        max: Duration::from_millis(50),
        within: Duration::from_millis(400),
    };
    let mut client =
        Client::connect(Endpoint::Tcp(served.proxy.addr), &served.token, options).await.unwrap();
    drop(served);
    let began = Instant::now();
    let e = client.next_within(Duration::from_secs(10)).await.unwrap_err();
    assert!(matches!(e, ClientError::Reconnect { .. }), "{e:?}");
    assert!(e.to_string().contains("not regained within 0.4 s"), "{e}");
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
}
