//! `nucleic run --agent codex` with the real pinned CLI against the mock Responses API, each test
//! in its own loopback-only network namespace.

use std::path::{Path, PathBuf};

use nucleic_protocol::{EventKind, RunOutcome};
use nucleic_testkit::agents::codex_offline_env;
use nucleic_testkit::agents::real_codex;
use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::{FaultKind, MockOpenAi, Script, codex_config_toml};
use pretty_assertions::assert_eq;

use crate::support::*;

pub struct CodexSetup {
    pub dir: tempfile::TempDir,
    pub mock: MockOpenAi,
    pub env: Vec<(String, String)>,
    pub codex: String,
}

/// A workspace (`dir`), a `CODEX_HOME` beside it (`dir/.codex-home`) pointing at a fresh mock,
/// and the environment naming both.
pub async fn codex_setup(script: Script) -> CodexSetup {
    codex_setup_in(&std::env::temp_dir(), script).await
}

/// [`codex_setup`] in a folder made under `base` (codex makes its `codex-linux-sandbox` helper
/// only for a `CODEX_HOME` outside the temporary dir).
pub async fn codex_setup_in(base: &Path, script: Script) -> CodexSetup {
    let dir = tempfile::tempdir_in(base).unwrap();
    let mock = MockOpenAi::start(script).await.unwrap();
    let home = dir.path().join(".codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), codex_config_toml(&mock.base_url())).unwrap();
    // The throwaway HOME lives inside the codex home (kept out of the workspace listings).
    let env = codex_offline_env(&home, &home);
    CodexSetup { dir, mock, env, codex: real_codex().to_string_lossy().into_owned() }
}

impl CodexSetup {
    pub fn cwd(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// `nucleic run --agent codex --agent-bin <pinned codex> --json <args>` in the setup's dir.
    async fn run(&self, args: &[&str]) -> RunResult {
        let mut all = vec!["run", "--agent", "codex", "--agent-bin", &self.codex, "--json"];
        all.extend_from_slice(args);
        run_nucleic(&self.cwd(), &all, &self.env).await
    }
}

/// The workspace's entries, without Nucleic's and codex's homes, and the agent CLIs' settings
/// folders while empty (the confinement makes them, read-only, so none can be planted).
fn listing(dir: &Path) -> Vec<String> {
    let empty_settings = |n: &str| {
        nucleic_agents::backend::PROJECT_SETTINGS_DIRS.contains(&n)
            && std::fs::read_dir(dir.join(n)).is_ok_and(|mut d| d.next().is_none())
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".nh" && n != ".codex-home" && !empty_settings(n))
        .collect();
    names.sort();
    names
}

fn tool_results(events: &[nucleic_protocol::Event]) -> Vec<nucleic_protocol::ToolResult> {
    events.iter().filter_map(|e| pick!(&e.kind, ToolResult)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_shell_and_patch_allowed() {
    if isolated!("real_codex_shell_and_patch_allowed") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let r = s.run(&["--approve", "allow", "create the files"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let cwd = s.cwd();
    assert!(cwd.join("created.txt").exists(), "{:#?}", kinds(&r.events));
    assert_eq!(std::fs::read_to_string(cwd.join("patched.txt")).unwrap(), "hello\n");
    assert_gapless(&r.events);
    // The same kinds in the same order rules as a Claude run.
    assert_in_order(
        &r.events,
        &[
            "sessionCreated",
            "sessionStarted",
            "toolCallStarted",
            "approvalRequested",
            "approvalResolved",
            "toolResult",
            "toolCallStarted",
            "approvalRequested",
            "approvalResolved",
            "toolResult",
            "assistantText",
            "usage",
            "turnCompleted",
            "runFinished",
        ],
    );
    let session = first!(r.events, SessionStarted);
    assert_eq!(session.agent_version.as_deref(), Some("0.171.0"));
    assert_eq!(session.permission_mode.as_deref(), Some("default"));
    let names: Vec<String> =
        r.events.iter().filter_map(|e| pick!(&e.kind, ToolCallStarted).map(|c| c.name)).collect();
    assert_eq!(names, vec!["shell", "apply_patch"]);
    assert!(tool_results(&r.events).iter().all(|t| !t.is_error), "{:#?}", r.events);
    assert!(r.events.iter().all(|e| e.backend == nucleic_protocol::Backend::Codex));
    let done = first!(r.events, RunFinished);
    assert_eq!(done.outcome, RunOutcome::Completed);
    assert_eq!(transcript_of(&cwd, &r.events), r.events);
    assert!(
        s.mock.requests().iter().all(|q| q.path.starts_with("/v1/responses")),
        "{:?}",
        s.mock.requests()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_shell_and_patch_denied() {
    if isolated!("real_codex_shell_and_patch_denied") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let before = listing(&s.cwd());
    let r = s.run(&["--approve", "deny", "create the files"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(listing(&s.cwd()), before, "{:#?}", r.events);
    let asked = r.events.iter().filter(|e| matches!(e.kind, EventKind::ApprovalRequested(_)));
    assert_eq!(asked.count(), 2);
    let results = tool_results(&r.events);
    assert!(results.iter().all(|t| t.is_error), "{results:#?}");
    let texts: Vec<&str> = results.iter().filter_map(|t| t.content.as_str()).collect();
    assert_eq!(texts, vec!["Command declined.", "Patch declined."]);
    assert_gapless(&r.events);
    assert_in_order(&r.events, &["approvalResolved", "toolResult", "turnCompleted", "runFinished"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_hanging_provider_is_cut_off_by_the_idle_timeout() {
    if isolated!("real_codex_hanging_provider_is_cut_off_by_the_idle_timeout") {
        return;
    }
    let s = codex_setup(Script::text("never").with_fault(FaultKind::Hang, None)).await;
    let r = s.run(&["--idle-timeout", "2", "say hi"]).await;
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("run failed (apiError)") && r.stderr.contains("no progress for 2 s"),
        "{}",
        r.stderr
    );
    let error = first!(r.events, Error);
    assert_eq!(error.code, nucleic_protocol::ErrorCode::Timeout);
    assert_in_order(&r.events, &["sessionStarted", "error", "runFinished"]);
    assert_gapless(&r.events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_exec_default_is_read_only() {
    if isolated!("real_codex_exec_default_is_read_only") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let before = listing(&s.cwd());
    let r = s.run(&["--exec", "create the files"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(listing(&s.cwd()), before, "{:#?}", r.events);
    assert!(!r.events.iter().any(|e| matches!(e.kind, EventKind::ApprovalRequested(_))));
    assert_in_order(
        &r.events,
        &[
            "sessionCreated",
            "sessionStarted",
            "assistantText",
            "usage",
            "turnCompleted",
            "runFinished",
        ],
    );
    assert!(tool_results(&r.events).iter().all(|t| t.is_error), "{:#?}", r.events);
    assert_eq!(first!(r.events, RunFinished).outcome, RunOutcome::Completed);
    assert_gapless(&r.events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_exec_accept_edits_then_resume() {
    if isolated!("real_codex_exec_accept_edits_then_resume") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let r = s.run(&["--exec", "--permission-mode", "acceptEdits", "create the files"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let cwd = s.cwd();
    assert!(cwd.join("created.txt").exists(), "{:#?}", r.events);
    assert_eq!(std::fs::read_to_string(cwd.join("patched.txt")).unwrap(), "hello\n");
    assert_in_order(
        &r.events,
        &["sessionStarted", "toolCallStarted", "toolResult", "turnCompleted", "runFinished"],
    );
    assert!(tool_results(&r.events).iter().all(|t| !t.is_error), "{:#?}", r.events);
    let thread = first!(r.events, SessionStarted).backend_session_id;

    s.mock.set_script(Script::text("resumed"));
    let r = s.run(&["--exec", "--resume", &thread, "what did you do?"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(first!(r.events, SessionStarted).backend_session_id, thread);
    assert_eq!(first!(r.events, TurnCompleted).result.as_deref(), Some("resumed"));
    let last = s.mock.requests().into_iter().rev().find(|q| q.path.ends_with("/responses"));
    assert!(last.unwrap().body["input"].to_string().contains("create the files"));
}

/// The rollout files under `CODEX_HOME/sessions/YYYY/MM/DD/`.
fn rollouts(codex_home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![codex_home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().unwrap().to_string_lossy().starts_with("rollout-") {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_rollout_imports_as_a_read_only_session() {
    if isolated!("real_codex_rollout_imports_as_a_read_only_session") {
        return;
    }
    let script = Script::shell_and_patch_then_done("touch created.txt", "patched.txt", "hello\n");
    let s = codex_setup(script).await;
    let r = s.run(&["--approve", "allow", "create the files"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let thread = first!(r.events, SessionStarted).backend_session_id;
    let found = rollouts(&s.dir.path().join(".codex-home"));
    assert_eq!(found.len(), 1, "{found:?}");
    let rollout = &found[0];
    assert!(rollout.to_string_lossy().ends_with(&format!("-{thread}.jsonl")), "{rollout:?}");

    let home = s.dir.path().join("import-home");
    let _guard = crate::daemon::DaemonGuard(home.clone());
    let env: Vec<(&str, &str)> = s.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, out, err) =
        crate::daemon::cli_env(&home, &["import", rollout.to_str().unwrap()], &env).await;
    assert_eq!(code, 0, "{err}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    let (code, out, err) = crate::daemon::cli_env(&home, &["session", "show", &id], &env).await;
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["backend"], "codex", "{summary}");
    assert_eq!(summary["title"], "create the files");
    let path = home.join("sessions").join(&id).join("transcript.jsonl");
    let events = nucleic_store::read_transcript(&path, 1).unwrap().events;
    assert_gapless(&events);
    // The conversation the live run showed, read back from codex's own file.
    assert_in_order(
        &events,
        &[
            "sessionCreated",
            "sessionStarted",
            "userText",
            "toolCallStarted",
            "toolCallStarted",
            "toolResult",
            "toolResult",
            "assistantText",
            "turnCompleted",
        ],
    );
    let created = first!(events, SessionCreated);
    assert!(created.read_only);
    assert_eq!(first!(events, SessionStarted).backend_session_id, thread);
    let names: Vec<String> =
        events.iter().filter_map(|e| pick!(&e.kind, ToolCallStarted).map(|c| c.name)).collect();
    assert_eq!(names, vec!["shell", "apply_patch"]);
    assert!(tool_results(&events).iter().all(|t| !t.is_error), "{events:#?}");
    assert_eq!(first!(events, TurnCompleted).result.as_deref(), Some("done"));
    // Read-only: a follow-up is refused.
    let (code, _, err) =
        crate::daemon::cli_env(&home, &["session", "send", &id, "more"], &env).await;
    assert_eq!(code, 2);
    assert!(err.contains("read-only"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_exec_hanging_provider_is_cut_off_by_the_idle_timeout() {
    if isolated!("real_codex_exec_hanging_provider_is_cut_off_by_the_idle_timeout") {
        return;
    }
    let s = codex_setup(Script::text("never").with_fault(FaultKind::Hang, None)).await;
    let r = s.run(&["--exec", "--idle-timeout", "2", "say hi"]).await;
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("run failed (apiError)") && r.stderr.contains("no progress for 2 s"),
        "{}",
        r.stderr
    );
    assert_eq!(first!(r.events, Error).code, nucleic_protocol::ErrorCode::Timeout);
    assert_gapless(&r.events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_model_reaches_the_thread_and_the_provider() {
    if isolated!("real_codex_model_reaches_the_thread_and_the_provider") {
        return;
    }
    let s = codex_setup(Script::text("hi from another model")).await;
    let r = s.run(&["--model", "mock-model", "say hi"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(first!(r.events, SessionStarted).model, "mock-model");
    assert_eq!(first!(r.events, TurnCompleted).result.as_deref(), Some("hi from another model"));
    let asked = s.mock.requests().into_iter().find(|q| q.path.ends_with("/responses")).unwrap();
    assert_eq!(asked.body["model"], "mock-model");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_unanswered_approval_times_out_as_a_decline() {
    if isolated!("real_codex_unanswered_approval_times_out_as_a_decline") {
        return;
    }
    let s = codex_setup(Script::shell_then_done("touch created.txt")).await;
    let cwd = s.cwd();
    // The terminal stays open and silent: only the timeout can answer.
    let mut child = tokio::process::Command::new(nucleic())
        .args(["run", "--agent", "codex", "--agent-bin", &s.codex, "--json"])
        .args(["--approval-timeout", "1", "create it"])
        .current_dir(&cwd)
        .env("NUCLEIC_HOME", cwd.join(".nh"))
        .envs(s.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<nucleic_protocol::Event> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!cwd.join("created.txt").exists());
    let resolved = first!(events, ApprovalResolved);
    assert_eq!(resolved.by, "host:timeout", "{resolved:?}");
    assert_eq!(tool_results(&events)[0].content, serde_json::json!("Command declined."));
    assert_gapless(&events);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_exec_ctrl_c_stops_it() {
    if isolated!("real_codex_exec_ctrl_c_stops_it") {
        return;
    }
    let s = codex_setup(Script::text("never").with_fault(FaultKind::Hang, None)).await;
    let cwd = s.cwd();
    let child = tokio::process::Command::new(nucleic())
        .args(["run", "--agent", "codex", "--agent-bin", &s.codex, "--json", "--exec", "say hi"])
        .current_dir(&cwd)
        .env("NUCLEIC_HOME", cwd.join(".nh"))
        .envs(s.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the model request hangs, press Ctrl-C once.
    for _ in 0..100 {
        if s.mock.requests().iter().any(|q| q.path.ends_with("/responses")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("one Ctrl-C ends an exec run")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot be interrupted; stopping it"), "{stderr}");
    let events: Vec<nucleic_protocol::Event> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(first!(events, RunFinished).outcome, RunOutcome::Stopped);
}
