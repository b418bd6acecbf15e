//! Agents outlive the daemon: each runs under a keeper, so a daemon SIGKILLed mid-turn is
//! replaced by one that re-adopts the same agent process — the transcript continues with no gap
//! and no duplicate, a pending approval is asked again under a new id (the old id is refused),
//! and the turn completes. When the keeper dies too, the session falls back to "interrupted"
//! and resumes on a follow-up.

use std::path::Path;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::daemon::{DaemonGuard, Socket, alive, cli_env, daemon_pid, empty_repo, token_socket};

/// A client of the daemon in `home`, said hello, subscribed to `session` from seq 1.
pub(crate) async fn subscribed(home: &Path, session: &str) -> Socket {
    let mut socket = token_socket(home).await;
    for message in [
        json!({"type": "hello", "clientID": "keeper-test", "clientName": "test", "protocolVersion": 1}),
        json!({"type": "subscribe", "messageID": "s", "sessionID": session, "fromSeq": 1}),
    ] {
        socket.send(Message::Text(message.to_string().into())).await.unwrap();
    }
    socket
}

/// Reads frames until `done` says so; returns every event seen (in order) and the last frame.
pub(crate) async fn read_until(
    socket: &mut Socket,
    what: &str,
    events: &mut Vec<Value>,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}; events: {events:#?}"))
            .expect("the socket closed")
            .unwrap();
        let Message::Text(text) = frame else { continue };
        let frame: Value = serde_json::from_str(&text).unwrap();
        let before = events.len();
        match frame["type"].as_str() {
            Some("event") => events.push(frame["event"].clone()),
            Some("events") => {
                events.extend(frame["events"].as_array().cloned().unwrap_or_default());
            }
            _ => {}
        }
        // A frame may carry several events: any of them may be the awaited one.
        if done(&frame) || events[before..].iter().any(&done) {
            return frame;
        }
    }
}

/// The keeper of `session` and the simulated agent it runs (pids, from `/proc`).
fn keeper_and_agent(session: &str) -> (i32, i32) {
    let procs: Vec<(i32, i32, String)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok()?;
            Some((p, ppid, cmd.replace('\0', " ")))
        })
        .collect();
    let keeper = procs
        .iter()
        .find(|(_, _, cmd)| cmd.contains("__keeper") && cmd.contains(session))
        .map(|(p, _, _)| *p)
        .expect("the session's keeper runs");
    let descends = |mut p: i32| {
        for _ in 0..16 {
            match procs.iter().find(|(q, _, _)| *q == p) {
                Some((_, parent, _)) if *parent == keeper => return true,
                Some((_, parent, _)) => p = *parent,
                None => return false,
            }
        }
        false
    };
    let agent = procs
        .iter()
        .find(|(p, _, cmd)| cmd.contains("__sim-agent") && descends(*p))
        .map(|(p, _, _)| *p)
        .expect("the keeper's agent runs");
    (keeper, agent)
}

fn kill9(pid: i32) {
    let _ =
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
}

async fn wait_gone(pid: i32, what: &str) {
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} (pid {pid}) is still alive after 5 s");
}

/// Starts a simulated session whose agent asks before writing `notes.txt`, and a client that
/// watches it until the approval is asked; returns (session, events received, request id).
async fn session_waiting_for_approval(home: &Path, root: &Path) -> (String, Vec<Value>, String) {
    let (_, project, err) = cli_env(home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert!(!project.trim().is_empty(), "{err}");
    let args = [
        "session",
        "new",
        "--project",
        project.trim(),
        "--agent",
        "sim",
        "write notes.txt containing kept",
    ];
    let (code, out, err) = cli_env(home, &args, &[]).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let mut socket = subscribed(home, &session).await;
    let mut received = Vec::new();
    read_until(&mut socket, "the approval", &mut received, |e| {
        e["kind"]["type"] == "approvalRequested"
    })
    .await;
    let request = received.last().unwrap()["kind"]["requestID"].as_str().unwrap().to_owned();
    (session, received, request)
}

fn transcript(home: &Path, session: &str) -> Vec<Value> {
    let path = home.join("sessions").join(session).join("transcript.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every event a client received is on disk unchanged, seqs run 1..n, and no event of the
/// agent's output was written twice.
fn assert_gapless(on_disk: &[Value], received: &[Value]) {
    for (i, event) in received.iter().enumerate() {
        assert_eq!(&on_disk[i], event, "event {} differs", i + 1);
    }
    let seqs: Vec<u64> = on_disk.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seqs have a gap");
    let mut origins: Vec<&str> = on_disk.iter().filter_map(|e| e["origin"].as_str()).collect();
    let all = origins.len();
    assert!(all > 0, "kept agents' events carry origins");
    origins.sort_unstable();
    origins.dedup();
    assert_eq!(origins.len(), all, "an event of the agent's output was written twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sigkilled_daemon_is_replaced_and_the_same_agent_finishes_its_turn() {
    the_same_agent_finishes_its_turn_after(nix::sys::signal::Signal::SIGKILL).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_handing_over_on_sighup_leaves_its_agents_to_the_next() {
    the_same_agent_finishes_its_turn_after(nix::sys::signal::Signal::SIGHUP).await;
}

/// The daemon, sent `signal` while its agent waits for an approval, goes away; its agent stays,
/// and the next daemon re-adopts it and finishes the turn.
async fn the_same_agent_finishes_its_turn_after(signal: nix::sys::signal::Signal) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = empty_repo(dir.path());
    let (session, received, old_request) = session_waiting_for_approval(&home, &root).await;
    let (keeper, agent) = keeper_and_agent(&session);

    let daemon = daemon_pid(&home);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon), signal).unwrap();
    wait_gone(daemon, "the signalled daemon").await;
    assert!(alive(keeper) && alive(agent), "the keeper and its agent outlive the daemon");

    // The CLI starts a new daemon, which re-adopts the agent: the session is still live.
    let _ = std::fs::remove_file(home.join("daemon.json"));
    let (code, out, err) = cli_env(&home, &["session", "show", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["status"], "awaiting-approval", "{summary}");
    assert_eq!(summary["pendingApprovals"], 1, "{summary}");

    // The approval is asked again under a new id; the old id is answered `cancelled`.
    let mut socket = subscribed(&home, &session).await;
    let mut events = Vec::new();
    let prefix = format!("{old_request}@");
    read_until(&mut socket, "the approval asked again", &mut events, |e| {
        e["kind"]["type"] == "approvalRequested"
            && e["kind"]["requestID"].as_str().is_some_and(|id| id.starts_with(&prefix))
    })
    .await;
    let new_request = events.last().unwrap()["kind"]["requestID"].as_str().unwrap().to_owned();

    // An answer to the pre-crash request can never apply; the new one is answered.
    for (message, request) in [("old", &old_request), ("new", &new_request)] {
        let decide = json!({"type": "decide", "messageID": message, "sessionID": session, "requestID": request, "decision": {"type": "allow"}});
        socket.send(Message::Text(decide.to_string().into())).await.unwrap();
        let reply = read_until(&mut socket, "the decision's reply", &mut events, |f| {
            f["messageID"] == message
        })
        .await;
        if message == "old" {
            assert_eq!(reply["type"], "error", "{reply}");
            assert_eq!(reply["code"], "alreadyResolved", "{reply}");
        } else {
            assert_eq!(reply["type"], "ack", "{reply}");
        }
    }
    // The turn may have ended before the decision's ack arrived (its events were read then).
    let ended = |e: &Value| e["kind"]["type"] == "turnCompleted";
    if !events.iter().any(ended) {
        read_until(&mut socket, "the turn's end", &mut events, ended).await;
    }
    assert!(alive(agent), "the same agent process finished the turn");
    let worktree = summary["worktree"]["path"].as_str().unwrap();
    let notes = std::fs::read_to_string(Path::new(worktree).join("notes.txt")).unwrap();
    assert!(notes.contains("kept"), "{notes}");

    let on_disk = transcript(&home, &session);
    assert_gapless(&on_disk, &received);
    let asked: Vec<&str> = on_disk
        .iter()
        .filter(|e| e["kind"]["type"] == "approvalRequested")
        .map(|e| e["kind"]["requestID"].as_str().unwrap())
        .collect();
    assert_eq!(asked, [old_request.as_str(), new_request.as_str()], "asked once, then once again");
    let cancelled = on_disk.iter().any(|e| {
        e["kind"]["type"] == "approvalResolved"
            && e["kind"]["requestID"] == old_request.as_str()
            && e["kind"]["decision"] == "cancelled"
    });
    assert!(cancelled, "the old request is answered cancelled");

    // Stopping the session leaves no process behind: the keeper is released and exits.
    let (code, _, err) = cli_env(&home, &["session", "stop", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    wait_gone(agent, "the stopped agent").await;
    wait_gone(keeper, "the released keeper").await;
    let keepers = std::fs::read_dir(home.join("keepers")).unwrap().count();
    assert_eq!(keepers, 0, "the released keeper removed its directory");
}

#[tokio::test(flavor = "multi_thread")]
async fn when_the_keeper_dies_too_the_session_is_interrupted_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = empty_repo(dir.path());
    let (session, received, _) = session_waiting_for_approval(&home, &root).await;
    let (keeper, agent) = keeper_and_agent(&session);
    let daemon = daemon_pid(&home);
    kill9(daemon);
    kill9(keeper);
    wait_gone(daemon, "the killed daemon").await;
    wait_gone(keeper, "the killed keeper").await;

    std::fs::remove_file(home.join("daemon.json")).unwrap();
    let (code, out, err) = cli_env(&home, &["session", "show", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    let mut summary: Value = serde_json::from_str(&out).unwrap();
    for _ in 0..100 {
        if summary["status"] == "finished" || summary["status"] == "error" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (_, out, _) = cli_env(&home, &["session", "show", &session], &[]).await;
        summary = serde_json::from_str(&out).unwrap();
    }
    assert!(summary["status"] == "finished" || summary["status"] == "error", "{summary}");
    assert_eq!(summary["pendingApprovals"], 0, "{summary}");
    wait_gone(agent, "the agent whose keeper died").await;
    assert_gapless(&transcript(&home, &session), &received);

    // The session resumes its conversation in a new agent, continuing the same transcript.
    let before = transcript(&home, &session).len();
    let (code, _, err) = cli_env(&home, &["session", "send", &session, "say hi"], &[]).await;
    assert_eq!(code, 0, "{err}");
    let mut socket = subscribed(&home, &session).await;
    let mut events = Vec::new();
    read_until(&mut socket, "the resumed agent's turn", &mut events, |e| {
        e["seq"].as_u64().is_some_and(|s| s as usize > before)
            && e["kind"]["type"] == "turnCompleted"
    })
    .await;
    let on_disk = transcript(&home, &session);
    let seqs: Vec<u64> = on_disk.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seq continues without a gap");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keeper_of_another_version_is_refused_clearly_and_its_agent_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = empty_repo(dir.path());
    let (session, received, _) = session_waiting_for_approval(&home, &root).await;
    let (keeper, agent) = keeper_and_agent(&session);
    let daemon = daemon_pid(&home);
    kill9(daemon);
    wait_gone(daemon, "the killed daemon").await;
    // As if an older Nucleic had started this keeper.
    let keeper_dir =
        std::fs::read_dir(home.join("keepers")).unwrap().next().unwrap().unwrap().path();
    let spec_path = keeper_dir.join("spec.json");
    let mut spec: Value =
        serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    spec["version"] = json!(0);
    std::fs::write(&spec_path, spec.to_string()).unwrap();

    std::fs::remove_file(home.join("daemon.json")).unwrap();
    let (code, out, err) = cli_env(&home, &["session", "show", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["status"], "finished", "{summary}");
    assert_eq!(summary["pendingApprovals"], 0, "{summary}");
    wait_gone(agent, "the agent of the refused keeper").await;
    wait_gone(keeper, "the refused keeper").await;
    let log = std::fs::read_to_string(home.join("daemon.log")).unwrap_or_default();
    assert!(log.contains("another Nucleic version"), "{log}");
    assert_gapless(&transcript(&home, &session), &received);
    let on_disk = transcript(&home, &session);
    let last = on_disk.iter().rev().find(|e| e["kind"]["type"] == "runFinished").unwrap();
    assert_eq!(last["kind"]["outcome"], "interrupted", "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_holds_the_agent_back_and_its_keeper_loses_no_output() {
    use nucleic_agents::keeper::{KeeperDir, KeeperSpec, Reach, attach, release, start_keeper};
    use nucleic_agents::process::SpawnSpec;
    if nucleic_testkit::isolated!(
        "a_full_disk_holds_the_agent_back_and_its_keeper_loses_no_output",
        mounts
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(mounted.success(), "mount tmpfs");
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 900 * 1024]).unwrap();
    let keeper_dir = KeeperDir(dir.path().join("k"));
    let spawn = SpawnSpec {
        program: "sh".into(),
        args: vec!["-c".into(), "head -c 300000 /dev/zero | tr '\\0' x; echo; echo done".into()],
        cwd: dir.path().to_owned(),
        env: Vec::new(),
        isolation: None,
    };
    start_keeper(&crate::support::nucleic(), &keeper_dir, &KeeperSpec::new(spawn)).unwrap();
    let attached = attach(&keeper_dir, Reach::Starting, Duration::from_secs(10)).await.unwrap();
    let agent = i32::try_from(attached.hello.pid).unwrap();
    let (mut stdout, _stderr, exit) = attached.streams.into_parts();
    let mut reader = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut all).await;
        all
    });
    // The spool's disk is full: the keeper stops reading, so the agent waits on its pipe.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!reader.is_finished(), "the output cannot have ended on a full disk");
    assert!(alive(agent), "the agent is held back, not lost");
    // Space comes back: everything arrives, in order, then the exit.
    std::fs::remove_file(&filler).unwrap();
    let all = tokio::time::timeout(Duration::from_secs(20), &mut reader)
        .await
        .expect("the output ends once there is room")
        .unwrap();
    assert_eq!(all.len(), 300_006, "nothing lost or repeated");
    assert!(all[..300_000].iter().all(|b| *b == b'x'));
    assert_eq!(&all[300_000..], b"\ndone\n");
    let end =
        tokio::time::timeout(Duration::from_secs(10), exit).await.expect("the exit is recorded");
    assert_eq!(end.code, Some(0));
    release(&keeper_dir, Duration::from_secs(5)).unwrap();
    for _ in 0..100 {
        if !keeper_dir.path().exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!keeper_dir.path().exists(), "the released keeper removed its directory");
}

#[tokio::test(flavor = "multi_thread")]
async fn discarding_a_session_whose_agent_waits_for_input_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = empty_repo(dir.path());
    let (_, project, err) = cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert!(!project.trim().is_empty(), "{err}");
    let args = ["session", "new", "--project", project.trim(), "--agent", "sim", "say hello"];
    let (code, out, err) = cli_env(&home, &args, &[]).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let mut socket = subscribed(&home, &session).await;
    let mut events = Vec::new();
    read_until(&mut socket, "the turn's end", &mut events, |e| {
        e["kind"]["type"] == "turnCompleted"
    })
    .await;
    let (keeper, agent) = keeper_and_agent(&session);
    let (code, _, err) = cli_env(&home, &["session", "discard", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    wait_gone(agent, "the discarded session's agent").await;
    wait_gone(keeper, "the discarded session's keeper").await;
    let keepers = std::fs::read_dir(home.join("keepers")).unwrap().count();
    assert_eq!(keepers, 0, "the keeper removed its directory");
}
