//! The daemon end to end: `nucleic project …` / `nucleic session …` start it on demand and
//! drive sessions of the simulated agent through the sync protocol.

use std::path::Path;
use std::time::Duration;

use crate::support::nucleic;

/// Runs `nucleic <args>` with `home` as NUCLEIC_HOME; returns (exit code, stdout, stderr).
async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

pub(crate) async fn cli_env(
    home: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let out = tokio::process::Command::new(nucleic())
        .args(args)
        .env("NUCLEIC_HOME", home)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stops the daemon of `home` when dropped.
pub(crate) struct DaemonGuard(pub(crate) std::path::PathBuf);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(self.0.join("daemon.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(pid) = v["pid"].as_i64()
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_drives_sessions_through_an_auto_started_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hi\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "init"]);

    let (code, project, err) = cli(&home, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let mode = std::fs::metadata(home.join("token")).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);

    let (code, out, err) = cli(
        &home,
        &[
            "session",
            "new",
            "--project",
            &project,
            "--agent",
            "sim",
            "write hello.txt containing hi",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();

    // Wait for the approval, then answer it from another CLI process.
    let mut request = None;
    for _ in 0..100 {
        let (_, out, _) = cli(&home, &["session", "show", &session]).await;
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v["pendingApprovals"] == 1 {
            request = Some(v);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(request.is_some(), "no approval appeared");
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let text = std::fs::read_to_string(&transcript).unwrap();
    let request_id = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["kind"]["type"] == "approvalRequested")
        .map(|e| e["kind"]["requestID"].as_str().unwrap().to_owned())
        .unwrap();
    let (code, _, err) = cli(&home, &["session", "approve", &session, &request_id]).await;
    assert_eq!(code, 0, "{err}");
    // A second answer is refused, naming who answered.
    let (code, _, err) = cli(&home, &["session", "deny", &session, &request_id, "too late"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("alreadyResolved") && err.contains("token on this machine"), "{err}");

    for _ in 0..100 {
        let (_, out, _) = cli(&home, &["session", "diff", &session]).await;
        if out.contains("hello.txt") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, diff, _) = cli(&home, &["session", "diff", &session]).await;
    assert!(diff.contains("untracked") && diff.contains("hello.txt"), "{diff}");
    let (code, _, err) = cli(&home, &["session", "merge", &session, "-m", "add hello"]).await;
    assert_eq!(code, 2, "main is checked out in the repo: refused without --update-checkout");
    assert!(err.contains("checked out"), "{err}");
    let (code, _, err) =
        cli(&home, &["session", "merge", &session, "-m", "add hello", "--update-checkout"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(git(&root, &["show", "main:hello.txt"]), "hi\n");
    let (_, list, _) = cli(&home, &["session", "list"]).await;
    assert!(list.contains(&session), "{list}");
}

pub(crate) fn daemon_pid(home: &Path) -> i32 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("daemon.json")).unwrap()).unwrap();
    v["pid"].as_i64().unwrap() as i32
}

pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'))
}

/// An empty git repository (`main`, one empty commit) at `dir/repo`.
pub(crate) fn empty_repo(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    root
}

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket to the daemon of `home` (port from `daemon.json`, the token), before hello.
pub(crate) async fn token_socket(home: &Path) -> Socket {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let daemon: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("daemon.json")).unwrap()).unwrap();
    let port = daemon["port"].as_u64().unwrap();
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    let mut request = format!("ws://127.0.0.1:{port}/ws").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {}", token.trim()).parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// A WebSocket client of the daemon in `home`, subscribed to `session` from seq 1.
async fn watch(home: &Path, session: &str) -> Socket {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let mut socket = token_socket(home).await;
    let hello = serde_json::json!({"type": "hello", "clientID": "w", "clientName": "watcher", "protocolVersion": 1});
    socket.send(Message::Text(hello.to_string().into())).await.unwrap();
    let sub = serde_json::json!({"type": "subscribe", "messageID": "s", "sessionID": session, "fromSeq": 1});
    socket.send(Message::Text(sub.to_string().into())).await.unwrap();
    socket
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_streams_a_session_and_answers_its_approvals_on_the_terminal() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    let (_, project, _) = cli(&home, &["project", "add", root.to_str().unwrap()]).await;
    let (code, out, err) = cli(
        &home,
        &[
            "session",
            "new",
            "--project",
            project.trim(),
            "--agent",
            "sim",
            "write todo.txt containing buy milk",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    // A terminal on stdin (util-linux `script` runs the CLI on a pseudo-terminal and types what
    // it reads): only then does attach ask.
    let command = format!("{} session attach {session} --until-idle", nucleic().display());
    let mut child = tokio::process::Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .env("NUCLEIC_HOME", &home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"y\n").await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    drop(stdin);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("> write todo.txt containing buy milk"), "{stdout}");
    assert!(stdout.contains("allowed by token on this machine"), "{stdout}");
    assert!(stdout.contains("· turn done"), "{stdout}");
}

/// A client subscribed to a session whose agent is gone keeps following it: when a follow-up
/// resumes the session (a new agent, a new writer), the same subscription carries on with the
/// next seq — no resubscribe, no gap, no duplicate.
#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_to_a_dormant_session_follows_its_resumption() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    let (_, project, err) = cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert!(!project.trim().is_empty(), "{err}");
    let (code, out, err) = cli_env(
        &home,
        &["session", "new", "--project", project.trim(), "--agent", "sim", "think"],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) =
        cli_env(&home, &["session", "attach", &session, "--until-idle"], &[]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli_env(&home, &["session", "stop", &session], &[]).await;
    assert_eq!(code, 0, "{err}");

    let mut socket = watch(&home, &session).await;

    // Reads events until `done` holds for one of them (20 s at most); returns their seqs.
    async fn read_until(
        socket: &mut (
                 impl StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin
             ),
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> Vec<u64> {
        let mut seqs = Vec::new();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), socket.next())
                .await
                .expect("events keep coming")
                .unwrap()
                .unwrap();
            let Message::Text(t) = frame else { continue };
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            if v["type"] == "event" {
                seqs.push(v["event"]["seq"].as_u64().unwrap());
                if done(&v["event"]) {
                    return seqs;
                }
            }
        }
    }
    // The catch-up ends with the stop.
    let mut seqs = read_until(&mut socket, |e| e["kind"]["type"] == "runFinished").await;
    // A follow-up resumes the session; the same subscription sees the new agent's turn.
    let (code, _, err) = cli_env(&home, &["session", "send", &session, "say hi"], &[]).await;
    assert_eq!(code, 0, "{err}");
    seqs.extend(read_until(&mut socket, |e| e["kind"]["type"] == "turnCompleted").await);
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "no gap, no duplicate");
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(text.lines().skip(1).any(|l| l.contains("\"say hi\"")), "the follow-up is recorded");
}
