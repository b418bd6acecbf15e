//! A Codex session in the daemon beside a simulated one, driven through the CLI, with the real
//! pinned `codex` against the mock Responses API in a loopback-only namespace: approvals,
//! interrupt, resume after the daemon is killed, diff and merge; and through the host API, what
//! Codex refuses, handoff, and continue (a fresh thread on the kept changes).

use std::path::Path;
use std::time::Duration;

use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::Script;
use pretty_assertions::assert_eq;
use serde_json::Value;

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{Backend, Decision, EventKind, FinishAction, NewSession};
use nucleic_testkit::agents::real_codex;

use crate::daemon::{DaemonGuard, alive, cli_env, daemon_pid, git};
use crate::real_codex::{CodexSetup, codex_setup};
use crate::support::nucleic;

/// The session's transcript as JSON values: its complete lines (a last one still being
/// written, without its newline yet, is left for the next read).
pub(crate) fn transcript(home: &Path, session: &str) -> Vec<Value> {
    let path = home.join("sessions").join(session).join("transcript.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A host with the real codex (and the sim), the setup's environment for its agents, confined
/// where the machine can, policy off.
pub(crate) async fn codex_host(s: &CodexSetup) -> std::sync::Arc<Host> {
    Host::open(HostConfig {
        home: s.dir.path().join("nucleic-home"),
        agents: AgentPaths {
            claude: None,
            codex: Some(real_codex()),
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: nucleic(),
            sim_prefix: vec!["__sim-agent".into()],
            nucleic: nucleic(),
        },
        limits: Limits { max_live_sessions: 4, max_worktrees: 8, min_free_bytes: 0 },
        approval_timeout: None,
        setup_timeout: Duration::from_secs(10),
        agent_env: s.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    })
    .await
    .unwrap()
}

fn is_egress(event: &Value) -> bool {
    event["kind"]["toolName"] == nucleic_protocol::EGRESS_APPROVAL
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"]["type"] == kind).collect()
}

/// Polls the transcript (up to 30 s) until `done` holds, approving every open request through
/// the CLI on the way; returns the transcript and the request ids approved.
async fn drive(
    home: &Path,
    env: &[(&str, &str)],
    session: &str,
    done: impl Fn(&[Value]) -> bool,
) -> (Vec<Value>, Vec<String>) {
    let mut approved = Vec::new();
    for _ in 0..300 {
        let events = transcript(home, session);
        if done(&events) {
            return (events, approved);
        }
        let resolved: Vec<&Value> =
            of_type(&events, "approvalResolved").iter().map(|e| &e["kind"]["requestID"]).collect();
        // Codex's own check of github.com at start is a network question: left unanswered.
        for ask in of_type(&events, "approvalRequested").into_iter().filter(|a| !is_egress(a)) {
            let id = ask["kind"]["requestID"].as_str().unwrap();
            if !resolved.contains(&&ask["kind"]["requestID"]) && !approved.iter().any(|a| a == id) {
                let (code, _, err) = cli_env(home, &["session", "approve", session, id], env).await;
                assert_eq!(code, 0, "{err}");
                approved.push(id.to_owned());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out; transcript: {:#?}", transcript(home, session));
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_in_the_daemon_beside_a_simulated_session() {
    if isolated!("real_codex_in_the_daemon_beside_a_simulated_session") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let env: Vec<(&str, &str)> = s.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let home = s.dir.path().join("nucleic-home");
    crate::support::ask_for_everything(&home);
    let _guard = DaemonGuard(home.clone());
    let root = s.dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hi\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "init"]);
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &env).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let new = |agent: &'static str, prompt: &'static str| {
        let (home, env, project) = (home.clone(), env.clone(), project.clone());
        async move {
            let args = ["session", "new", "--project", &project, "--agent", agent, prompt];
            let (code, out, err) = cli_env(&home, &args, &env).await;
            assert_eq!(code, 0, "{err}");
            out.split_whitespace().next().unwrap().to_owned()
        }
    };
    let sim = new("sim", "write notes.txt containing hi").await;
    let codex = new("codex", "make the files").await;

    // Approvals: the simulated agent's and both of Codex's (command, then patch) via the CLI.
    let turns = |n: usize| move |ev: &[Value]| of_type(ev, "turnCompleted").len() >= n;
    let (_, approved) = drive(&home, &env, &sim, turns(1)).await;
    assert_eq!(approved.len(), 1);
    let (events, approved) = drive(&home, &env, &codex, turns(1)).await;
    assert_eq!(approved.len(), 2, "{events:#?}");
    assert!(approved.iter().all(|id| id.starts_with("codex-")), "{approved:?}");
    let tools: Vec<&Value> = of_type(&events, "approvalRequested")
        .into_iter()
        .filter(|e| !is_egress(e))
        .map(|e| &e["kind"]["toolName"])
        .collect();
    assert_eq!(tools, vec!["shell", "apply_patch"]);
    assert!(events.iter().all(|e| e["backend"] == "codex"));
    let started = of_type(&events, "sessionStarted")[0]["kind"].clone();
    let (_, list, _) = cli_env(&home, &["session", "list"], &env).await;
    assert!(list.contains(&sim) && list.contains(&codex), "{list}");

    let (_, diff, _) = cli_env(&home, &["session", "diff", &codex], &env).await;
    assert!(diff.contains("patched.txt") && diff.contains("created.txt"), "{diff}");

    // Interrupt a slow turn.
    s.mock.set_script(
        Script::text("a slow answer in many pieces").with_chunk_delay(Duration::from_millis(700)),
    );
    let (code, _, err) = cli_env(&home, &["session", "send", &codex, "talk slowly"], &env).await;
    assert_eq!(code, 0, "{err}");
    let turn_started =
        |ev: &[Value]| ev.iter().filter(|e| e["nativeType"] == "turn/started").count();
    drive(&home, &env, &codex, |ev| turn_started(ev) >= 2).await;
    let (code, _, err) = cli_env(&home, &["session", "interrupt", &codex], &env).await;
    assert_eq!(code, 0, "{err}");
    let (events, _) = drive(&home, &env, &codex, turns(2)).await;
    let last = of_type(&events, "turnCompleted")[1]["kind"].clone();
    assert_eq!(last["terminalReason"], "interrupted", "{last}");

    // Kill the daemon; the next CLI call starts a new one, which re-adopts the same codex
    // process from its keeper: the session stays live.
    let daemon = daemon_pid(&home);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    for _ in 0..50 {
        if !alive(daemon) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::remove_file(home.join("daemon.json")).unwrap();
    let (code, out, err) = cli_env(&home, &["session", "show", &codex], &env).await;
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["status"], "awaiting-input", "{summary}");

    // A follow-up goes to the same Codex process and thread, on the same transcript.
    s.mock.set_script(Script::text("resumed answer"));
    let before = transcript(&home, &codex).len();
    let (code, _, err) =
        cli_env(&home, &["session", "send", &codex, "what did you do?"], &env).await;
    assert_eq!(code, 0, "{err}");
    let said = |ev: &[Value]| ev.iter().any(|e| e["kind"]["text"] == "resumed answer");
    let (events, _) = drive(&home, &env, &codex, |ev| said(ev) && turns(3)(ev)).await;
    let restarted = of_type(&events[before..], "sessionStarted");
    assert!(restarted.is_empty(), "no new codex process: {restarted:#?}");
    assert_eq!(of_type(&events, "sessionStarted").len(), 1);
    assert!(started["backendSessionID"].is_string());
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seq continues without a gap");
    let last = s.mock.requests().into_iter().rev().find(|r| r.path.ends_with("/responses"));
    assert!(last.unwrap().body["input"].to_string().contains("make the files"));

    // Diff and merge the Codex session's work.
    let (code, _, err) = cli_env(
        &home,
        &["session", "merge", &codex, "-m", "codex work", "--update-checkout"],
        &env,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(git(&root, &["show", "main:patched.txt"]), "hello\n");
    assert_eq!(git(&root, &["show", "main:created.txt"]), "");
    // The simulated session is untouched by all this.
    let sim_tree =
        transcript(&home, &sim)[0]["kind"]["worktree"]["path"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(Path::new(&sim_tree).join("notes.txt")).unwrap(), "hi\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_host_refusals_handoff_and_continue() {
    if isolated!("real_codex_host_refusals_handoff_and_continue") {
        return;
    }
    let s = codex_setup(Script::shell_then_done("touch created.txt")).await;
    let root = s.dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let host = codex_host(&s).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = |mode: Option<&str>| NewSession {
        project_id: project.project_id.clone(),
        base_ref: None,
        backend: Some(Backend::Codex),
        model: None,
        permission_mode: mode.map(Into::into),
        title: None,
        mode: None,
        prompt: "touch it".into(),
    };
    // A mode codex has no mapping for: refused, no worktree made.
    let e = host.new_session(request(Some("dontAsk")), "test").await.unwrap_err();
    assert!(e.to_string().contains("codex has no permission mode \"dontAsk\""), "{e}");
    assert_eq!(std::fs::read_dir(root.join(".nucleic/worktrees")).map_or(0, Iterator::count), 0);

    let session = host.new_session(request(None), "test").await.unwrap();
    let id = session.session_id;
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let mut thread = None;
    let ask = loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::SessionStarted(s) => thread = Some(s.backend_session_id.clone()),
            // Codex's own check of github.com at start is a network question, left unanswered.
            EventKind::ApprovalRequested(a) if a.tool_name == nucleic_protocol::EGRESS_APPROVAL => {
            }
            EventKind::ApprovalRequested(a) => break a.clone(),
            _ => {}
        }
    };
    let thread = thread.expect("sessionStarted before the approval");
    let unsupported = |e: nucleic_host::HostError| {
        assert_eq!(e.code(), nucleic_protocol::ProtocolErrorCode::Unsupported, "{e}");
        e.to_string()
    };
    let edited = Decision::AllowEdited { updated_input: serde_json::json!({"command": "true"}) };
    let m = unsupported(host.decide(&id, &ask.request_id, edited, "test").await.unwrap_err());
    assert!(m.contains("edited tool input"), "{m}");
    let m = unsupported(host.set_model(&id, "other").await.unwrap_err());
    assert!(m.contains("cannot change the model mid-session"), "{m}");
    let m = unsupported(host.set_permission_mode(&id, "plan").await.unwrap_err());
    assert!(m.contains("cannot change the permission mode mid-session"), "{m}");
    // The request is still open and answerable.
    host.decide(&id, &ask.request_id, Decision::Allow, "test").await.unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if matches!(e.kind, EventKind::TurnCompleted(_)) {
            break;
        }
    }
    let worktree = session.worktree.unwrap().path;
    assert!(Path::new(&worktree).join("created.txt").exists());

    // Keep, hand off (codex's own resume command), continue (a fork of the thread: app-server's
    // thread/fork, in the new worktree, carrying the conversation).
    host.finish(&id, FinishAction::Keep, "test").await.unwrap();
    let handoff = host.finish(&id, FinishAction::Handoff, "test").await.unwrap().unwrap().payload();
    assert_eq!(handoff["command"], format!("cd '{worktree}' && codex resume '{thread}'"));
    s.mock.set_script(Script::text("continuing"));
    let next = host
        .finish(&id, FinishAction::Continue { prompt: "carry on".into(), backend: None }, "test")
        .await
        .unwrap()
        .unwrap()
        .payload();
    let next_id = next["sessionID"].as_str().unwrap().to_owned();
    let mut events = host.subscribe(&next_id, 1).await.unwrap();
    let started = loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let EventKind::SessionStarted(s) = &e.kind {
            break s.clone();
        }
    };
    assert_ne!(started.backend_session_id, thread);
    let next_tree = next["worktree"]["path"].as_str().unwrap();
    assert_eq!(started.cwd, next_tree);
    assert!(Path::new(next_tree).join("created.txt").exists(), "continues from the kept changes");
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("the continued session's turn did not complete within 30 s")
            .unwrap()
            .unwrap();
        if matches!(e.kind, EventKind::TurnCompleted(_)) {
            break;
        }
    }
    // The model got the earlier conversation with the new prompt: a fork, not a fresh thread.
    let carried = s.mock.requests().iter().any(|r| {
        let body = r.body.to_string();
        body.contains("carry on") && body.contains("touch it")
    });
    assert!(carried, "no request of the continued thread carried the first prompt");
    host.stop(&next_id).await.unwrap();
}
