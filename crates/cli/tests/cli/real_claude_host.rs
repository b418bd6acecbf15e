//! The host with the real pinned `claude` against the mock, in a loopback-only namespace:
//! a session in a worktree, kept, handed off, and continued (forking its conversation).

use std::path::Path;
use std::time::Duration;

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{Backend, Decision, EventKind, FinishAction, NewSession};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};
use pretty_assertions::assert_eq;

use crate::support::nucleic;

async fn until_turn_done(host: &Host, id: &str, allow: bool) -> Vec<EventKind> {
    let mut events = host.subscribe(id, 1).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let EventKind::ApprovalRequested(a) = &e.kind
            && allow
        {
            host.decide(id, &a.request_id, Decision::Allow, "test").await.unwrap();
        }
        let done = matches!(e.kind, EventKind::TurnCompleted(_));
        seen.push(e.kind.clone());
        if done {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_keep_continue_handoff() {
    if isolated!("real_claude_keep_continue_handoff") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let mock = MockAnthropic::start(Script::bash_then_done("echo kept > notes.txt")).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(HostConfig {
        home: dir.path().join("home"),
        agents: AgentPaths {
            claude: Some(real_claude()),
            codex: None,
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
        agent_env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    })
    .await
    .unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = NewSession {
        project_id: project.project_id.clone(),
        base_ref: None,
        backend: Some(Backend::ClaudeCode),
        model: None,
        permission_mode: None,
        title: Some("notes".into()),
        mode: None,
        prompt: "write some notes".into(),
    };
    let first = host.new_session(request, "test").await.unwrap();
    let kinds = until_turn_done(&host, &first.session_id, true).await;
    let started = kinds
        .iter()
        .find_map(|k| match k {
            EventKind::SessionStarted(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(started.agent_version.as_deref(), Some("2.1.332"));
    let worktree = first.worktree.clone().unwrap().path;
    assert_eq!(started.cwd, worktree, "the agent ran in the session's worktree");
    assert_eq!(std::fs::read_to_string(Path::new(&worktree).join("notes.txt")).unwrap(), "kept\n");

    host.finish(&first.session_id, FinishAction::Keep, "test").await.unwrap();
    let handoff = host
        .finish(&first.session_id, FinishAction::Handoff, "test")
        .await
        .unwrap()
        .unwrap()
        .payload();
    assert_eq!(
        handoff["command"],
        format!("cd '{worktree}' && claude --resume '{}'", started.backend_session_id)
    );

    mock.set_script(Script::text("continuing from the kept notes"));
    let next = host
        .finish(
            &first.session_id,
            FinishAction::Continue { prompt: "carry on".into(), backend: None },
            "test",
        )
        .await
        .unwrap()
        .unwrap()
        .payload();
    let next_id = next["sessionID"].as_str().unwrap().to_owned();
    let kinds = until_turn_done(&host, &next_id, true).await;
    let resumed = kinds
        .iter()
        .find_map(|k| match k {
            EventKind::SessionStarted(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_ne!(resumed.backend_session_id, started.backend_session_id, "a fork has its own id");
    let next_path = next["worktree"]["path"].as_str().unwrap().to_owned();
    assert_ne!(next_path, worktree);
    assert_eq!(resumed.cwd, next_path);
    assert_eq!(std::fs::read_to_string(Path::new(&next_path).join("notes.txt")).unwrap(), "kept\n");
    let last = mock.requests().last().unwrap().body.clone();
    assert!(
        last["messages"].to_string().contains("write some notes"),
        "the fork carries the conversation"
    );
    assert!(Path::new(&worktree).join("notes.txt").exists(), "the kept session is untouched");
}
