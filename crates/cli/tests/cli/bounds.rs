//! The real daemon against misbehaving clients and careless scripts: unread large replies,
//! an hour of diff polling, a reused pid, an observer without a terminal; its data directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::daemon::{DaemonGuard, cli_env, daemon_pid, git};
use crate::support::nucleic;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

/// A repository with one commit (plus `files`), registered as a project of the daemon in
/// `home` (started on demand); returns the project id.
async fn project(dir: &Path, home: &Path, files: &[(&str, &str)]) -> String {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap();
    }
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let (code, out, err) = cli(home, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    out.trim().to_owned()
}

/// A new simulated session; returns its id.
async fn session(home: &Path, project: &str, prompt: &str) -> String {
    let args = ["session", "new", "--project", project, "--agent", "sim", prompt];
    let (code, out, err) = cli(home, &args).await;
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().next().unwrap().to_owned()
}

/// `session show` as JSON.
async fn show(home: &Path, session: &str) -> Value {
    let (code, out, err) = cli(home, &["session", "show", session]).await;
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Waits (20 s at most) until `done` holds for the session's `show`.
async fn show_until(home: &Path, session: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = show(home, session).await;
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "session {session} never got there: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A WebSocket client of the daemon in `home` that has said hello.
async fn connect(home: &Path, client_id: &str) -> Socket {
    let mut socket = crate::daemon::token_socket(home).await;
    let hello = json!({"type": "hello", "clientID": client_id, "clientName": client_id, "protocolVersion": 1});
    socket.send(Message::Text(hello.to_string().into())).await.unwrap();
    socket
}

/// The next message that is not a session summary (20 s at most).
async fn next_reply(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("a reply within 20 s")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = frame {
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["type"] != "sessionChanged" {
                return v;
            }
        }
    }
}

/// `VmRSS` or `VmHWM` of a process, in bytes.
fn memory(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

const MB: u64 = 1 << 20;

/// 400 `readFile` requests for a 1 MiB file, never read: the daemon carries out a few at a time
/// and queues a bounded number of bytes, so its memory stays small (it was 1.8 GB).
#[tokio::test(flavor = "multi_thread")]
async fn unread_large_replies_keep_the_daemon_small() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let big = "0123456789abcdef".repeat(1 << 16); // 1 MiB of text
    let project = project(dir.path(), &home, &[("big.txt", &big)]).await;
    let session = session(&home, &project, "think").await;
    show_until(&home, &session, |v| v["status"] == "awaiting-input").await;
    let pid = daemon_pid(&home);
    let before = memory(pid, "VmRSS:");

    let mut socket = connect(&home, "greedy").await;
    assert_eq!(next_reply(&mut socket).await["type"], "welcome");
    for i in 0..400 {
        let read = json!({"type": "readFile", "messageID": format!("r{i}"), "sessionID": session, "path": "big.txt"});
        socket.send(Message::Text(read.to_string().into())).await.unwrap();
    }
    // Never read; watch the daemon's memory while it works on them.
    let mut peak = 0;
    let watch_until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < watch_until {
        peak = peak.max(memory(pid, "VmRSS:"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let high_water = memory(pid, "VmHWM:");
    eprintln!(
        "daemon RSS: {} MB before, {} MB peak while 400 x 1 MiB replies went unread (VmHWM {} MB)",
        before / MB,
        peak / MB,
        high_water / MB
    );
    assert!(high_water < 150 * MB, "the daemon grew to {} MB", high_water / MB);
    drop(socket);
}

/// An hour of the cockpit's diff pane (a `gitFacts` with the patch every 5 s: 720 requests,
/// each with a new message id) on a worktree with a 256 KiB change: the catalog does not grow
/// (it grew by every patch: ~1.4 GB an hour with 2 MB patches).
#[tokio::test(flavor = "multi_thread")]
async fn an_hour_of_diff_polling_leaves_the_catalog_flat() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let project = project(dir.path(), &home, &[]).await;
    let session = session(&home, &project, "think").await;
    let shown = show_until(&home, &session, |v| v["status"] == "awaiting-input").await;
    let worktree = PathBuf::from(shown["worktree"]["path"].as_str().unwrap());
    let change: String = (0..8192).map(|i| format!("line {i:05} of the agent's work\n")).collect();
    std::fs::write(worktree.join("work.txt"), &change).unwrap();
    let catalog_size = || {
        ["catalog.sqlite", "catalog.sqlite-wal"]
            .iter()
            .map(|f| std::fs::metadata(home.join(f)).map(|m| m.len()).unwrap_or(0))
            .sum::<u64>()
    };

    let mut socket = connect(&home, "diff-pane").await;
    assert_eq!(next_reply(&mut socket).await["type"], "welcome");
    let poll = |i: usize| json!({"type": "gitFacts", "messageID": format!("g{i}"), "sessionID": session, "includePatch": true});
    socket.send(Message::Text(poll(0).to_string().into())).await.unwrap();
    let first = next_reply(&mut socket).await;
    assert!(first["facts"]["patch"].as_str().unwrap().len() > 256 << 10, "{}", first["type"]);
    let before = catalog_size();
    let started = Instant::now();
    // Eight at a time (as many as the daemon carries out at once per connection).
    for window in (1..720).collect::<Vec<_>>().chunks(8) {
        for &i in window {
            socket.send(Message::Text(poll(i).to_string().into())).await.unwrap();
        }
        for _ in window {
            assert_eq!(next_reply(&mut socket).await["type"], "gitFacts");
        }
    }
    let after = catalog_size();
    eprintln!(
        "catalog: {} KB before, {} KB after 720 gitFacts with a {} KB patch ({:.1} s)",
        before >> 10,
        after >> 10,
        first["facts"]["patch"].as_str().unwrap().len() >> 10,
        started.elapsed().as_secs_f32()
    );
    assert!(after <= before + MB, "the catalog grew from {before} to {after} bytes");
}

/// Two CLI processes with the same pid (each the first process of its own pid namespace, as a
/// pid reused after a reboot or a wrap): the second one's deny is carried out, not answered
/// with the first one's remembered reply.
#[tokio::test(flavor = "multi_thread")]
async fn a_reused_pid_never_gets_another_processs_reply() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let project = project(dir.path(), &home, &[]).await;
    let first = session(&home, &project, "write a.txt containing a").await;
    let second = session(&home, &project, "write b.txt containing b").await;
    let mut requests = Vec::new();
    for s in [&first, &second] {
        show_until(&home, s, |v| v["pendingApprovals"] == 1).await;
        let transcript = home.join("sessions").join(s).join("transcript.jsonl");
        let request = std::fs::read_to_string(transcript)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["kind"]["type"] == "approvalRequested")
            .map(|e| e["kind"]["requestID"].as_str().unwrap().to_owned())
            .unwrap();
        requests.push(request);
    }
    let same_pid = |args: Vec<&str>| {
        let mut all: Vec<String> = ["--pid", "--fork", "--"].map(str::to_owned).to_vec();
        all.push(nucleic().to_str().unwrap().to_owned());
        all.extend(args.iter().map(|a| (*a).to_owned()));
        let home = home.clone();
        async move {
            let out = tokio::process::Command::new("unshare")
                .args(all)
                .env("NUCLEIC_HOME", &home)
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    };
    same_pid(vec!["session", "approve", &first, &requests[0]]).await;
    same_pid(vec!["session", "deny", &second, &requests[1], "not that one"]).await;
    show_until(&home, &second, |v| v["pendingApprovals"] == 0).await;
    let transcript = home.join("sessions").join(&second).join("transcript.jsonl");
    let text = std::fs::read_to_string(transcript).unwrap();
    assert!(
        text.contains("\"approvalResolved\"") && text.contains("not that one"),
        "the deny reached the second session"
    );
}

/// `session attach </dev/null` only watches: the approval stays pending, `session show` lists
/// it, and another client answers it (`session approve` without a request id).
#[tokio::test(flavor = "multi_thread")]
async fn an_observer_without_a_terminal_leaves_approvals_to_others() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let project = project(dir.path(), &home, &[]).await;
    let session = session(&home, &project, "write todo.txt containing buy milk").await;
    let observer = tokio::process::Command::new(nucleic())
        .args(["session", "attach", &session, "--until-idle"])
        .env("NUCLEIC_HOME", &home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let v = show_until(&home, &session, |v| v["pendingApprovals"] == 1).await;
    // Time for the observer to see the request (it used to deny it at once).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let v2 = show(&home, &session).await;
    assert_eq!(v2["pendingApprovals"], 1, "still pending: {v2}");
    let approvals = v["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{v}");
    assert_eq!(approvals[0]["toolName"], "Write");
    assert!(approvals[0]["input"].as_str().unwrap().contains("todo.txt"), "{v}");
    // With one pending, no request id is needed.
    let (code, _, err) = cli(&home, &["session", "approve", &session]).await;
    assert_eq!(code, 0, "{err}");
    let out = tokio::time::timeout(Duration::from_secs(30), observer.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("watching only"), "{stderr}");
    assert!(
        stdout.contains("allowed by token on this machine"),
        "answered by the other CLI: {stdout}"
    );
    assert!(!stdout.contains("denied"), "{stdout}");
    // Nothing pending any more: answering without an id is refused, clearly.
    show_until(&home, &session, |v| v["pendingApprovals"] == 0).await;
    let (code, _, err) = cli(&home, &["session", "deny", &session, "late"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("no pending approval"), "{err}");
}

/// The daemon's home is private, also one an older build left open.
#[tokio::test(flavor = "multi_thread")]
async fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(home.join("daemon.log"), "").unwrap();
    std::fs::set_permissions(home.join("daemon.log"), std::fs::Permissions::from_mode(0o644))
        .unwrap();
    let project = project(dir.path(), &home, &[]).await;
    let _session = session(&home, &project, "think").await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join("sessions")), 0o700);
    for file in ["daemon.log", "token", "daemon.json", "catalog.sqlite"] {
        assert_eq!(mode(&home.join(file)), 0o600, "{file}");
    }
}
