//! Matrix threads, one per session (`/cc threads on`), against a real Synapse: two tasks from a
//! room's main timeline each report in a thread of their own, and `/cc approve` without a code
//! inside one thread answers only that thread's session; in the main timeline it answers none.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nucleic_testkit::synapse::{Login, Synapse};
use serde_json::json;

use crate::chat_bridge::{cli, setup, show};
use crate::chat_matrix::{MatrixBridge, encode, room_with, said, say, wait_joined};

/// The bot's messages in `room` that are in a thread: (thread root, body), oldest first.
fn in_threads(synapse: &Synapse, reader: &Login, room: &str, bot: &str) -> Vec<(String, String)> {
    let path = format!("/_matrix/client/v3/rooms/{}/messages?dir=b&limit=1000", encode(room));
    let (status, answer) = synapse.request("GET", &path, Some(&reader.token), None).unwrap();
    assert_eq!(status, 200, "{answer}");
    let mut found: Vec<(String, String)> = answer["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "m.room.message" && e["sender"] == bot)
        .filter(|e| e["content"]["m.relates_to"]["rel_type"] == "m.thread")
        .map(|e| {
            let root = e["content"]["m.relates_to"]["event_id"].as_str().unwrap_or_default();
            (root.to_owned(), e["content"]["body"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    found.reverse();
    found
}

/// Sends `text` as `who` in the thread of `root`.
fn say_in_thread(synapse: &Synapse, who: &Login, room: &str, root: &str, text: &str) {
    static TXN: AtomicU64 = AtomicU64::new(0);
    let txn = format!("thread-{}-{}", std::process::id(), TXN.fetch_add(1, Ordering::Relaxed));
    let path = format!("/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}", encode(room));
    let body = json!({"msgtype": "m.text", "body": text,
        "m.relates_to": {"rel_type": "m.thread", "event_id": root}});
    let (status, answer) = synapse.request("PUT", &path, Some(&who.token), Some(&body)).unwrap();
    assert_eq!(status, 200, "{answer}");
}

/// Waits until the bot's thread messages hold `needle` `count` times; those (root, body)s.
async fn threaded(
    synapse: &Synapse,
    reader: &Login,
    room: &str,
    bot: &str,
    needle: &str,
    count: usize,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hits: Vec<_> = in_threads(synapse, reader, room, bot)
            .into_iter()
            .filter(|(_, body)| body.contains(needle))
            .collect();
        if hits.len() >= count {
            return hits;
        }
        assert!(Instant::now() < deadline, "no {count} thread messages with {needle:?}: {hits:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_matrix_threads_one_per_session_keep_concurrent_approvals_apart() {
    if nucleic_testkit::isolated!(
        "chat_matrix_threads_one_per_session_keep_concurrent_approvals_apart"
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let synapse = Synapse::start(&dir.path().join("synapse")).unwrap();
    let bot = synapse.user("nucleic", "bot-password").unwrap();
    let alice = synapse.user("alice", "alice-password").unwrap();
    let token_file = dir.path().join("matrix-token");
    std::fs::write(&token_file, format!("{}\n", bot.token)).unwrap();
    let bridge = MatrixBridge::start(&home, &synapse, &token_file, "threads");
    let (code, out, err) = cli(&home, &["chat", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    let room = room_with(&synapse, &alice, &bot.user_id);
    wait_joined(&synapse, &alice, &room, &bot.user_id, &home).await;
    say(&synapse, &alice, &room, &format!("/cc pair {}", out.trim()));
    said(&synapse, &alice, &room, &bot.user_id, "Paired", 0).await;
    say(&synapse, &alice, &room, "/cc threads on");
    said(&synapse, &alice, &room, &bot.user_id, "thread of its own", 0).await;

    // Two tasks from the main timeline: each session gets a thread, its approval goes there.
    say(&synapse, &alice, &room, "/cc write a.txt containing a");
    say(&synapse, &alice, &room, "/cc write b.txt containing b");
    let approvals = threaded(&synapse, &alice, &room, &bot.user_id, "Approval ", 2).await;
    assert_ne!(approvals[0].0, approvals[1].0, "both in one thread: {approvals:#?}");
    let a_thread = approvals.iter().find(|(_, b)| b.contains("a.txt")).unwrap().0.clone();

    // No code in the main timeline: nothing waits there.
    say(&synapse, &alice, &room, "/cc approve");
    said(&synapse, &alice, &room, &bot.user_id, "No approval waits in this chat", 0).await;
    // No code in a's thread: a's approval, and only it.
    say_in_thread(&synapse, &alice, &room, &a_thread, "/cc approve");
    threaded(&synapse, &alice, &room, &bot.user_id, "Turn ended", 1).await;
    let (code, list, err) = cli(&home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let mut written = Vec::new();
    for id in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let summary = show(&home, id).await;
        let worktree = PathBuf::from(summary["worktree"]["path"].as_str().unwrap());
        written.push((
            worktree.join("a.txt").exists(),
            worktree.join("b.txt").exists(),
            summary["pendingApprovals"].as_u64(),
        ));
    }
    written.sort();
    assert_eq!(written, [(false, false, Some(1)), (true, false, Some(0))], "{list}");
    // Off: the next session reports in the main timeline again.
    say(&synapse, &alice, &room, "/cc threads off");
    said(&synapse, &alice, &room, &bot.user_id, "report here again", 0).await;
    bridge.kill().await;
}
