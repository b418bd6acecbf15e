#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `spawn_acp` with the real pinned Gemini CLI (`gemini --acp`) against the mock Gemini API,
//! each test in its own loopback-only network namespace: a streamed turn, a write allowed and
//! done through `fs/write_text_file`, a denied one reaching the model, a write outside the
//! worktree refused, a cancelled turn; and an agent that never answers `initialize`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nucleic_agents::acp::{AcpHandle, AcpOptions, AcpProfile, GEMINI, spawn_acp};
use nucleic_agents::{AgentControl, AgentOutput, NativeEvent};
use nucleic_protocol::{Decision, EventKind, RunFinished, RunOutcome};
use nucleic_testkit::agents::{gemini_offline_env, real_gemini};
use nucleic_testkit::mock_gemini::{MockGemini, Reply, Script, function_responses};
use tokio::sync::mpsc;

/// Gemini CLI starts in 2–5 s on a busy machine; a turn adds a few more.
const WAIT: Duration = Duration::from_secs(90);

struct Setup {
    dir: tempfile::TempDir,
    mock: MockGemini,
}

impl Setup {
    async fn new(script: Script) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        Setup { dir, mock: MockGemini::start(script).await.unwrap() }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn options(&self) -> AcpOptions {
        let mut o = AcpOptions::new(&GEMINI, real_gemini(), self.ws());
        o.common.env = gemini_offline_env(&self.mock.base_url(), self.dir.path())
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        o
    }
}

/// Collects events until one matches `stop` (returned last); panics on timeout or exit.
async fn until(
    rx: &mut mpsc::Receiver<AgentOutput>,
    seen: &mut Vec<NativeEvent>,
    stop: impl Fn(&NativeEvent) -> bool,
) -> EventKind {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; seen: {seen:#?}"));
        match out {
            Some(AgentOutput::Events(events)) => {
                for e in events {
                    seen.push(e.clone());
                    if stop(&e) {
                        return e.kind;
                    }
                }
            }
            other => panic!("agent ended early: {other:?}; seen: {seen:#?}"),
        }
    }
}

async fn exited(rx: &mut mpsc::Receiver<AgentOutput>) -> RunFinished {
    loop {
        match tokio::time::timeout(WAIT, rx.recv()).await.expect("no exit in time") {
            Some(AgentOutput::Exited(f)) => return f,
            Some(AgentOutput::Events(_)) => {}
            None => panic!("output ended without Exited"),
        }
    }
}

fn turn_completed(e: &NativeEvent) -> bool {
    matches!(e.kind, EventKind::TurnCompleted(_))
}

/// One turn with `prompt`, answering every permission request with `decision`.
async fn turn_answering(
    handle: &AcpHandle,
    rx: &mut mpsc::Receiver<AgentOutput>,
    prompt: &str,
    decision: &Decision,
) -> Vec<NativeEvent> {
    handle.send_user_text(prompt).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let asked = |e: &NativeEvent| {
            matches!(e.kind, EventKind::ApprovalRequested(_) | EventKind::TurnCompleted(_))
        };
        match until(rx, &mut seen, asked).await {
            EventKind::ApprovalRequested(ask) => {
                handle.respond(&ask.request_id, decision).await.unwrap();
                // Answered once: a second answer is refused.
                assert!(handle.respond(&ask.request_id, decision).await.is_err());
            }
            _ => return seen,
        }
    }
}

fn native_types(seen: &[NativeEvent]) -> Vec<&str> {
    seen.iter().filter_map(|e| e.native_type.as_deref()).collect()
}

/// Runs a write of `target` answered with `decision`; returns the events and the handle's run.
async fn write_turn(
    s: &Setup,
    target: &Path,
    decision: Decision,
) -> (Vec<NativeEvent>, RunFinished) {
    s.mock.set_script(Script::write_then_done(&target.to_string_lossy(), "written by mock\n"));
    let (handle, mut rx) = spawn_acp(&s.options()).unwrap();
    let seen = turn_answering(&handle, &mut rx, "write the file", &decision).await;
    handle.close_input().await;
    let finished = exited(&mut rx).await;
    (seen, finished)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_streams_a_turn_and_completes() {
    if nucleic_testkit::isolated!("gemini_streams_a_turn_and_completes") {
        return;
    }
    let s = Setup::new(Script::text(&["Hello from the mock. ", "Second chunk."])).await;
    let started = Instant::now();
    let (handle, mut rx) = spawn_acp(&s.options()).unwrap();
    let mut seen = Vec::new();
    // The first response is initialize's.
    until(&mut rx, &mut seen, |e| e.native_type.as_deref() == Some("response")).await;
    let initialized = started.elapsed();
    let session =
        until(&mut rx, &mut seen, |e| matches!(e.kind, EventKind::SessionStarted(_))).await;
    let ready = started.elapsed();
    println!(
        "gemini: spawn → initialize answered {initialized:?}, → session/new answered {ready:?}"
    );
    let pid = handle.pid().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status.lines().find(|l| l.starts_with("VmRSS")).unwrap_or("VmRSS: ?");
    println!("gemini: idle after session/new, one process: {rss}");
    let EventKind::SessionStarted(session) = session else { unreachable!() };
    assert_eq!(session.agent_version.as_deref(), Some("0.61.0"));
    assert_eq!(session.cwd, s.ws().to_string_lossy());
    assert_eq!(handle.session_id().as_deref(), Some(session.backend_session_id.as_str()));
    let sent = Instant::now();
    handle.send_user_text("say hi").await.unwrap();
    let end = until(&mut rx, &mut seen, turn_completed).await;
    println!("gemini: prompt → turn completed {:?}", sent.elapsed());
    let EventKind::TurnCompleted(turn) = end else { unreachable!() };
    assert_eq!(turn.stop_reason.as_deref(), Some("end_turn"));
    assert!(!turn.is_error && turn.usage.input_tokens > 0, "{turn:?}");
    let text: String = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantText(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello from the mock. Second chunk.");
    // Only the mock was asked: the router question, then the turn, with the dummy key.
    let requests = s.mock.requests();
    assert!(requests.iter().any(|r| r.path.ends_with(":generateContent")), "{requests:?}");
    let turns = s.mock.turns();
    assert_eq!(turns.len(), 1, "{requests:?}");
    assert!(turns[0].headers.iter().any(|(k, v)| k == "x-goog-api-key" && v == "mock-gemini-key"));
    handle.close_input().await;
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{finished:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_write_allowed_is_done_through_the_hosts_fs_write() {
    if nucleic_testkit::isolated!("gemini_write_allowed_is_done_through_the_hosts_fs_write") {
        return;
    }
    let s = Setup::new(Script::text(&["unused"])).await;
    let target = s.ws().join("a.txt");
    let (seen, finished) = write_turn(&s, &target, Decision::Allow).await;
    let ask = seen.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalRequested(a) => Some(a.clone()),
        _ => None,
    });
    let ask = ask.expect("a permission request");
    assert_eq!(ask.tool_name, "Write");
    assert_eq!(ask.input["file_path"], target.to_string_lossy().as_ref());
    assert!(ask.request_id.starts_with("acp-"), "{ask:?}");
    let types = native_types(&seen);
    assert!(types.contains(&"fs/write_text_file"), "{types:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written by mock\n");
    let results: Vec<bool> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult(r) => Some(r.is_error),
            _ => None,
        })
        .collect();
    assert_eq!(results, [false]);
    assert_eq!(finished.outcome, RunOutcome::Completed, "{finished:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_write_denied_reaches_the_model_and_its_card_is_closed() {
    if nucleic_testkit::isolated!("gemini_write_denied_reaches_the_model_and_its_card_is_closed") {
        return;
    }
    let s = Setup::new(Script::text(&["unused"])).await;
    let target = s.ws().join("denied.txt");
    let deny = Decision::Deny { message: "not this file".into() };
    let (seen, _) = write_turn(&s, &target, deny).await;
    assert!(!target.exists());
    assert!(!native_types(&seen).contains(&"fs/write_text_file"));
    // Gemini says nothing after a reject: the card is closed when the turn ends.
    let closed = seen.iter().any(|e| matches!(&e.kind, EventKind::ToolResult(r) if r.is_error));
    assert!(closed, "{seen:#?}");
    // The refusal went back to the model.
    let turns = s.mock.turns();
    let last = turns.last().expect("turn requests");
    let answers = function_responses(&last.body);
    println!("gemini: the model got {answers:?}");
    assert_eq!(answers.len(), 1, "{turns:?}");
    assert_eq!(answers[0]["name"], "write_file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_write_outside_the_worktree_is_refused() {
    if nucleic_testkit::isolated!("gemini_write_outside_the_worktree_is_refused") {
        return;
    }
    let s = Setup::new(Script::text(&["unused"])).await;
    // A link inside the worktree to a directory outside it: the path looks inside.
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("o.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink(&outside, s.ws().join("link")).unwrap();
    for target in [s.ws().join("link/o.txt"), outside.join("o.txt")] {
        let (seen, _) = write_turn(&s, &target, Decision::Allow).await;
        assert_eq!(std::fs::read_to_string(outside.join("o.txt")).unwrap(), "keep\n");
        // Gemini CLI refuses it itself (symlinks resolved), before asking or calling fs/*;
        // the host's own refusal is `a_delegated_write_outside_the_worktree_is_refused`.
        let types = native_types(&seen);
        assert!(!types.contains(&"fs/write_text_file"), "{types:?}");
        let failed = seen.iter().any(|e| matches!(&e.kind, EventKind::ToolResult(r) if r.is_error));
        assert!(failed, "{seen:#?}");
    }
}

/// A scripted ACP agent: answers `initialize` and `session/new`, then asks the host to write
/// `outside` and `inside`, and keeps the host's replies in `replies`.
fn delegating_agent(dir: &Path, outside: &Path, inside: &Path, replies: &Path) -> PathBuf {
    let write = |id: u32, path: &Path| {
        format!(
            r#"echo '{{"jsonrpc":"2.0","id":{id},"method":"fs/write_text_file","params":{{"sessionId":"s1","path":"{}","content":"pwned"}}}}'"#,
            path.display()
        )
    };
    let script = format!(
        "#!/bin/sh\nread l\necho '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"protocolVersion\":1}}}}'\n\
         read l\necho '{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"sessionId\":\"s1\"}}}}'\n\
         {}\nread l\necho \"$l\" > {r}\n{}\nread l\necho \"$l\" >> {r}\nread l\n",
        write(0, outside),
        write(1, inside),
        r = replies.display(),
    );
    let agent = dir.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    agent
}

static SCRIPTED: AcpProfile = AcpProfile {
    backend: nucleic_protocol::Backend::Gemini,
    label: "a scripted agent",
    args: &[],
    model_flag: None,
    env: &[],
    modes: &[("default", "default")],
    missing_file_as_empty: false,
    hidden_text_prefixes: &[],
};

#[tokio::test]
async fn a_delegated_write_outside_the_worktree_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let (outside, inside, replies) =
        (dir.path().join("o.txt"), ws.join("in.txt"), dir.path().join("replies"));
    std::fs::write(&outside, "keep").unwrap();
    let agent = delegating_agent(dir.path(), &outside, &inside, &replies);
    let (handle, mut rx) = spawn_acp(&AcpOptions::new(&SCRIPTED, agent, ws.clone())).unwrap();
    let mut seen = Vec::new();
    let refused = until(&mut rx, &mut seen, |e| matches!(e.kind, EventKind::Error(_))).await;
    let EventKind::Error(refused) = refused else { unreachable!() };
    assert!(refused.message.contains("outside the session's worktree"), "{refused:?}");
    let deadline = Instant::now() + WAIT;
    while std::fs::read_to_string(&replies).unwrap_or_default().lines().count() < 2 {
        assert!(Instant::now() < deadline, "the agent got no second reply");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "pwned");
    let replies = std::fs::read_to_string(&replies).unwrap();
    let lines: Vec<serde_json::Value> =
        replies.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (lines[0]["id"].as_i64(), lines[0]["error"]["code"].as_i64()),
        (Some(0), Some(-32602))
    );
    assert_eq!(lines[1], serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    handle.stop(Duration::from_millis(200));
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_shell_command_is_asked_as_bash_and_runs_in_the_worktree_once_allowed() {
    if nucleic_testkit::isolated!(
        "gemini_shell_command_is_asked_as_bash_and_runs_in_the_worktree_once_allowed"
    ) {
        return;
    }
    let s = Setup::new(Script::shell_then_done("echo ran > shell.txt")).await;
    let (handle, mut rx) = spawn_acp(&s.options()).unwrap();
    let seen = turn_answering(&handle, &mut rx, "run it", &Decision::Allow).await;
    let ask = seen.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalRequested(a) => Some(a.clone()),
        _ => None,
    });
    let ask = ask.expect("a permission request");
    assert_eq!(ask.tool_name, "Bash");
    assert!(ask.input["command"].as_str().unwrap_or_default().contains("echo ran"), "{ask:?}");
    assert_eq!(std::fs::read_to_string(s.ws().join("shell.txt")).unwrap(), "ran\n");
    let ok = seen.iter().any(|e| matches!(&e.kind, EventKind::ToolResult(r) if !r.is_error));
    assert!(ok, "{seen:#?}");
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_turn_is_cancelled_mid_stream() {
    if nucleic_testkit::isolated!("gemini_turn_is_cancelled_mid_stream") {
        return;
    }
    let chunks: Vec<String> = (0..40).map(|i| format!("chunk {i}. ")).collect();
    let mut script = Script::new(vec![Reply::Text(chunks)]);
    script.chunk_delay = Duration::from_millis(250);
    let s = Setup::new(script).await;
    let (handle, mut rx) = spawn_acp(&s.options()).unwrap();
    assert!(handle.interrupt().await.is_err(), "no turn yet");
    handle.send_user_text("stream a lot").await.unwrap();
    let mut seen = Vec::new();
    until(&mut rx, &mut seen, |e| matches!(e.kind, EventKind::AssistantText(_))).await;
    let asked = Instant::now();
    handle.interrupt().await.unwrap();
    let end = until(&mut rx, &mut seen, turn_completed).await;
    println!("gemini: session/cancel → cancelled {:?}", asked.elapsed());
    let EventKind::TurnCompleted(turn) = end else { unreachable!() };
    assert_eq!(turn.stop_reason.as_deref(), Some("cancelled"));
    handle.close_input().await;
    assert_eq!(exited(&mut rx).await.outcome, RunOutcome::Interrupted);
}

/// `sleep 30`: a process that never answers anything.
static SILENT: AcpProfile = AcpProfile {
    backend: nucleic_protocol::Backend::Gemini,
    label: "a silent agent",
    args: &["30"],
    model_flag: None,
    env: &[],
    modes: &[("default", "default")],
    missing_file_as_empty: false,
    hidden_text_prefixes: &[],
};

#[tokio::test]
async fn an_agent_that_never_answers_initialize_is_stopped_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = AcpOptions::new(&SILENT, "sleep".into(), dir.path().to_path_buf());
    o.setup_deadline = Duration::from_millis(500);
    let started = Instant::now();
    let (handle, mut rx) = spawn_acp(&o).unwrap();
    handle.send_user_text("queued until the session exists").await.unwrap();
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::AgentError, "{finished:?}");
    let message = finished.message.unwrap_or_default();
    assert!(message.contains("did not answer initialize within 0.5 s"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}
