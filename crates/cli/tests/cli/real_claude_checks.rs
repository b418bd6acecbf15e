//! The dev loop with the real pinned `claude` against the mock, in a loopback-only namespace:
//! the project's check runs after the turn, and the report holds the model's claim against it.

use std::time::{Duration, Instant};

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{Backend, CheckOutcome, CheckSpec, Decision, EventKind, NewSession};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};

use crate::support::nucleic;

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_session_runs_its_checks_after_the_turn() {
    if isolated!("real_claude_session_runs_its_checks_after_the_turn") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    std::fs::write(
        root.join("test_calc.py"),
        "from calc import add\nok = add(1, 2) == 3\nprint(f'{int(ok)} passed, {int(not ok)} failed')\n",
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), "__pycache__/\n").unwrap();
    crate::daemon::git(&root, &["add", "."]);
    crate::daemon::git(&root, &["commit", "-q", "-m", "a test"]);
    // The model writes a wrong `add` and says the tests pass.
    let mock =
        MockAnthropic::start(Script::write_named_file_then("All tests pass now.")).await.unwrap();
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
    let tests = CheckSpec {
        name: "tests".into(),
        argv: vec!["python3".into(), "-B".into(), "test_calc.py".into()],
        timeout_secs: 60,
        env: Vec::new(),
        required: true,
    };
    let project = host
        .add_project(root.to_str().unwrap(), None, move |s| {
            s.checks = vec![tests];
            s.checks_after_turn = true;
        })
        .await
        .unwrap();
    let request = NewSession {
        project_id: project.project_id.clone(),
        base_ref: None,
        backend: Some(Backend::ClaudeCode),
        model: None,
        permission_mode: None,
        title: Some("calc".into()),
        mode: None,
        prompt: "write calc.py containing add = lambda a, b: a * b".into(),
    };
    let session = host.new_session(request, "test").await.unwrap();
    let id = session.session_id;
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let start = Instant::now();
    let report = loop {
        let e = tokio::time::timeout(Duration::from_secs(90), events.next())
            .await
            .expect("no report within 90 s")
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => {
                host.decide(&id, &a.request_id, Decision::Allow, "test").await.unwrap();
            }
            EventKind::Report(r) => break r.clone(),
            _ => {}
        }
        assert!(start.elapsed() < Duration::from_secs(90));
    };
    assert_eq!(report.checks.len(), 1, "{report:?}");
    assert_eq!(report.checks[0].outcome, CheckOutcome::Failed);
    assert_eq!((report.checks[0].passed, report.checks[0].failed), (Some(0), Some(1)));
    // The script exits 0: the printed failure wins, flagged.
    assert!(report.checks[0].flag.as_deref().unwrap().contains("the counts win"));
    assert_eq!(report.files, vec!["calc.py".to_owned()]);
    assert_eq!(report.contradictions.len(), 1, "{report:?}");
    assert_eq!(report.contradictions[0].claim, "All tests pass now.");
    let _ = host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}
