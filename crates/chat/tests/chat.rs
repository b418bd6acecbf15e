//! The Telegram transport and the outbox against the testkit's mock Bot API: updates long
//! polled and confirmed, a redelivery not acted on twice, and every fault of a flaky service
//! (`429 retry_after`, `502`, a connection broken before or after the message was taken, no
//! answer): 0 messages lost, each chat's order kept, duplicates only where the service could not
//! tell us, counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use nucleic_chat::outbox::{Attempt, Outbox};
use nucleic_chat::telegram::{self, Button, ChatRef, Telegram, TelegramError, Update};
use nucleic_testkit::mock_telegram::{MockTelegram, SendFault};

const TOKEN: &str = "123:test-token";

async fn bot() -> (MockTelegram, Telegram) {
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bot = Telegram::new(nucleic_http::Client::public(), &mock.base_url(), TOKEN)
        .with_send_deadline(Duration::from_millis(500));
    (mock, bot)
}

#[tokio::test]
async fn updates_are_long_polled_confirmed_by_the_offset_and_a_redelivery_is_not_new() {
    let (mock, bot) = bot().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = Outbox::open(&dir.path().join("chat.db")).unwrap();
    // A message arriving while the poll waits ends the wait.
    let pushed = {
        let mock = &mock;
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            mock.push_message(-100, Some(7), 42, "/cc fix the test")
        }
    };
    let (updates, first) = tokio::join!(bot.get_updates(None, Duration::from_secs(5)), pushed);
    let updates = updates.unwrap();
    assert_eq!(
        updates,
        vec![Update::Message {
            update_id: first,
            chat: ChatRef { chat_id: -100, thread_id: Some(7) },
            user: 42,
            message_id: 1,
            text: Some("/cc fix the test".into()),
            file: None,
        }]
    );
    assert!(outbox.receive(telegram::TRANSPORT, &first.to_string(), 0).unwrap());
    mock.redeliver(first);
    let again = bot.get_updates(Some(first), Duration::ZERO).await.unwrap();
    assert_eq!(again.len(), 2, "the same update, twice");
    for update in &again {
        assert!(!outbox.receive(telegram::TRANSPORT, &update.update_id().to_string(), 1).unwrap());
    }
    // The offset past it confirms it: an empty poll comes back after its wait.
    let started = std::time::Instant::now();
    let none = bot.get_updates(Some(first + 1), Duration::from_secs(1)).await.unwrap();
    assert!(none.is_empty() && started.elapsed() >= Duration::from_millis(900));
    let press = mock.push_callback(42, 42, 5, "approve:K7P2");
    match &bot.get_updates(Some(first + 1), Duration::ZERO).await.unwrap()[..] {
        [Update::Callback { update_id, data, message_id, .. }] => {
            assert_eq!((*update_id, data.as_str(), *message_id), (press, "approve:K7P2", Some(5)));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_flaky_service_loses_nothing_keeps_each_chats_order_and_duplicates_only_what_it_took() {
    let (mock, bot) = bot().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = Outbox::open(&dir.path().join("chat.db")).unwrap();
    let chats =
        [ChatRef { chat_id: 1, thread_id: None }, ChatRef { chat_id: -5, thread_id: Some(3) }];
    for i in 0..20 {
        let chat = chats[i % 2];
        let buttons = vec![vec![Button { label: "Approve".into(), data: format!("a:{i}") }]];
        outbox
            .enqueue(
                telegram::TRANSPORT,
                &chat.key(),
                &telegram::outbox_body(&format!("report {i}"), &buttons),
                0,
            )
            .unwrap();
    }
    let faults = [
        SendFault::RetryAfter(7),
        SendFault::BadGateway,
        SendFault::DropBeforeAccept,
        SendFault::DropAfterAccept,
        SendFault::HangAfterAccept,
        SendFault::BadGateway,
        SendFault::DropAfterAccept,
    ];
    mock.fail_next_sends(faults);
    let taken_twice = faults
        .iter()
        .filter(|f| matches!(f, SendFault::DropAfterAccept | SendFault::HangAfterAccept))
        .count();
    // A clock the test moves: backoff and retry_after are waited out without sleeping.
    let mut now = 0i64;
    let mut rounds = 0;
    while outbox.counts().unwrap().queued > 0 {
        rounds += 1;
        assert!(rounds < 200, "the outbox did not drain: {:?}", outbox.counts().unwrap());
        telegram::send_due(&bot, &outbox, now).await.unwrap();
        now = outbox.next_due(telegram::TRANSPORT).unwrap().unwrap_or(now).max(now);
    }
    let counts = outbox.counts().unwrap();
    assert_eq!((counts.sent, counts.failed), (20, 0));
    let sent = mock.sent();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for s in &sent {
        *seen.entry(s.text.clone()).or_default() += 1;
    }
    assert_eq!(seen.len(), 20, "0 lost: every report reached the chat");
    let duplicates: usize = seen.values().map(|n| n - 1).sum();
    assert_eq!(
        duplicates, taken_twice,
        "duplicates are exactly the sends taken before the answer broke"
    );
    for chat in chats {
        let order: Vec<usize> = sent
            .iter()
            .filter(|s| s.chat_id == chat.chat_id && s.thread_id == chat.thread_id)
            .map(|s| s.text.trim_start_matches("report ").parse().unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "chat {chat:?} out of order: {order:?}");
    }
    assert!(sent[0].body["reply_markup"]["inline_keyboard"][0][0]["callback_data"].is_string());
    println!(
        "20 reports through 7 faults: 0 lost, {duplicates} duplicates (taken, then no answer), {rounds} rounds"
    );
}

#[tokio::test]
async fn retry_after_is_honoured_and_a_revoked_token_or_a_second_poller_says_so() {
    let (mock, bot) = bot().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = Outbox::open(&dir.path().join("chat.db")).unwrap();
    outbox.enqueue(telegram::TRANSPORT, "9", &telegram::outbox_body("hello", &[]), 0).unwrap();
    mock.fail_next_sends([SendFault::RetryAfter(7)]);
    telegram::send_due(&bot, &outbox, 0).await.unwrap();
    assert!(outbox.due(telegram::TRANSPORT, 6_999).unwrap().is_empty(), "sent before retry_after");
    assert_eq!(outbox.due(telegram::TRANSPORT, 7_000).unwrap().len(), 1);

    mock.set_conflict(true);
    let e = bot.get_updates(None, Duration::ZERO).await.unwrap_err();
    assert!(matches!(e, TelegramError::Conflict(_)), "{e}");
    mock.set_conflict(false);

    mock.revoke();
    let e = bot.send_message(ChatRef { chat_id: 9, thread_id: None }, "x", &[]).await.unwrap_err();
    assert!(e.to_string().contains("bot token was refused"), "{e}");
    assert!(
        matches!(e.attempt(), Attempt::Retry { retry_after: None, .. }),
        "kept for a fixed token"
    );
    telegram::send_due(&bot, &outbox, 7_000).await.unwrap();
    assert_eq!(outbox.counts().unwrap().queued, 1, "nothing lost while the token is revoked");
    assert!(mock.sent().is_empty());
}

#[tokio::test]
async fn a_document_goes_out_as_multipart_in_its_topic_and_files_come_in_size_capped() {
    let (mock, bot) = bot().await;
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let spool = nucleic_chat::files::spool(&dir.path().join("out"), &bytes).unwrap();
    let file = nucleic_chat::transport::OutFile {
        name: "a b\"c.bin".into(),
        mime: "application/octet-stream".into(),
        size: 70_000,
        spool,
    };
    let to = ChatRef { chat_id: -100, thread_id: Some(9) };
    bot.send_document(to, &file, "caption here").await.unwrap();
    let sent = mock.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].method.as_str(), sent[0].chat_id, sent[0].thread_id),
        ("sendDocument", -100, Some(9))
    );
    assert_eq!(sent[0].text, "caption here");
    assert_eq!(sent[0].file, Some(("a b_c.bin".to_owned(), bytes.clone())), "bytes intact");

    // In: a document decodes with its file, downloads whole, and is refused past the limit.
    let pushed = mock.push_document(42, 42, "in.bin", &bytes, 70_000, Some("/cc say look"));
    let updates = bot.get_updates(None, Duration::ZERO).await.unwrap();
    let Some(Update::Message { update_id, text, file: Some(file), .. }) = updates.first() else {
        panic!("{updates:?}")
    };
    assert_eq!((*update_id, text.as_deref()), (pushed, Some("/cc say look")));
    assert_eq!((file.name.as_str(), file.size), ("in.bin", Some(70_000)));
    assert_eq!(bot.download(&file.locator, 70_000).await.unwrap(), bytes);
    let refused = bot.download(&file.locator, 69_999).await.unwrap_err();
    assert!(refused.to_string().contains("limit"), "{refused}");
    assert_eq!(mock.downloads().len(), 1, "the refused one was not downloaded");
}
