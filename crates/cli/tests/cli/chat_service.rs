//! The chat bridge inside the daemon (`nucleic chat enable`): the daemon polls the bot with no
//! `nucleic chat` process, keeps doing so across its own restart without answering anything
//! twice, refuses a second poller on the same token, stops at `nucleic chat disable`; and the
//! token it keeps in the data dir is out of its agents' reach (by effect: a confined agent's
//! `cat` of it shows nothing).

use std::path::Path;
use std::time::{Duration, Instant};

use nucleic_testkit::mock_telegram::MockTelegram;

use crate::chat_bridge::{
    BridgeProc, ME, TOKEN, cli, code_of, drained, only_session, pair, sent_containing, setup_with,
};
use crate::daemon::{alive, cli_env, daemon_pid};

const ENV: [(&str, &str); 2] =
    [("NUCLEIC_AGENT_ISOLATION", "auto"), ("NUCLEIC_TELEGRAM_TOKEN", TOKEN)];

async fn enable(home: &Path, mock: &MockTelegram) -> (i32, String, String) {
    let api = mock.base_url();
    let args = ["chat", "enable", "--agent", "sim", "--poll-secs", "1", "--api", &api];
    cli_env(home, &args, &ENV).await
}

fn polls(mock: &MockTelegram) -> usize {
    mock.calls().iter().filter(|c| c.contains("getUpdates")).count()
}

/// Stops the daemon of `home` (SIGTERM) and waits until it is gone.
async fn stop_daemon(home: &Path) {
    let pid = daemon_pid(home);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(Instant::now() < deadline, "the daemon (pid {pid}) did not stop within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_runs_the_bridge_across_restarts_refuses_a_second_poller_and_stops_when_disabled()
 {
    assert!(nucleic_host::bubblewrap().is_ok(), "this test needs bubblewrap");
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup_with(dir.path(), &ENV).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();

    let (code, out, err) = enable(&home, &mock).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("chat bridge running"), "{out}");
    let token_mode = std::fs::metadata(home.join("chat/token")).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&token_mode.permissions()) & 0o777, 0o600);
    pair(&home, &mock).await;
    let (_, doctor, _) = cli(&home, &["doctor"]).await;
    assert!(doctor.contains(&format!("chat    running (pid {})", daemon_pid(&home))), "{doctor}");

    // A second poller on the same token refuses, naming the daemon, and never polls.
    let before = polls(&mock);
    let second = BridgeProc::start(&home, &mock, "second");
    let (code, log) = second.exit_within(Duration::from_secs(20)).await;
    assert_ne!(code, Some(0), "{log}");
    assert!(log.contains(&format!("pid {}", daemon_pid(&home))), "{log}");
    // (the daemon's own polls go on; the refused process's would be extra: none is in flight
    // at once, which the mock answers with 409 — the daemon's bridge is still answering)
    drained(&mock).await;
    assert!(polls(&mock) > before);

    // A task through the daemon's bridge, its approval answered with the button: the agent's
    // command reads the bridge's token — and sees nothing of it.
    let token_path = home.join("chat/token");
    let command = format!(
        "run cat {p}; cat /proc/[0-9]*/root{p}; env; echo probe-done",
        p = token_path.display()
    );
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, &format!("/cc {command}"));
    sent_containing(&mock, ME, "Started session", skip).await;
    let skip = mock.sent().len();
    let approval = sent_containing(&mock, ME, "Approval", skip).await;
    let code = code_of(&approval);
    mock.push_callback(ME, ME, approval.message_id, &format!("a:{code}"));
    let session = only_session(&home).await;
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let text = std::fs::read_to_string(&transcript).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("toolResult")) {
            break line.to_owned();
        }
        assert!(Instant::now() < deadline, "no tool result within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(result.contains("probe-done"), "{result}");
    assert!(!result.contains(TOKEN), "the agent read the bridge's token: {result}");

    // The daemon restarts: the bridge comes back with it, and nothing is answered twice.
    stop_daemon(&home).await;
    let helps_before = mock.sent().iter().filter(|s| s.text.contains("/cc <task>")).count();
    let (code, _, err) = cli_env(&home, &["project", "list"], &ENV).await;
    assert_eq!(code, 0, "{err}");
    drained(&mock).await;
    let helps = mock.sent().iter().filter(|s| s.text.contains("/cc <task>")).count();
    assert_eq!(helps, helps_before + 1, "one /cc help, one answer: {:#?}", mock.sent());

    // Disabled: the daemon stops polling and forgets the token; the pairings stay.
    let (code, out, err) = cli(&home, &["chat", "disable"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(!token_path.exists());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = polls(&mock);
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc help");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(polls(&mock), after, "the daemon polled after disable");
    assert_eq!(mock.sent().len(), skip, "answered after disable: {:#?}", mock.sent());
    let (_, list, _) = cli(&home, &["chat", "list"]).await;
    assert!(list.contains(&ME.to_string()), "{list}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_stops_the_daemons_bridge_for_good_and_enable_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup_with(dir.path(), &ENV).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    mock.revoke();
    let (code, out, err) = enable(&home, &mock).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("failed"), "{err}");
    let polled = polls(&mock);
    // Not tried again in a loop (a revoked token stays revoked until enabled anew).
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(polls(&mock), polled, "{:?}", mock.calls());
    let (_, doctor, _) = cli(&home, &["doctor"]).await;
    assert!(doctor.contains("chat    STOPPED"), "{doctor}");
    // The daemon itself is unharmed.
    let (code, _, err) = cli(&home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
}
