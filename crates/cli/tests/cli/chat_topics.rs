//! Telegram forum topics: in a forum supergroup each session the General topic starts gets a
//! topic of its own, its reports go there, and two sessions' approvals never mix: an approval
//! without a code in one topic answers that topic's only, and General has none.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nucleic_testkit::mock_telegram::{MockTelegram, Sent};

use crate::chat_bridge::{BridgeProc, ME, TOKEN, cli, drained, pair, setup, show};

const FORUM: i64 = -1001;

/// The first message the bot sent to `thread` of the forum containing `needle`.
async fn in_topic(mock: &MockTelegram, thread: Option<i64>, needle: &str) -> Sent {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = mock.sent();
        if let Some(s) = sent
            .iter()
            .find(|s| s.chat_id == FORUM && s.thread_id == thread && s.text.contains(needle))
        {
            return s.clone();
        }
        let texts: Vec<String> =
            sent.iter().map(|s| format!("{:?} {:?}: {}", s.chat_id, s.thread_id, s.text)).collect();
        assert!(
            Instant::now() < deadline,
            "nothing with {needle:?} in topic {thread:?}: {texts:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_topics_one_forum_topic_per_session_keep_concurrent_approvals_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    mock.set_forum(FORUM);
    let bridge = BridgeProc::start(&home, &mock, "topics");
    pair(&home, &mock).await;

    // Two tasks from General: two topics, each with its session's approval.
    mock.push_message(FORUM, None, ME, "/cc write a.txt containing from a");
    in_topic(&mock, None, "in a topic of its own").await;
    mock.push_message(FORUM, None, ME, "/cc write b.txt containing from b");
    let deadline = Instant::now() + Duration::from_secs(30);
    while mock.topics().len() < 2 {
        assert!(Instant::now() < deadline, "topics: {:?}", mock.topics());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let topics = mock.topics();
    assert!(topics.iter().all(|(chat, _, _)| *chat == FORUM), "{topics:?}");
    let (a, b) = (topics[0].1, topics[1].1);
    let approval_a = in_topic(&mock, Some(a), "Approval ").await;
    let approval_b = in_topic(&mock, Some(b), "Approval ").await;
    assert!(approval_a.text.contains("a.txt") && approval_b.text.contains("b.txt"));

    // General has no approval of its own; each topic's "approve" answers its own only.
    mock.push_message(FORUM, None, ME, "/cc approve");
    in_topic(&mock, None, "No approval waits in this chat").await;
    mock.push_message(FORUM, Some(a), ME, "/cc approve");
    in_topic(&mock, Some(a), "Turn ended").await;
    let (code, out, err) = cli(&home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let sessions: Vec<String> =
        out.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
    assert_eq!(sessions.len(), 2, "{out}");
    let mut worktrees = Vec::new();
    for s in &sessions {
        let summary = show(&home, s).await;
        worktrees.push((
            summary["pendingApprovals"].as_u64().unwrap(),
            PathBuf::from(summary["worktree"]["path"].as_str().unwrap()),
        ));
    }
    let waiting: Vec<&PathBuf> =
        worktrees.iter().filter(|(p, _)| *p == 1).map(|(_, w)| w).collect();
    assert_eq!(waiting.len(), 1, "b's approval still waits: {worktrees:?}");
    assert!(!waiting[0].join("b.txt").exists());
    let done: Vec<&PathBuf> = worktrees.iter().filter(|(p, _)| *p == 0).map(|(_, w)| w).collect();
    assert_eq!(std::fs::read_to_string(done[0].join("a.txt")).unwrap().trim(), "from a");

    // A task in a topic is its session's next turn, reported there.
    mock.push_message(FORUM, Some(b), ME, "/cc approve");
    in_topic(&mock, Some(b), "Turn ended").await;
    mock.push_message(FORUM, Some(a), ME, "/cc write a2.txt containing again");
    let second = mock
        .sent()
        .iter()
        .filter(|s| s.thread_id == Some(a) && s.text.starts_with("Approval "))
        .count();
    assert_eq!(second, 1);
    drained(&mock).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while mock
        .sent()
        .iter()
        .filter(|s| s.thread_id == Some(a) && s.text.starts_with("Approval "))
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "no second approval in topic a");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(mock.topics().len(), 2, "a task in a topic opened another topic");
    bridge.kill().await;
}
