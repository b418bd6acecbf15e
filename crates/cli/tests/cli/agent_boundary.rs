//! What a session's agent cannot reach: the host's `NUCLEIC_*` variables and its data dir (the
//! token above all) — with the simulated agent through a real daemon, and with the real pinned
//! `claude` against the mock — and, through the file views, anything outside its worktree.

use std::path::Path;
use std::time::Duration;

use nucleic_host::{AgentIsolation, AgentPaths, Host, HostConfig, HostError, Limits};
use nucleic_protocol::{Backend, Decision, EventKind, NewSession};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};

use crate::daemon::{DaemonGuard, cli_env, git};
use crate::support::nucleic;

/// A shell command that tries every way to the host's secrets: the token by its path and
/// through any visible process's root, the data dir's listing, and the environment.
fn probe_command(home: &Path) -> String {
    let home = home.display();
    format!(
        "cat {home}/token; cat /proc/[0-9]*/root{home}/token; echo listing:; ls -A {home}; \
         echo env:; env; echo probe-done"
    )
}

/// The tool results of a transcript, as text.
fn tool_results(transcript: &Path) -> Vec<String> {
    std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"]["type"] == "toolResult")
        .map(|e| e["kind"]["content"].to_string())
        .collect()
}

/// Fails unless `output` (the probe's tool result) ran and shows nothing of the host's.
fn assert_sees_nothing_of_the_host(output: &str, token: &str) {
    assert!(output.contains("probe-done") && output.contains("PATH="), "the probe ran: {output}");
    assert!(!output.contains(token.trim()), "the agent read the token: {output}");
    assert!(!output.contains("NUCLEIC_"), "the agent saw a NUCLEIC_ variable: {output}");
    let listing = output.split("listing:").nth(1).unwrap_or("").split("env:").next().unwrap_or("");
    for name in ["catalog.sqlite", "sessions", "token", "daemon.json"] {
        assert!(!listing.contains(name), "the agent listed the data dir ({name}): {output}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sim_agent_of_the_daemon_sees_neither_the_token_nor_nucleic_variables() {
    assert!(
        nucleic_host::bubblewrap().is_ok(),
        "this test needs bubblewrap (apt-get install bubblewrap): {:?}",
        nucleic_host::bubblewrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    // The daemon is started with NUCLEIC_HOME (and one more host variable) in its environment.
    let env = [("NUCLEIC_AGENT_ISOLATION", "auto")];
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &env).await;
    assert_eq!(code, 0, "{err}");
    let prompt = format!("run {}", probe_command(&home));
    let args = [
        "session",
        "new",
        "--project",
        project.trim(),
        "--agent",
        "sim",
        "--permission-mode",
        "bypassPermissions",
        &prompt,
    ];
    let (code, out, err) = cli_env(&home, &args, &env).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let results = loop {
        let results = tool_results(&transcript);
        if !results.is_empty() {
            break results;
        }
        assert!(std::time::Instant::now() < deadline, "no tool result within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    assert_sees_nothing_of_the_host(&results.join("\n"), &token);
}

pub(crate) async fn until_turn_done(host: &Host, id: &str) {
    let mut events = host.subscribe(id, 1).await.unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .expect("the turn did not end within 60 s")
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => {
                host.decide(id, &a.request_id, Decision::Allow, "test").await.unwrap();
            }
            EventKind::TurnCompleted(_) => return,
            _ => {}
        }
    }
}

fn host_config(
    dir: &Path,
    claude: Option<std::path::PathBuf>,
    env: Vec<(String, String)>,
) -> HostConfig {
    HostConfig {
        home: dir.join("home"),
        agents: AgentPaths {
            claude,
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
        agent_isolation: AgentIsolation::Required,
        keepers: None,
        policy: false,
    }
}

fn repo(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    root
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_sees_neither_the_token_nor_nucleic_variables() {
    if isolated!("real_claude_sees_neither_the_token_nor_nucleic_variables") {
        return;
    }
    // Inside the namespace this process carries NUCLEIC_ISOLATED_TEST: a host variable.
    assert!(std::env::vars().any(|(k, _)| k.starts_with("NUCLEIC_")));
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let token = nucleic_server::load_or_create_token(&home).unwrap();
    let mock = MockAnthropic::start(Script::bash_then_done(probe_command(&home))).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(host_config(dir.path(), Some(real_claude()), env)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = NewSession {
        project_id: project.project_id.clone(),
        base_ref: None,
        backend: Some(Backend::ClaudeCode),
        model: None,
        permission_mode: None,
        title: Some("probe".into()),
        mode: None,
        prompt: "look around".into(),
    };
    let session = host.new_session(request, "test").await.unwrap();
    until_turn_done(&host, &session.session_id).await;
    let transcript = home.join("sessions").join(&session.session_id).join("transcript.jsonl");
    assert_sees_nothing_of_the_host(&tool_results(&transcript).join("\n"), &token);
}

#[tokio::test(flavor = "multi_thread")]
async fn file_views_refuse_a_worktree_the_agent_swapped_for_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let mut config = host_config(dir.path(), None, Vec::new());
    config.agent_isolation = AgentIsolation::Auto;
    let host = Host::open(config).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = NewSession {
        project_id: project.project_id.clone(),
        base_ref: None,
        backend: Some(Backend::Simulated),
        model: None,
        permission_mode: None,
        title: None,
        mode: None,
        prompt: "say hello".into(),
    };
    let session = host.new_session(request, "test").await.unwrap();
    until_turn_done(&host, &session.session_id).await;
    let worktree = std::path::PathBuf::from(session.worktree.unwrap().path);
    std::fs::write(worktree.join("mine.txt"), "mine").unwrap();
    assert_eq!(host.read_file(&session.session_id, "mine.txt").await.unwrap().content, "mine");
    // The agent (which can write its worktree's parent) moves its worktree away and puts a
    // symlink to a directory outside in its place.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside").unwrap();
    std::fs::rename(&worktree, worktree.with_extension("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, &worktree).unwrap();
    let listed = host.list_files(&session.session_id, "", false).await;
    assert!(matches!(listed, Err(HostError::Invalid(_))), "{listed:?}");
    let read = host.read_file(&session.session_id, "secret.txt").await;
    assert!(matches!(read, Err(HostError::Invalid(_))), "{read:?}");
}
