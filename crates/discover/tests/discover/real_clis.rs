//! The pinned real `claude` and `codex`, run directly in a checkout as a person would (outside
//! Nucleic, against the mock model servers, in a loopback-only namespace): discovery lists the
//! sessions they wrote, and names a `claude` that is still on one.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nucleic_discover::{Homes, Limits, Turns, discover, running_agents};
use nucleic_protocol::Backend;
use nucleic_testkit::agents::{claude_offline_env, codex_offline_env, real_claude, real_codex};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{self, MockAnthropic};
use nucleic_testkit::mock_openai::{self, MockOpenAi, codex_config_toml};

/// A git checkout at `dir/app`.
fn checkout(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("app");
    std::fs::create_dir_all(&root).unwrap();
    let ok = Command::new("git").args(["init", "-q", "-b", "main"]).current_dir(&root).status();
    assert!(ok.unwrap().success());
    root.canonicalize().unwrap()
}

/// Waits for `child` to end, up to 90 s; its exit must be a success.
fn finish(mut child: Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{what} failed: {status}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_the_clis_wrote_themselves_are_listed_for_their_checkout() {
    if isolated!("sessions_the_clis_wrote_themselves_are_listed_for_their_checkout") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = checkout(dir.path());
    let scratch = dir.path().join("scratch");
    let anthropic =
        MockAnthropic::start(mock_anthropic::Script::new(vec![mock_anthropic::Reply::Text(
            "Done.".into(),
        )]))
        .await
        .unwrap();
    let claude_env = claude_offline_env(&anthropic.base_url(), &scratch);
    let claude = Command::new(real_claude())
        .args(["-p", "Fix the flaky login test", "--output-format", "json"])
        .envs(claude_env.iter().map(|(k, v)| (k, v)))
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let openai = MockOpenAi::start(mock_openai::Script::new(vec![mock_openai::Reply::Text(
        "Retried.".into(),
    )]))
    .await
    .unwrap();
    let codex_home = dir.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), codex_config_toml(&openai.base_url())).unwrap();
    let codex = Command::new(real_codex())
        .args(["exec", "add a retry to the upload"])
        .envs(codex_offline_env(&codex_home, &codex_home))
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    tokio::task::spawn_blocking(move || {
        finish(claude, "claude -p");
        finish(codex, "codex exec");
    })
    .await
    .unwrap();

    let home = claude_env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| v.clone()).unwrap();
    let homes = Homes { claude: Some(Path::new(&home).join(".claude")), codex: Some(codex_home) };
    let found = discover(&root, &homes, Limits::default(), &running_agents()).unwrap();
    assert_eq!(found.sessions.len(), 2, "{found:#?}");
    let of = |b: Backend| found.sessions.iter().find(|s| s.backend == b).unwrap();
    let c = of(Backend::ClaudeCode);
    assert_eq!(c.title.as_deref(), Some("Fix the flaky login test"));
    assert_eq!(c.cli_version.as_deref(), Some(nucleic_testkit::agents::CLAUDE_VERSION));
    // One turn of Claude Code 2.1 already writes more than the two 64 KiB windows (its
    // `api-request-blob` lines): the count is then a floor.
    let size = std::fs::metadata(&c.path).unwrap().len();
    let turns = if size > 2 * 64 * 1024 { Turns::AtLeast(1) } else { Turns::Exact(1) };
    assert_eq!(
        (c.turns, c.cwd.as_path(), c.unknown_lines),
        (turns, root.as_path(), 0),
        "{size} bytes"
    );
    assert!(c.model.is_some() && c.live.is_none(), "{c:?}");
    let x = of(Backend::Codex);
    assert_eq!(x.title.as_deref(), Some("add a retry to the upload"));
    assert_eq!(x.cli_version.as_deref(), Some(nucleic_testkit::agents::CODEX_VERSION));
    assert_eq!((x.turns, x.model.as_deref()), (Turns::Exact(1), Some("gpt-5.5")));
    assert!(x.live.is_none(), "{x:?}");
    // Lines this version does not know would be a newer CLI's: the pinned ones write none.
    assert_eq!(x.unknown_lines, 0, "{x:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_still_on_its_session_is_named() {
    if isolated!("a_claude_still_on_its_session_is_named") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = checkout(dir.path());
    let mock = MockAnthropic::start(
        mock_anthropic::Script::text("never").with_fault(mock_anthropic::FaultKind::Hang, None),
    )
    .await
    .unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let mut claude = Command::new(real_claude())
        .args(["-p", "wait for the model", "--output-format", "json"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let home = env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| v.clone()).unwrap();
    let homes = Homes { claude: Some(Path::new(&home).join(".claude")), codex: None };
    // Its transcript appears when it sends the prompt; the model never answers.
    let deadline = Instant::now() + Duration::from_secs(60);
    let found = loop {
        let found = discover(&root, &homes, Limits::default(), &running_agents()).unwrap();
        if !found.sessions.is_empty() && !mock.requests().is_empty() {
            break found;
        }
        assert!(Instant::now() < deadline, "no transcript of the hanging claude within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let live = found.sessions[0].live.clone();
    let _ = (claude.kill(), claude.wait());
    let live = live.unwrap_or_else(|| panic!("the live claude was not named: {found:#?}"));
    assert_eq!(live.backend, Backend::ClaudeCode);
    assert!(live.pid == claude.id() || live.cwd == root, "{live:?}");
}
