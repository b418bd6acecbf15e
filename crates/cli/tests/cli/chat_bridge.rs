//! `nucleic chat` end to end: the bridge binary against the testkit's mock Bot API and the
//! daemon running the simulated agent. Pairing, a task, approvals by button and by code, diff,
//! report, keep, rollback (only when confirmed twice); what strangers can do (nothing); and the
//! faults: a second poller, `409`, `401`, `429 retry_after`, `502`, the bridge SIGKILLed with
//! reports queued, an update delivered twice, a flood of strangers, the host SIGKILLed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nucleic_testkit::mock_telegram::{MockTelegram, SendFault, Sent};

use crate::daemon::{DaemonGuard, cli_env, git};
use crate::support::nucleic;

pub(crate) const TOKEN: &str = "4242:chat-bridge-test";
pub(crate) const ME: i64 = 42;
const STRANGER: i64 = 666;

/// A running `nucleic chat`, SIGKILLed when dropped.
pub(crate) struct BridgeProc {
    child: tokio::process::Child,
    log: PathBuf,
}

impl BridgeProc {
    pub(crate) fn start(home: &Path, mock: &MockTelegram, tag: &str) -> BridgeProc {
        BridgeProc::start_with(home, mock, tag, "sim", &[])
    }

    /// A bridge whose tasks run `agent`, with `env` added to its environment.
    pub(crate) fn start_with(
        home: &Path,
        mock: &MockTelegram,
        tag: &str,
        agent: &str,
        env: &[(String, String)],
    ) -> BridgeProc {
        let log = home.with_extension(format!("bridge-{tag}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = tokio::process::Command::new(nucleic())
            .args(["chat", "--agent", agent, "--poll-secs", "1", "--api", &mock.base_url()])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("NUCLEIC_HOME", home)
            .env("NUCLEIC_TELEGRAM_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        BridgeProc { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the bridge to exit on its own; its exit code and log.
    pub(crate) async fn exit_within(mut self, within: Duration) -> (Option<i32>, String) {
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the bridge did not stop within {within:?}: {}", self.log()))
            .unwrap();
        (status.code(), self.log())
    }

    pub(crate) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

pub(crate) async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

/// A home with a project (one repository) and its daemon started.
pub(crate) async fn setup(dir: &Path) -> (PathBuf, DaemonGuard) {
    setup_with(dir, &[]).await
}

/// [`setup`] with `env` in the environment the daemon starts with (its agents inherit it).
pub(crate) async fn setup_with(dir: &Path, env: &[(&str, &str)]) -> (PathBuf, DaemonGuard) {
    let home = dir.join("home");
    let guard = DaemonGuard(home.clone());
    add_repository_with(&home, &dir.join("repo"), env).await;
    (home, guard)
}

/// A new repository at `root` (one commit on `main`), added to `home` as a project.
pub(crate) async fn add_repository(home: &Path, root: &Path) {
    add_repository_with(home, root, &[]).await;
}

/// [`add_repository`] with `env` for the CLI (a daemon it starts inherits it).
async fn add_repository_with(home: &Path, root: &Path, env: &[(&str, &str)]) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hi\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "init"]);
    let (code, _, err) = cli_env(home, &["project", "add", root.to_str().unwrap()], env).await;
    assert_eq!(code, 0, "{err}");
}

/// Waits until the bot sent a message to `chat` containing `needle` (after the first `skip`
/// messages); that message.
pub(crate) async fn sent_containing(
    mock: &MockTelegram,
    chat: i64,
    needle: &str,
    skip: usize,
) -> Sent {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = mock.sent();
        if let Some(s) =
            sent.iter().skip(skip).find(|s| s.chat_id == chat && s.text.contains(needle))
        {
            return s.clone();
        }
        if Instant::now() >= deadline {
            let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
            panic!("no message containing {needle:?} within 30 s; sent: {texts:#?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The code of an "Approval K7P2 …" report.
pub(crate) fn code_of(report: &Sent) -> String {
    let word = report.text.split_whitespace().nth(1).unwrap();
    assert_eq!(word.len(), 4, "{}", report.text);
    word.to_owned()
}

/// Pairs `ME` through `nucleic chat pair` and `/cc pair`.
pub(crate) async fn pair(home: &Path, mock: &MockTelegram) {
    let (code, out, err) = cli(home, &["chat", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    let pairing = out.trim().to_owned();
    assert_eq!(pairing.len(), 8, "{out}");
    mock.push_message(ME, None, ME, &format!("/cc pair {pairing}"));
    sent_containing(mock, ME, "Paired", 0).await;
}

/// Every update pushed so far was handled: a `/cc help` sent now is answered.
pub(crate) async fn drained(mock: &MockTelegram) {
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc help");
    sent_containing(mock, ME, "/cc <task>", skip).await;
}

pub(crate) async fn only_session(home: &Path) -> String {
    let (code, out, err) = cli(home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let ids: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(ids.len(), 1, "{out}");
    ids[0].to_owned()
}

/// Who answered each approval of `session`, in order (its transcript's `approvalResolved.by`).
pub(crate) fn answered_by(home: &Path, session: &str) -> Vec<String> {
    let transcript = home.join("sessions").join(session).join("transcript.jsonl");
    std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"]["type"] == "approvalResolved")
        .map(|e| e["kind"]["by"].as_str().unwrap_or_default().to_owned())
        .collect()
}

pub(crate) async fn show(home: &Path, session: &str) -> serde_json::Value {
    let (code, out, err) = cli(home, &["session", "show", session]).await;
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_bridge_pairs_runs_a_task_approves_by_button_and_by_code_and_ignores_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "a");

    // A stranger's task before pairing: ignored, not a word back.
    mock.push_message(STRANGER, None, STRANGER, "/cc write evil.txt containing x");
    pair(&home, &mock).await;
    // A second bridge on the same token is refused, saying why.
    let second = BridgeProc::start(&home, &mock, "second");
    let (code, log) = second.exit_within(Duration::from_secs(20)).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("already polls this bot token"), "{log}");

    mock.push_message(ME, None, ME, "/cc write hello.txt containing hi");
    sent_containing(&mock, ME, "Started session", 0).await;
    let approval = sent_containing(&mock, ME, "Approval ", 0).await;
    let code = code_of(&approval);
    assert!(approval.text.contains("Write"), "{}", approval.text);
    let keyboard = &approval.body["reply_markup"]["inline_keyboard"][0];
    assert_eq!(keyboard[0]["callback_data"], format!("a:{code}"));
    let session = only_session(&home).await;

    // Strangers: the valid code by command, the button, in a group too — nothing happens.
    mock.push_message(STRANGER, None, STRANGER, &format!("/cc approve {code}"));
    mock.push_message(-100, None, STRANGER, &format!("/cc approve {code}"));
    mock.push_callback(STRANGER, STRANGER, approval.message_id, &format!("a:{code}"));
    drained(&mock).await;
    let summary = show(&home, &session).await;
    assert_eq!(summary["pendingApprovals"], 1, "a stranger's approval did nothing: {summary}");
    let worktree = PathBuf::from(summary["worktree"]["path"].as_str().unwrap());
    assert!(!worktree.join("hello.txt").exists(), "a stranger's approval wrote the file");
    assert!(mock.sent().iter().all(|s| s.chat_id != STRANGER && s.chat_id != -100));

    // The button, pressed by the paired user: approved, the file written, the turn reported.
    mock.push_callback(ME, ME, approval.message_id, &format!("a:{code}"));
    sent_containing(&mock, ME, &format!("{code} approved"), 0).await;
    sent_containing(&mock, ME, "Turn ended", 0).await;
    assert_eq!(std::fs::read_to_string(worktree.join("hello.txt")).unwrap().trim(), "hi");
    // The same button again: already resolved.
    let skip = mock.sent().len();
    mock.push_callback(ME, ME, approval.message_id, &format!("a:{code}"));
    sent_containing(&mock, ME, "already resolved", skip).await;

    // A follow-up, approved by code; an unknown code answered plainly.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc say write second.txt containing two");
    let second = sent_containing(&mock, ME, "Approval ", skip).await;
    let second_code = code_of(&second);
    assert_ne!(second_code, code);
    mock.push_message(ME, None, ME, "/cc approve ZZ9Z");
    sent_containing(&mock, ME, "No approval or plan ZZ9Z", skip).await;
    mock.push_message(ME, None, ME, &format!("/cc approve {}", second_code.to_lowercase()));
    sent_containing(&mock, ME, &format!("{second_code} approved"), skip).await;
    sent_containing(&mock, ME, "Turn ended", skip).await;
    // Both answers are recorded as the chat user's, not as the bridge's token.
    let by = answered_by(&home, &session);
    assert_eq!(by, [format!("telegram:{ME}"), format!("telegram:{ME}")], "who answered");

    // diff, report, keep.
    mock.push_message(ME, None, ME, "/cc diff");
    let diff = sent_containing(&mock, ME, "hello.txt", skip).await;
    assert!(diff.text.contains("second.txt"), "{}", diff.text);
    mock.push_message(ME, None, ME, "/cc report");
    let report = sent_containing(&mock, ME, "Report of session", skip).await;
    assert!(report.text.contains("2 files"), "{}", report.text);
    mock.push_message(ME, None, ME, "/cc keep");
    sent_containing(&mock, ME, "Kept session", skip).await;
    let summary = show(&home, &session).await;
    assert_eq!(summary["pendingApprovals"], 0);
    // rollback: nothing until it is confirmed by a second one.
    mock.push_message(ME, None, ME, "/cc rollback");
    sent_containing(&mock, ME, "Send /cc rollback again", skip).await;
    drained(&mock).await;
    assert!(worktree.join("hello.txt").exists(), "one rollback removed the work");
    mock.push_message(ME, None, ME, "/cc rollback");
    sent_containing(&mock, ME, "Rolled back session", skip).await;
    assert!(!worktree.exists(), "the confirmed rollback left the worktree");

    // The strangers were counted, never answered.
    let (code, _, err) = cli(&home, &["chat", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 strangers ignored (4 messages)"), "{err}");
    for s in mock.sent() {
        println!("→ {}: {}", s.chat_id, s.text.replace('\n', " ⏎ "));
    }
    bridge.kill().await;
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn queued(home: &Path) -> u64 {
    nucleic_chat::Outbox::open(&home.join("chat/chat.db")).unwrap().counts().unwrap().queued
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_bridge_faults_lose_no_report_run_a_redelivered_update_once_and_stop_on_409_and_401() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "a");
    pair(&home, &mock).await;

    // 429 retry_after 2 s, then a 502 (backoff 1 s): the reply comes, after both.
    let calls = |mock: &MockTelegram| mock.calls().iter().filter(|c| *c == "sendMessage").count();
    let before = calls(&mock);
    mock.fail_next_sends([SendFault::RetryAfter(2), SendFault::BadGateway]);
    let started = Instant::now();
    drained(&mock).await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(3), "retry_after and backoff not honoured: {waited:?}");
    assert_eq!(calls(&mock) - before, 3, "one try per fault, then the send");

    // 20 replies queued behind a 429, the bridge SIGKILLed, an update delivered twice while it
    // is down: after a restart every reply arrives, and the update ran once.
    mock.fail_next_sends([SendFault::RetryAfter(4)]);
    for i in 0..20 {
        mock.push_message(ME, None, ME, &format!("/cc project nope-{i}"));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while queued(&home) < 20 {
        assert!(Instant::now() < deadline, "the replies were not queued: {}", bridge.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let queued_at_kill = queued(&home);
    bridge.kill().await;
    let twice = mock.push_message(ME, None, ME, "/cc new-session Once");
    mock.redeliver(twice);
    let bridge = BridgeProc::start(&home, &mock, "b");
    sent_containing(&mock, ME, "\"nope-19\"", 0).await;
    sent_containing(&mock, ME, "titled \"Once\"", 0).await;
    let sent = mock.sent();
    let lost =
        (0..20).filter(|i| !sent.iter().any(|s| s.text.contains(&format!("\"nope-{i}\"")))).count();
    let nope = sent.iter().filter(|s| s.text.contains("\"nope-")).count();
    let once = sent.iter().filter(|s| s.text.contains("titled \"Once\"")).count();
    assert_eq!((lost, nope, once), (0, 20, 1), "0 lost, 0 duplicated, the redelivery ignored");
    println!(
        "SIGKILL with {queued_at_kill} replies queued: 0 lost, {} duplicates; an update delivered twice ran {once} time(s)",
        nope - 20
    );

    // Guessing a pairing code: 4 "not valid" answers, then silence, even for the right code.
    let guesser = 777;
    for i in 0..10 {
        mock.push_message(guesser, None, guesser, &format!("/cc pair WRONG{i:03}"));
    }
    let (_, right, _) = cli(&home, &["chat", "pair"]).await;
    mock.push_message(guesser, None, guesser, &format!("/cc pair {}", right.trim()));
    drained(&mock).await;
    let to_guesser: Vec<Sent> = mock.sent().into_iter().filter(|s| s.chat_id == guesser).collect();
    assert_eq!(to_guesser.len(), 4, "{to_guesser:#?}");
    assert!(to_guesser.iter().all(|s| s.text.contains("not valid")));

    // A flood of 1,000 strangers' messages: handled in bounded time and memory, none answered.
    let pid = bridge.child.id().unwrap();
    let rss_before = rss_kib(pid);
    let sent_before = mock.sent().len();
    let started = Instant::now();
    for i in 0..1000 {
        mock.push_message(10_000 + i, None, 10_000 + i, &format!("/cc approve 2222 {i}"));
    }
    drained(&mock).await;
    let flood = started.elapsed();
    let grew = rss_kib(pid).saturating_sub(rss_before);
    assert!(flood < Duration::from_secs(60), "1,000 strangers took {flood:?}");
    assert!(grew < 64 * 1024, "the bridge grew {grew} KiB for 1,000 strangers");
    assert_eq!(mock.sent().len(), sent_before + 1, "only the help reply");
    println!("1,000 strangers: {flood:?}, RSS +{grew} KiB, 0 answered");

    // Another poller (409): the bridge stops at once, saying why, without polling on.
    mock.set_conflict(true);
    let polls = mock.calls().iter().filter(|c| *c == "getUpdates").count();
    let (code, log) = bridge.exit_within(Duration::from_secs(15)).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("another process polls this bot token"), "{log}");
    let after = mock.calls().iter().filter(|c| *c == "getUpdates").count();
    assert!(after - polls <= 2, "polled on after the 409: {}", after - polls);
    mock.set_conflict(false);

    // The token revoked (401): stopped, the status says so.
    let bridge = BridgeProc::start(&home, &mock, "c");
    drained(&mock).await;
    mock.revoke();
    let (code, log) = bridge.exit_within(Duration::from_secs(15)).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("refused the bot token"), "{log}");
    let status = std::fs::read_to_string(home.join("chat/status.json")).unwrap();
    assert!(status.contains("\"failed\"") && status.contains("refused the bot token"), "{status}");
    let (_, doctor, _) = cli(&home, &["doctor"]).await;
    assert!(doctor.contains("chat    STOPPED: Telegram refused the bot token"), "{doctor}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_bridge_outlives_its_host_killed_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "a");
    pair(&home, &mock).await;
    mock.push_message(ME, None, ME, "/cc write a.txt containing a");
    sent_containing(&mock, ME, "Approval ", 0).await;

    // The host SIGKILLed; a command sent while it is down is answered once it is back.
    let pid = crate::daemon::daemon_pid(&home);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while crate::daemon::alive(pid) {
        assert!(Instant::now() < deadline, "the host did not die");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc session");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (code, _, err) = cli(&home, &["project", "list"]).await; // starts a new host
    assert_eq!(code, 0, "{err}");
    let answer = sent_containing(&mock, ME, "Session ", skip).await;
    assert!(answer.text.contains("status"), "{}", answer.text);

    // The bridge follows new sessions on the new host: a task's approval is reported.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc write b.txt containing b");
    sent_containing(&mock, ME, "Started session", skip).await;
    let approval = sent_containing(&mock, ME, "wants Write b.txt", skip).await;
    assert!(approval.text.starts_with("Approval "), "{}", approval.text);
    let code = code_of(&approval);
    mock.push_message(ME, None, ME, &format!("/cc approve {code}"));
    sent_containing(&mock, ME, &format!("{code} approved"), skip).await;
    let log = bridge.log();
    assert!(!log.contains("nucleic: "), "the bridge failed: {log}");
    bridge.kill().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_bridge_a_task_of_100k_characters_is_carried_whole_and_every_message_back_fits() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "long");
    pair(&home, &mock).await;

    // 100,000 characters of content (multi-byte ones among them), in one message.
    let content: String = "0123456789abcdefghé".chars().cycle().take(100_000).collect();
    let task = format!("/cc write long.txt containing {content}");
    mock.push_message(ME, None, ME, &task);
    sent_containing(&mock, ME, "Started session", 0).await;
    let approval = sent_containing(&mock, ME, "Approval ", 0).await;
    let code = code_of(&approval);
    let session = only_session(&home).await;
    // The host has the whole task: nothing cut on the way in.
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let asked = std::fs::read_to_string(&transcript).unwrap();
    let user_text = asked
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["kind"]["type"] == "userText")
        .map(|e| e["kind"]["text"].as_str().unwrap_or_default().to_owned())
        .unwrap();
    assert!(user_text.ends_with(&content), "the task was cut: {} chars", user_text.chars().count());

    mock.push_message(ME, None, ME, &format!("/cc approve {code}"));
    sent_containing(&mock, ME, "Turn ended", 0).await;
    let summary = show(&home, &session).await;
    let worktree = PathBuf::from(summary["worktree"]["path"].as_str().unwrap());
    let written = std::fs::read_to_string(worktree.join("long.txt")).unwrap();
    assert_eq!(written, format!("{content}\n"), "the file is the whole content");
    // Every message back fits Telegram's limit (the mock refuses a longer one, as the Bot API
    // does), and none was refused.
    for s in mock.sent() {
        let units = s.text.encode_utf16().count();
        assert!(units <= 4096, "a message of {units} UTF-16 units was sent");
    }
    let (_, status, _) = cli(&home, &["chat", "list"]).await;
    assert!(!status.contains("too long"), "{status}");
    bridge.kill().await;
}
