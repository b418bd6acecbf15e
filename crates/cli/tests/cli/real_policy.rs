//! The policy engine in the live host with the real pinned `claude` and `codex` against the
//! mocks, in a loopback-only namespace: every tool call passes the host (Claude's PreToolUse
//! hook, Codex's approvals); the policy's own answers are recorded like a person's.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Backend, Decision, DecisionKind, EventKind, NewSession,
    Risk,
};
use nucleic_testkit::agents::{claude_offline_env, real_claude, real_codex};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script, ToolCall};
use serde_json::json;

use crate::support::nucleic;

/// What one turn showed: every event, and the requests a person (the test) answered.
pub(crate) struct Turn {
    pub(crate) events: Vec<EventKind>,
    pub(crate) asked: Vec<ApprovalRequested>,
}

impl Turn {
    /// The resolution of the request for the tool call whose input contains `needle`.
    pub(crate) fn resolution_of(&self, needle: &str) -> Option<&ApprovalResolved> {
        let id = self.events.iter().find_map(|k| match k {
            EventKind::ApprovalRequested(a) if a.input.to_string().contains(needle) => {
                Some(a.request_id.clone())
            }
            _ => None,
        })?;
        self.events.iter().find_map(|k| match k {
            EventKind::ApprovalResolved(r) if r.request_id == id => Some(r),
            _ => None,
        })
    }
}

/// Runs one turn of `id` to its end, answering with `answer` the requests the policy left to a
/// person (a request the policy answered comes with its resolution in the same write).
async fn run_turn(host: &Host, id: &str, answer: impl Fn(&ApprovalRequested) -> Decision) -> Turn {
    run_turn_from(host, id, 1, answer).await
}

/// [`run_turn`] from event `from` (a later turn of the session).
pub(crate) async fn run_turn_from(
    host: &Host,
    id: &str,
    from: u64,
    answer: impl Fn(&ApprovalRequested) -> Decision,
) -> Turn {
    let mut events = host.subscribe(id, from).await.unwrap();
    let mut turn = Turn { events: Vec::new(), asked: Vec::new() };
    let mut ahead = None;
    loop {
        let e = match ahead.take() {
            Some(e) => e,
            None => tokio::time::timeout(Duration::from_secs(90), events.next())
                .await
                .expect("the turn did not end within 90 s")
                .unwrap()
                .unwrap(),
        };
        let kind = e.kind.clone();
        turn.events.push(kind.clone());
        match kind {
            EventKind::TurnCompleted(_) => return turn,
            // The agent CLI's own network questions (Codex checks github.com at start, npm its
            // registry) are refused; they are not the tool calls a test asks about.
            EventKind::ApprovalRequested(a) if a.tool_name == nucleic_protocol::EGRESS_APPROVAL => {
                let no = Decision::Deny { message: "not in tests".into() };
                let _ = host.decide(id, &a.request_id, no, "person").await;
            }
            EventKind::ApprovalRequested(a) => {
                let next = tokio::time::timeout(Duration::from_secs(3), events.next()).await;
                let next = next.ok().map(|n| n.unwrap().unwrap());
                let by_policy = matches!(&next, Some(n) if matches!(&n.kind,
                    EventKind::ApprovalResolved(r) if r.request_id == a.request_id));
                if !by_policy {
                    host.decide(id, &a.request_id, answer(&a), "person").await.unwrap();
                    turn.asked.push(a);
                }
                ahead = next;
            }
            _ => {}
        }
    }
}

pub(crate) fn host_config(home: &Path, env: Vec<(String, String)>, claude: bool) -> HostConfig {
    HostConfig {
        home: home.to_owned(),
        agents: AgentPaths {
            claude: claude.then(real_claude),
            codex: (!claude).then(real_codex),
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
        policy: true,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(crate) fn new_session(project: &str, backend: Backend, prompt: &str) -> NewSession {
    NewSession {
        project_id: project.to_owned(),
        base_ref: None,
        backend: Some(backend),
        model: None,
        permission_mode: None,
        title: None,
        mode: None,
        prompt: prompt.into(),
    }
}

pub(crate) fn bash(command: &str) -> ToolCall {
    ToolCall::new("Bash", json!({ "command": command, "description": "run it" }))
}

pub(crate) fn assert_by_policy(turn: &Turn, needle: &str, decision: DecisionKind, by: &str) {
    let r = turn.resolution_of(needle).unwrap_or_else(|| panic!("no answer for {needle}"));
    assert_eq!((r.decision, r.by.as_str()), (decision, by), "{needle}: {r:?}");
    assert!(
        turn.asked.iter().all(|a| !a.input.to_string().contains(needle)),
        "{needle} reached a person"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_every_tool_call_passes_the_host_policy() {
    if isolated!("real_claude_every_tool_call_passes_the_host_policy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    // The person's own settings allow every command: the CLI would never ask about any.
    let scratch = dir.path().join("scratch");
    let settings = scratch.join("home/.claude/settings.json");
    write(&settings, r#"{"permissions":{"allow":["Bash(*)"]}}"#);
    // The project's deny rule (in its main checkout, where the agent cannot edit it).
    write(&root.join(".claude/settings.json"), r#"{"permissions":{"deny":["Bash(touch:*)"]}}"#);
    let calls =
        vec![bash("ls"), bash("sudo true"), bash("touch denied.txt"), bash("shutdown -h now")];
    let mock = MockAnthropic::start(Script::tools_then_done(calls)).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &scratch);
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let session =
        host.new_session(new_session(&project.project_id, Backend::ClaudeCode, "go"), "test");
    let id = session.await.unwrap().session_id;
    let turn = run_turn(&host, &id, |_| Decision::Deny { message: "not today".into() }).await;

    // `ls`: allowed by the person's rule, unasked; it ran.
    let ls = turn.resolution_of("\"ls\"").unwrap();
    assert_eq!(ls.decision, DecisionKind::Allow, "{ls:?}");
    assert!(ls.by.starts_with("policy:Bash(*)") || ls.by.starts_with("builtin:"), "{ls:?}");
    // `sudo true`: denied by the invariant, never put to a person, the model told why.
    assert_by_policy(&turn, "sudo true", DecisionKind::Deny, "invariant:sudo");
    let sudo = turn.resolution_of("sudo true").unwrap();
    let told = turn.events.iter().any(|k| {
        matches!(k, EventKind::ToolResult(t)
        if t.is_error && t.content.to_string().contains(sudo.message.as_deref().unwrap()))
    });
    assert!(told, "the model sees the reason: {:#?}", turn.events);
    // The project's deny rule wins over the person's allow-everything.
    assert_by_policy(&turn, "touch denied.txt", DecisionKind::Deny, "policy:Bash(touch:*)");
    let worktree = host.session_summary(&id).await.unwrap().worktree.unwrap().path;
    assert!(!Path::new(&worktree).join("denied.txt").exists());
    // A critical command the CLI's rules allow is still asked, with its risk class.
    let asked: Vec<_> = turn.asked.iter().map(|a| (a.input["command"].clone(), a.risk)).collect();
    assert_eq!(asked, [(json!("shutdown -h now"), Some(Risk::Critical))]);
    assert!(!turn.asked[0].risk_reasons.is_empty());

    // A new session after the person's allow-everything is gone: an unknown command under
    // "edit" is asked with a risk class.
    write(&settings, "{}");
    mock.set_script(Script::bash_then_done("frobnicate --all"));
    let session =
        host.new_session(new_session(&project.project_id, Backend::ClaudeCode, "go"), "t");
    let id = session.await.unwrap().session_id;
    let turn = run_turn(&host, &id, |_| Decision::Allow).await;
    let asked: Vec<_> = turn.asked.iter().map(|a| (a.input["command"].clone(), a.risk)).collect();
    assert_eq!(asked, [(json!("frobnicate --all"), Some(Risk::Medium))]);
    shutdown(host).await;
}

pub(crate) async fn shutdown(host: Arc<Host>) {
    host.shutdown(Duration::from_secs(2), Duration::from_secs(8)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_approvals_pass_the_host_policy() {
    if isolated!("real_codex_approvals_pass_the_host_policy") {
        return;
    }
    use nucleic_testkit::mock_openai::{Script as CodexScript, ToolCall as CodexCall};
    let calls = vec![
        CodexCall::exec_command("ls"),
        CodexCall::exec_command("sudo true"),
        CodexCall::exec_command("frobnicate --all"),
    ];
    let s = crate::real_codex::codex_setup(CodexScript::tools_then_done(calls)).await;
    let root = crate::daemon::empty_repo(s.dir.path());
    let env = s.env.clone();
    let host = Host::open(host_config(&s.dir.path().join("nucleic-home"), env, false)).await;
    let host = host.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let session = host.new_session(new_session(&project.project_id, Backend::Codex, "go"), "t");
    let id = session.await.unwrap().session_id;
    let always = Decision::AllowAlways { scope: Some(nucleic_protocol::RuleScope::Project) };
    let turn = run_turn(&host, &id, |_| always.clone()).await;

    // `ls` ran unasked (codex trusts it, or the policy allowed it: never a person).
    assert!(turn.asked.iter().all(|a| !a.input.to_string().contains("'ls'")), "{:?}", turn.asked);
    if let Some(ls) = turn.resolution_of("lc ls") {
        assert_eq!(ls.decision, DecisionKind::Allow, "{ls:?}");
        assert_ne!(ls.by, "person");
    }
    // `sudo true`: codex asked, the host's invariant declined it without a person.
    assert_by_policy(&turn, "sudo true", DecisionKind::Deny, "invariant:sudo");
    // The unknown command is asked with a risk class.
    let asked: Vec<_> = turn.asked.iter().map(|a| a.risk).collect();
    assert_eq!(asked, [Some(Risk::Medium)], "{:#?}", turn.asked);
    assert!(turn.asked[0].input.to_string().contains("frobnicate --all"));
    // "Always for this project" kept the command's own rule (not `bash -lc …`).
    let file =
        s.dir.path().join("nucleic-home/projects").join(&project.project_id).join("rules.json");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(kept["permissions"]["allow"], json!(["Bash(frobnicate --all)"]));
    shutdown(host).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_always_for_a_project_survives_a_restart_until_removed() {
    if isolated!("real_claude_always_for_a_project_survives_a_restart_until_removed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let mock = MockAnthropic::start(Script::bash_then_done("frobnicate --all")).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let home = dir.path().join("home");
    let host = Host::open(host_config(&home, env.clone(), true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id.clone();
    let start = |host: Arc<Host>| {
        let pid = pid.clone();
        async move {
            let request = new_session(&pid, Backend::ClaudeCode, "go");
            host.new_session(request, "t").await.unwrap().session_id
        }
    };

    // Asked; the person says "always, for this project".
    let id = start(host.clone()).await;
    let always = Decision::AllowAlways { scope: Some(nucleic_protocol::RuleScope::Project) };
    let turn = run_turn(&host, &id, |_| always.clone()).await;
    assert_eq!(turn.asked.len(), 1);
    let r = turn.resolution_of("frobnicate").unwrap();
    assert_eq!((r.decision, r.by.as_str()), (DecisionKind::AllowAlways, "person"));
    assert!(r.message.as_deref().unwrap().contains("Bash(frobnicate --all)"), "{r:?}");
    shutdown(host).await;

    // A new host on the same home, a new session: allowed by the kept rule, no person. A
    // malformed settings file of the project is named in the session; the other files apply.
    write(&root.join(".claude/settings.local.json"), "{\"permissions\": [");
    let host = Host::open(host_config(&home, env.clone(), true)).await.unwrap();
    let id = start(host.clone()).await;
    let turn = run_turn(&host, &id, |_| Decision::Deny { message: "no".into() }).await;
    assert_by_policy(&turn, "frobnicate", DecisionKind::Allow, "policy:Bash(frobnicate --all)");
    let named = turn.events.iter().any(|k| {
        matches!(k, EventKind::Error(e)
        if e.message.contains("settings.local.json") && e.message.contains("malformed"))
    });
    assert!(named, "the malformed file is named: {:#?}", turn.events);

    // Removed with `nucleic rules rm`: the next call is asked again.
    let out = std::process::Command::new(nucleic())
        .args(["rules", "rm", "Bash(frobnicate --all)", "--project", &pid])
        .env("NUCLEIC_HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = start(host.clone()).await;
    let turn = run_turn(&host, &id, |_| Decision::Deny { message: "no".into() }).await;
    assert_eq!(turn.asked.len(), 1, "{:#?}", turn.events);
    shutdown(host).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_projects_approval_timeout_comes_from_its_rule_file() {
    use crate::host_support::{config, new_session as sim_session, repo};
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = Host::open(config(dir.path())).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let rules = dir.path().join("home/projects").join(&project.project_id).join("rules.json");
    write(&rules, r#"{"approvalTimeoutSecs": 1}"#);
    let id = host
        .new_session(sim_session(&project.project_id, "write a.txt containing x"), "t")
        .await
        .unwrap()
        .session_id;
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let resolved = loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("the approval was not timed out within 10 s")
            .unwrap()
            .unwrap();
        if let EventKind::ApprovalResolved(r) = &e.kind {
            break r.clone();
        }
    };
    assert_eq!((resolved.decision, resolved.by.as_str()), (DecisionKind::Deny, "host:timeout"));

    // A value that is not a number of seconds is named in the session; nothing times out.
    write(&rules, r#"{"approvalTimeoutSecs": "soon"}"#);
    let id = host
        .new_session(sim_session(&project.project_id, "write b.txt containing x"), "t")
        .await
        .unwrap()
        .session_id;
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let named = loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.next()).await.unwrap();
        if let EventKind::Error(err) = &e.unwrap().unwrap().kind {
            break err.message.clone();
        }
    };
    assert!(named.contains("rules.json") && named.contains("approvalTimeoutSecs"), "{named}");
    shutdown(host).await;
}
