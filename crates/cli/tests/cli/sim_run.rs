//! `nucleic run --agent sim`: the whole path with the built-in simulated agent.

use nucleic_protocol::{EventKind, RunOutcome};
use pretty_assertions::assert_eq;

use crate::support::*;

#[tokio::test]
async fn sim_write_allowed_creates_the_file_with_events_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let r = sim(dir.path(), &["--approve", "allow", "write hello.txt containing hello"], &[]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(), "hello\n");
    assert_gapless(&r.events);
    assert_in_order(
        &r.events,
        &[
            "userText",
            "sessionStarted",
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
    assert!(r.events.iter().all(|e| e.backend == nucleic_protocol::Backend::Simulated));
    // The transcript on disk holds exactly what was printed.
    assert_eq!(transcript_of(dir.path(), &r.events), r.events);
}

#[tokio::test]
async fn sim_write_denied_creates_nothing_and_the_result_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = sim(dir.path(), &["--approve", "deny", "write hello.txt"], &[]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!dir.path().join("hello.txt").exists());
    let result = first!(r.events, ToolResult);
    assert!(result.is_error);
    let resolved = first!(r.events, ApprovalResolved);
    assert_eq!(resolved.by, "cli:--approve deny");
}

#[tokio::test]
async fn sim_human_output_is_readable() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(nucleic())
        .args(["run", "--agent", "sim", "--approve", "allow", "write notes.txt containing hi"])
        .current_dir(dir.path())
        .env("NUCLEIC_HOME", dir.path().join(".nh"))
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let notes = dir.path().join("notes.txt").canonicalize().unwrap();
    for line in [
        "> write notes.txt containing hi".to_owned(),
        format!("⚙ Write file_path={}", notes.display()),
        "  allowed by cli:--approve allow".to_owned(),
        "· run finished: completed".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "missing line {line:?} in:\n{text}");
    }
}

#[tokio::test]
async fn sim_agent_crash_mid_turn_fails_the_run_and_keeps_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("NUCLEIC_SIM_FAULT".to_owned(), "crash_mid_turn".to_owned())];
    let r = sim(dir.path(), &["--approve", "allow", "say hi"], &env).await;
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("run failed (crashed)"), "{}", r.stderr);
    assert!(r.stderr.contains("code 3"), "{}", r.stderr);
    assert_gapless(&r.events);
    let done = first!(r.events, RunFinished);
    assert_eq!(done.outcome, RunOutcome::Crashed);
    assert_eq!(transcript_of(dir.path(), &r.events), r.events);
}

#[tokio::test]
async fn sim_malformed_and_unknown_output_is_kept_raw_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("NUCLEIC_SIM_FAULT".to_owned(), "malformed_stdout,unknown_lines".to_owned())];
    let r = sim(dir.path(), &["say hi"], &env).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let natives: Vec<_> = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Raw(_)))
        .filter_map(|e| e.native_type.clone())
        .collect();
    for t in ["invalid", "brand_new_kind", "system/mystery"] {
        assert!(natives.iter().any(|n| n == t), "no raw {t} in {natives:?}");
    }
    let raw_bad = r.events.iter().find(|e| e.native_type.as_deref() == Some("invalid")).unwrap();
    let EventKind::Raw(raw) = &raw_bad.kind else { panic!() };
    assert_eq!(raw.native.to_value(), serde_json::json!("{this is not json"));
    assert!(r.events.iter().any(
        |e| matches!(&e.kind, EventKind::Error(x) if x.code == nucleic_protocol::ErrorCode::Decode)
    ));
    // Counted too: the malformed line and the two unknown kinds.
    assert_eq!(first!(r.events, RunFinished).unknown_lines, 3);
}

#[tokio::test]
async fn sim_api_error_ends_with_a_clear_reason_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("NUCLEIC_SIM_FAULT".to_owned(), "api_error".to_owned())];
    let r = sim(dir.path(), &["say hi"], &env).await;
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("run failed (apiError)") && r.stderr.contains("500"), "{}", r.stderr);
    assert_in_order(&r.events, &["apiRetry", "error", "turnCompleted", "runFinished"]);
}

#[tokio::test]
async fn sim_hanging_agent_is_stopped_by_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("NUCLEIC_SIM_FAULT".to_owned(), "hang".to_owned())];
    let r = sim(dir.path(), &["--idle-timeout", "1", "say hi"], &env).await;
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("no output for 1 s"), "{}", r.stderr);
    let done = first!(r.events, RunFinished);
    assert_eq!(done.outcome, RunOutcome::Stopped);
    assert!(r.events.iter().any(
        |e| matches!(&e.kind, EventKind::Error(x) if x.code == nucleic_protocol::ErrorCode::Timeout)
    ));
}

#[tokio::test]
async fn sim_runs_on_a_machine_with_no_agent_cli_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("NUCLEIC_AGENT_CACHE".to_owned(), "/nonexistent".to_owned()),
        ("ANTHROPIC_API_KEY".to_owned(), String::new()),
    ];
    let r = sim(dir.path(), &["--approve", "allow", "write a.txt then run cat a.txt"], &env).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].content, serde_json::json!("hello"), "cat ran after the write");
}

#[tokio::test]
async fn sim_terminal_approval_takes_a_deny_reason() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(nucleic())
        .args(["run", "--agent", "sim", "--json", "write secret.txt"])
        .current_dir(dir.path())
        .env("NUCLEIC_HOME", dir.path().join(".nh"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"n not that file\n").await.unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Allow Write"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(r#""decision":"deny","by":"terminal","message":"not that file""#),
        "{stdout}"
    );
    assert!(!dir.path().join("secret.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_nobody_answers_on_an_open_terminal_times_out_and_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    // The terminal stays open and silent: only the timeout can answer, and the run must still
    // end (it once waited for a line nobody would type).
    let mut child = tokio::process::Command::new(crate::support::nucleic())
        .args(["run", "--agent", "sim", "--json", "--approval-timeout", "1"])
        .arg("write hello.txt containing hi")
        .current_dir(&cwd)
        .env("NUCLEIC_HOME", cwd.join(".nh"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the run ended")
        .unwrap();
    drop(stdin);
    let events: Vec<nucleic_protocol::Event> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let resolved = first!(events, ApprovalResolved);
    assert_eq!(resolved.by, "host:timeout");
    assert!(!cwd.join("hello.txt").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered without you"));
}

#[tokio::test]
async fn sim_terminal_answers_plans_and_questions() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let prompt = "plan # P\\n1. write a.txt then ask many Which sizes? S / M / L then write a.txt containing ok";
    let mut child = tokio::process::Command::new(nucleic())
        .args(["run", "--agent", "sim", "--json", "--permission-mode", "plan", prompt])
        .current_dir(dir.path())
        .env("NUCLEIC_HOME", dir.path().join(".nh"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The plan approved into edit; sizes 1 and 3 and free text; the write allowed.
    child.stdin.take().unwrap().write_all(b"edit\n1,3\ny\n").await.unwrap();
    let out = child.wait_with_output().await.unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("--- plan ---\n# P\n1. write a.txt"), "{stderr}");
    assert!(stderr.contains("Which sizes?\n  1. S\n  2. M\n  3. L"), "{stderr}");
    assert!(
        stdout.contains(r#""decision":"approvePlan","by":"terminal","mode":"edit""#),
        "{stdout}"
    );
    assert!(stdout.contains(r#""answers":{"Which sizes?":"S, L"}"#), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "ok\n");
}
