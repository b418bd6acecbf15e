//! `nucleic chat --matrix` end to end against a real Synapse (`scripts/install-synapse.sh`) on
//! loopback, inside a loopback-only network namespace, with the daemon running the simulated
//! agent: pairing in a room the bridge joined on invite, a task approved by code, diff, keep;
//! strangers (in the room, and inviting the bot) do nothing; Synapse SIGKILLed and restarted
//! mid-conversation and the bridge SIGKILLed with reports queued or sent-but-unrecorded: every
//! report counted in the room by the user's own client, none lost, none twice.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nucleic_testkit::synapse::{Login, Synapse};
use serde_json::json;

use crate::chat_bridge::{cli, only_session, setup, show};
use crate::support::nucleic;

/// How long a report may take to arrive (a restarted homeserver and the outbox's backoff).
const REPORT_DEADLINE: Duration = Duration::from_secs(120);

/// A running `nucleic chat --matrix`, SIGKILLed when dropped.
pub(crate) struct MatrixBridge {
    child: tokio::process::Child,
    log: PathBuf,
}

impl MatrixBridge {
    pub(crate) fn start(
        home: &Path,
        synapse: &Synapse,
        token_file: &Path,
        tag: &str,
    ) -> MatrixBridge {
        MatrixBridge::start_with(home, synapse, token_file, tag, "sim", &[])
    }

    /// A bridge whose tasks run `agent`, with `env` added to its environment.
    pub(crate) fn start_with(
        home: &Path,
        synapse: &Synapse,
        token_file: &Path,
        tag: &str,
        agent: &str,
        env: &[(String, String)],
    ) -> MatrixBridge {
        let log = home.with_extension(format!("matrix-{tag}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = tokio::process::Command::new(nucleic())
            .args(["chat", "--agent", agent, "--poll-secs", "1", "--matrix"])
            .arg(synapse.base_url())
            .arg("--token-file")
            .arg(token_file)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("NUCLEIC_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        MatrixBridge { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Sends `text` to `room` as `who`.
pub(crate) fn say(synapse: &Synapse, who: &Login, room: &str, text: &str) {
    static TXN: AtomicU64 = AtomicU64::new(0);
    let txn = format!("test-{}-{}", std::process::id(), TXN.fetch_add(1, Ordering::Relaxed));
    let path = format!("/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}", encode(room));
    let body = json!({"msgtype": "m.text", "body": text});
    let (status, answer) = synapse.request("PUT", &path, Some(&who.token), Some(&body)).unwrap();
    assert_eq!(status, 200, "{who:?} could not send to {room}: {answer}");
}

/// A private room made by `who`, the bot invited.
pub(crate) fn room_with(synapse: &Synapse, who: &Login, bot: &str) -> String {
    let body = json!({"preset": "private_chat", "invite": [bot], "is_direct": true});
    let (status, answer) = synapse
        .request("POST", "/_matrix/client/v3/createRoom", Some(&who.token), Some(&body))
        .unwrap();
    assert_eq!(status, 200, "{answer}");
    answer["room_id"].as_str().unwrap().to_owned()
}

/// The bodies of `from`'s messages in `room`, oldest first, as `reader` sees them.
pub(crate) fn messages_of(
    synapse: &Synapse,
    reader: &Login,
    room: &str,
    from: &str,
) -> Vec<String> {
    let path = format!("/_matrix/client/v3/rooms/{}/messages?dir=b&limit=1000", encode(room));
    let (status, answer) = synapse.request("GET", &path, Some(&reader.token), None).unwrap();
    assert_eq!(status, 200, "{answer}");
    let mut bodies: Vec<String> = answer["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "m.room.message" && e["sender"] == from)
        .map(|e| e["content"]["body"].as_str().unwrap_or_default().to_owned())
        .collect();
    bodies.reverse();
    bodies
}

/// Waits until the bot said something containing `needle` in `room` (after its first `skip`
/// messages there); that message.
pub(crate) async fn said(
    synapse: &Synapse,
    reader: &Login,
    room: &str,
    bot: &str,
    needle: &str,
    skip: usize,
) -> String {
    let deadline = Instant::now() + REPORT_DEADLINE;
    loop {
        let bodies = messages_of(synapse, reader, room, bot);
        if let Some(body) = bodies.iter().skip(skip).find(|b| b.contains(needle)) {
            return body.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the bot said nothing containing {needle:?} within {REPORT_DEADLINE:?}; it said: {bodies:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether `user` is joined to `room`, as `reader` sees it.
fn joined(synapse: &Synapse, reader: &Login, room: &str, user: &str) -> bool {
    let path = format!("/_matrix/client/v3/rooms/{}/joined_members", encode(room));
    let (_, answer) = synapse.request("GET", &path, Some(&reader.token), None).unwrap();
    answer["joined"].get(user).is_some()
}

pub(crate) async fn wait_joined(
    synapse: &Synapse,
    reader: &Login,
    room: &str,
    user: &str,
    home: &Path,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !joined(synapse, reader, room, user) {
        let status = std::fs::read_to_string(home.join("chat/status.json")).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "{user} did not join {room} within 60 s; status {status}; log {}",
            std::fs::read_to_string(home.with_extension("matrix-a.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the bridge recorded the inbound update `id`.
fn inbound_seen(home: &Path, id: &str) -> bool {
    let Ok(db) = rusqlite::Connection::open(home.join("chat/chat.db")) else { return false };
    db.query_row("SELECT 1 FROM inbound WHERE update_id = ?1", [id], |_| Ok(())).is_ok()
}

fn outbox_counts(home: &Path) -> nucleic_chat::outbox::OutboxCounts {
    nucleic_chat::Outbox::open(&home.join("chat/chat.db")).unwrap().counts().unwrap()
}

/// How many of the bot's messages in `bodies` name `"nope-i"`, for each i in `0..n`.
fn tally(bodies: &[String], prefix: &str, n: usize) -> (usize, usize) {
    let per: Vec<usize> = (0..n)
        .map(|i| bodies.iter().filter(|b| b.contains(&format!("\"{prefix}-{i}\""))).count())
        .collect();
    let lost = per.iter().filter(|c| **c == 0).count();
    let duplicates = per.iter().map(|c| c.saturating_sub(1)).sum();
    (lost, duplicates)
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_matrix_on_a_real_synapse_pairs_runs_a_task_and_loses_nothing_across_restarts() {
    if nucleic_testkit::isolated!(
        "chat_matrix_on_a_real_synapse_pairs_runs_a_task_and_loses_nothing_across_restarts"
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mut synapse = Synapse::start(&dir.path().join("synapse")).unwrap();
    println!("Synapse started in {:?}", synapse.started_in);
    let bot = synapse.user("nucleic", "bot-password").unwrap();
    let alice = synapse.user("alice", "alice-password").unwrap();
    let eve = synapse.user("eve", "eve-password").unwrap();
    let token_file = dir.path().join("matrix-token");
    std::fs::write(&token_file, format!("{}\n", bot.token)).unwrap();
    let bridge = MatrixBridge::start(&home, &synapse, &token_file, "a");

    // A stranger's invite before any code is open: not joined.
    let eves_room = room_with(&synapse, &eve, &bot.user_id);
    let eves_invite = format!("invite:{eves_room}:{}", eve.user_id);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !inbound_seen(&home, &eves_invite) {
        assert!(Instant::now() < deadline, "eve's invite was not seen: {}", bridge.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Pairing: a code opened, alice's invite joined, `/cc pair` binds her.
    let (code, out, err) = cli(&home, &["chat", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    let pairing = out.trim().to_owned();
    let room = room_with(&synapse, &alice, &bot.user_id);
    wait_joined(&synapse, &alice, &room, &bot.user_id, &home).await;
    say(&synapse, &alice, &room, &format!("/cc pair {pairing}"));
    said(&synapse, &alice, &room, &bot.user_id, "Paired", 0).await;
    assert!(!joined(&synapse, &eve, &eves_room, &bot.user_id), "joined a stranger's room");

    // A task; its approval carries its code and the commands that answer it.
    say(&synapse, &alice, &room, "/cc write hello.txt containing hi");
    said(&synapse, &alice, &room, &bot.user_id, "Started session", 0).await;
    let approval = said(&synapse, &alice, &room, &bot.user_id, "Approval ", 0).await;
    let code = approval.split_whitespace().nth(1).unwrap().to_owned();
    assert!(approval.contains(&format!("/cc approve {code}")), "{approval}");
    let session = only_session(&home).await;

    // eve, let into the room, approves with the right code: nothing happens.
    let invite = json!({"user_id": eve.user_id});
    let path = format!("/_matrix/client/v3/rooms/{}/invite", encode(&room));
    assert_eq!(synapse.request("POST", &path, Some(&alice.token), Some(&invite)).unwrap().0, 200);
    let path = format!("/_matrix/client/v3/join/{}", encode(&room));
    assert_eq!(synapse.request("POST", &path, Some(&eve.token), Some(&json!({}))).unwrap().0, 200);
    say(&synapse, &eve, &room, &format!("/cc approve {code}"));
    let skip = messages_of(&synapse, &alice, &room, &bot.user_id).len();
    say(&synapse, &alice, &room, "/cc help");
    said(&synapse, &alice, &room, &bot.user_id, "/cc <task>", skip).await;
    let summary = show(&home, &session).await;
    assert_eq!(summary["pendingApprovals"], 1, "a stranger's approval did nothing: {summary}");

    // Synapse SIGKILLed and restarted while ten commands' replies are in flight.
    for i in 0..10 {
        say(&synapse, &alice, &room, &format!("/cc project during-{i}"));
    }
    let down = synapse.restart().unwrap();
    println!("Synapse restarted: {down:?} without an answer (its start {:?})", synapse.started_in);
    said(&synapse, &alice, &room, &bot.user_id, "\"during-9\"", 0).await;
    let bodies = messages_of(&synapse, &alice, &room, &bot.user_id);
    let (lost, duplicates) = tally(&bodies, "during", 10);
    println!("Synapse restarted mid-conversation: {lost} reports lost, {duplicates} duplicates");
    assert_eq!((lost, duplicates), (0, 0), "{bodies:#?}");

    // The conversation goes on: approval by code, diff, keep.
    let skip = bodies.len();
    say(&synapse, &alice, &room, &format!("/cc approve {}", code.to_lowercase()));
    said(&synapse, &alice, &room, &bot.user_id, &format!("{code} approved"), skip).await;
    said(&synapse, &alice, &room, &bot.user_id, "Turn ended", skip).await;
    let by = crate::chat_bridge::answered_by(&home, &session);
    assert_eq!(by, [format!("matrix:{}", alice.user_id)], "recorded as the Matrix user");
    say(&synapse, &alice, &room, "/cc diff");
    said(&synapse, &alice, &room, &bot.user_id, "hello.txt", skip).await;
    say(&synapse, &alice, &room, "/cc keep");
    said(&synapse, &alice, &room, &bot.user_id, "Kept session", skip).await;
    let worktree =
        PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap().to_owned());
    assert_eq!(std::fs::read_to_string(worktree.join("hello.txt")).unwrap().trim(), "hi");

    // The bridge SIGKILLed once twenty replies are recorded; five that were sent are marked
    // unsent again (a crash after the homeserver took them, before the outbox knew): after a
    // restart every reply is in the room exactly once (the same txnId is the same event).
    let before = outbox_counts(&home);
    for i in 0..20 {
        say(&synapse, &alice, &room, &format!("/cc project killed-{i}"));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = outbox_counts(&home);
        if now.queued + now.sent >= before.queued + before.sent + 20 {
            break;
        }
        assert!(Instant::now() < deadline, "the replies were not recorded: {}", bridge.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bridge.kill().await;
    let queued_at_kill = outbox_counts(&home).queued;
    let db = rusqlite::Connection::open(home.join("chat/chat.db")).unwrap();
    let unrecorded = db
        .execute(
            "UPDATE outbox SET state = 'queued', next_at = 0 WHERE id IN
             (SELECT id FROM outbox WHERE state = 'sent' AND body LIKE '%killed-%' ORDER BY id DESC LIMIT 5)",
            [],
        )
        .unwrap();
    drop(db);
    let bridge = MatrixBridge::start(&home, &synapse, &token_file, "b");
    said(&synapse, &alice, &room, &bot.user_id, "\"killed-19\"", 0).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while outbox_counts(&home).queued > 0 {
        assert!(Instant::now() < deadline, "the outbox did not drain: {}", bridge.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let bodies = messages_of(&synapse, &alice, &room, &bot.user_id);
    let (lost, duplicates) = tally(&bodies, "killed", 20);
    println!(
        "bridge SIGKILLed with {queued_at_kill} replies queued and {unrecorded} sent but unrecorded: {lost} lost, {duplicates} duplicates"
    );
    assert_eq!((lost, duplicates), (0, 0), "{bodies:#?}");

    // Another room of alice's (no state yet): joined, answered plainly.
    let second = room_with(&synapse, &alice, &bot.user_id);
    wait_joined(&synapse, &alice, &second, &bot.user_id, &home).await;
    say(&synapse, &alice, &second, "/cc session");
    said(&synapse, &alice, &second, &bot.user_id, "No session in this chat yet", 0).await;

    // eve was never answered, anywhere; the strangers were counted.
    assert!(messages_of(&synapse, &alice, &room, &bot.user_id).iter().all(|b| !b.contains("eve")));
    assert!(!joined(&synapse, &eve, &eves_room, &bot.user_id));
    let (code, out, err) = cli(&home, &["chat", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&alice.user_id), "{out}");
    assert!(err.contains("1 strangers ignored"), "{err}");
    let log = bridge.log();
    assert!(!log.contains("nucleic: "), "the bridge failed: {log}");
    bridge.kill().await;
}

/// `from`'s file events in `room` (`m.file`, `m.image`): each one's name and `mxc://` URI.
fn files_of(synapse: &Synapse, reader: &Login, room: &str, from: &str) -> Vec<(String, String)> {
    let path = format!("/_matrix/client/v3/rooms/{}/messages?dir=b&limit=1000", encode(room));
    let (status, answer) = synapse.request("GET", &path, Some(&reader.token), None).unwrap();
    assert_eq!(status, 200, "{answer}");
    answer["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["sender"] == from && e["content"]["url"].is_string())
        .map(|e| {
            let c = &e["content"];
            (c["body"].as_str().unwrap().to_owned(), c["url"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The bytes of `mxc`, downloaded by `reader` (authenticated media).
fn download(synapse: &Synapse, reader: &Login, mxc: &str) -> Vec<u8> {
    let (server, id) = mxc.strip_prefix("mxc://").unwrap().split_once('/').unwrap();
    let path = format!("/_matrix/client/v1/media/download/{}/{}", encode(server), encode(id));
    let (status, bytes) = synapse.raw("GET", &path, Some(&reader.token), "", b"").unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    bytes
}

/// `who` uploads `bytes` and sends them to `room` as an `m.file` declaring `declared` bytes.
fn send_file(synapse: &Synapse, who: &Login, room: &str, name: &str, bytes: &[u8], declared: u64) {
    let path = format!("/_matrix/media/v3/upload?filename={}", encode(name));
    let (status, answer) =
        synapse.raw("POST", &path, Some(&who.token), "application/octet-stream", bytes).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    static TXN: AtomicU64 = AtomicU64::new(0);
    let txn = format!("file-{}-{}", std::process::id(), TXN.fetch_add(1, Ordering::Relaxed));
    let path = format!("/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}", encode(room));
    let body = json!({"msgtype": "m.file", "body": name, "url": answer["content_uri"],
        "info": {"size": declared, "mimetype": "application/octet-stream"}});
    let (status, answer) = synapse.request("PUT", &path, Some(&who.token), Some(&body)).unwrap();
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_matrix_files_go_both_ways_through_a_real_synapse_confined_and_size_capped() {
    if nucleic_testkit::isolated!(
        "chat_matrix_files_go_both_ways_through_a_real_synapse_confined_and_size_capped"
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
    let bridge = MatrixBridge::start(&home, &synapse, &token_file, "a");
    let (code, out, err) = cli(&home, &["chat", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    let room = room_with(&synapse, &alice, &bot.user_id);
    wait_joined(&synapse, &alice, &room, &bot.user_id, &home).await;
    say(&synapse, &alice, &room, &format!("/cc pair {}", out.trim()));
    said(&synapse, &alice, &room, &bot.user_id, "Paired", 0).await;
    say(&synapse, &alice, &room, "/cc write hello.txt containing hi from matrix");
    let approval = said(&synapse, &alice, &room, &bot.user_id, "Approval ", 0).await;
    let code = approval.split_whitespace().nth(1).unwrap().to_owned();
    say(&synapse, &alice, &room, &format!("/cc approve {code}"));
    said(&synapse, &alice, &room, &bot.user_id, "Turn ended", 0).await;
    let session = only_session(&home).await;
    let worktree =
        PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap().to_owned());

    // Out: an upload and an m.file whose bytes alice downloads intact.
    say(&synapse, &alice, &room, "/cc send hello.txt");
    said(&synapse, &alice, &room, &bot.user_id, "Sending hello.txt", 0).await;
    let deadline = Instant::now() + REPORT_DEADLINE;
    while files_of(&synapse, &alice, &room, &bot.user_id).is_empty() {
        assert!(Instant::now() < deadline, "no file event: {}", bridge.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let files = files_of(&synapse, &alice, &room, &bot.user_id);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].0, "hello.txt");
    assert_eq!(
        download(&synapse, &alice, &files[0].1),
        std::fs::read(worktree.join("hello.txt")).unwrap()
    );

    // A symlink to a secret outside, `../`: refused, nothing of the secret in the room.
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "MATRIX-SECRET-44e1\n").unwrap();
    std::os::unix::fs::symlink(&secret, worktree.join("leak")).unwrap();
    let skip = messages_of(&synapse, &alice, &room, &bot.user_id).len();
    say(&synapse, &alice, &room, "/cc send leak");
    said(&synapse, &alice, &room, &bot.user_id, "Not sent: ", skip).await;
    say(&synapse, &alice, &room, "/cc send ../secret.txt");
    said(&synapse, &alice, &room, &bot.user_id, "/cc send \"../secret.txt\"", skip).await;
    let files = files_of(&synapse, &alice, &room, &bot.user_id);
    assert_eq!(files.len(), 1, "a file went out: {files:?}");
    let bodies = messages_of(&synapse, &alice, &room, &bot.user_id);
    assert!(bodies.iter().all(|b| !b.contains("MATRIX-SECRET")), "{bodies:#?}");

    // In: alice's file becomes the session's attachment; 50 MiB declared and a lying size are
    // refused and not kept.
    send_file(&synapse, &alice, &room, "notes.txt", b"matrix-notes-5d0b\n", 18);
    said(&synapse, &alice, &room, &bot.user_id, "Attached notes.txt", skip).await;
    let attachments = home.join("attachments").join(&session);
    assert_eq!(std::fs::read(attachments.join("notes.txt")).unwrap(), b"matrix-notes-5d0b\n");
    send_file(&synapse, &alice, &room, "huge.bin", b"tiny", 50 << 20);
    said(&synapse, &alice, &room, &bot.user_id, "Not taken: huge.bin is 50.0 MiB", skip).await;
    send_file(&synapse, &alice, &room, "liar.bin", &vec![1u8; 21 << 20], 10);
    let liar = said(
        &synapse,
        &alice,
        &room,
        &bot.user_id,
        "Not taken: liar.bin could not be downloaded",
        skip,
    )
    .await;
    println!("refused: {liar}");
    assert!(!attachments.join("huge.bin").exists() && !attachments.join("liar.bin").exists());

    say(&synapse, &alice, &room, "/cc keep");
    said(&synapse, &alice, &room, &bot.user_id, "Kept session", skip).await;
    assert!(!attachments.exists(), "the attachments outlived the session");
    bridge.kill().await;
}
