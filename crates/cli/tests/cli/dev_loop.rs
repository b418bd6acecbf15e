//! The safe dev loop through the daemon (`docs/dev-loop.md`): a demo project with a failing
//! test, its check run by the host after every turn; the simulated agent "fixes" it wrongly and
//! claims success → the check fails, the report flags the contradiction, merging is refused;
//! a real fix → the check passes, the report is clean, merging goes through.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::daemon::{DaemonGuard, cli_env, git};

async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

/// A Python project whose `add` subtracts, and a test script that prints the plain
/// `N passed, N failed` line.
pub(crate) fn demo_repo(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("calc");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        root.join("test_calc.py"),
        "from calc import add\n\
         cases = [((2, 2), 4), ((1, 2), 3)]\n\
         failed = 0\n\
         for args, want in cases:\n\
         \x20   got = add(*args)\n\
         \x20   if got != want:\n\
         \x20       failed += 1\n\
         \x20       print(f'FAIL add{args} = {got}, want {want}')\n\
         print(f'tests: {len(cases) - failed} passed, {failed} failed')\n\
         raise SystemExit(1 if failed else 0)\n",
    )
    .unwrap();
    // What the check leaves behind is ignored, as in any Python project.
    std::fs::write(root.join(".gitignore"), "__pycache__/\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "calc with a bug"]);
    root.canonicalize().unwrap()
}

/// The session's events of `kind`, from its transcript.
pub(crate) fn events_of(home: &Path, session: &str, kind: &str) -> Vec<Value> {
    let path = home.join("sessions").join(session).join("transcript.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"]["type"] == kind)
        .map(|e| e["kind"].clone())
        .collect()
}

/// Waits (at most 60 s) until the session has `n` reports; the last one.
pub(crate) async fn report_number(home: &Path, session: &str, n: usize) -> Value {
    let start = Instant::now();
    loop {
        let reports = events_of(home, session, "report");
        if reports.len() >= n {
            return reports[n - 1].clone();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no report #{n} within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_fix_is_caught_by_the_hosts_check_and_a_real_one_merges() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = demo_repo(dir.path());

    let (code, project, err) = cli(&home, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let (code, out, err) = cli(
        &home,
        &[
            "project",
            "check",
            "add",
            &project,
            "tests",
            "--timeout",
            "60",
            "--",
            "python3",
            // No bytecode cache: a same-size edit within the second of the last compile would
            // otherwise run the stale `.pyc` (Python checks the source's mtime in seconds).
            "-B",
            "test_calc.py",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tests  timeout 60 s  python3 -B test_calc.py"), "{out}");
    let (code, _, err) = cli(&home, &["project", "check", "after-turn", &project, "on"]).await;
    assert_eq!(code, 0, "{err}");
    // Bad input: a check the host's own variable cannot reach, a command that is empty.
    let (code, _, err) = cli(
        &home,
        &["project", "check", "add", &project, "leak", "--env", "NUCLEIC_HOME", "--", "env"],
    )
    .await;
    assert_ne!(code, 0);
    assert!(err.contains("host's own variable"), "{err}");

    // The wrong fix, with a confident claim.
    let (code, out, err) = cli(
        &home,
        &[
            "session",
            "new",
            "--project",
            &project,
            "--agent",
            "sim",
            "--permission-mode",
            "acceptEdits",
            "edit calc.py: return a - b -> return a * b then say Fixed the add bug. All tests pass.",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();

    let report = report_number(&home, &session, 1).await;
    let finished = events_of(&home, &session, "checkFinished");
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0]["outcome"], "failed");
    assert_eq!(
        (finished[0]["passed"].as_u64(), finished[0]["failed"].as_u64()),
        (Some(1), Some(1))
    );
    let log = finished[0]["logPath"].as_str().unwrap();
    let mode = std::fs::metadata(log).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    assert!(std::fs::read_to_string(log).unwrap().contains("FAIL add(1, 2) = 2, want 3"));
    assert!(!events_of(&home, &session, "checkOutput").is_empty());
    let contradictions = report["contradictions"].as_array().unwrap();
    let claims: Vec<&str> = contradictions.iter().map(|c| c["claim"].as_str().unwrap()).collect();
    assert_eq!(claims, ["Fixed the add bug.", "All tests pass."], "{report}");
    assert!(
        contradictions[1]["fact"].as_str().unwrap().contains("tests FAILED: 1 passed, 1 failed")
    );
    let (_, diff, _) = cli(&home, &["session", "diff", &session]).await;
    assert_eq!(report["files"], serde_json::json!(["calc.py"]), "{report}\n{diff}");
    assert_eq!(report["taskPaths"], serde_json::json!(["calc.py"]));

    // On demand, as a person reads it.
    let (code, out, err) = cli(&home, &["session", "report", &session]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("NOT CLEAN"), "{out}");
    assert!(out.contains("\"All tests pass.\" — but the host's check tests FAILED"), "{out}");
    let (code, out, _) = cli(&home, &["session", "check", &session, "tests"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("tests FAILED: 1 passed, 1 failed"), "{out}");

    // The gate: refused while the check fails; an empty reason does not force it.
    let main_before = git(&root, &["rev-parse", "main"]);
    let (code, _, err) = cli(&home, &["session", "merge", &session, "--update-checkout"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("required checks fail (tests FAILED"), "{err}");
    let (code, _, err) =
        cli(&home, &["session", "merge", &session, "--update-checkout", "--force", " "]).await;
    assert_ne!(code, 0);
    assert!(err.contains("needs a reason"), "{err}");
    assert_eq!(git(&root, &["rev-parse", "main"]), main_before);

    // The real fix: the check passes, the report is clean, the merge goes through.
    let (code, _, err) = cli(
        &home,
        &[
            "session",
            "send",
            &session,
            "edit calc.py: return a * b -> return a + b then say Fixed it for real.",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let report = report_number(&home, &session, 3).await;
    assert_eq!(report["contradictions"], serde_json::json!([]), "{report}");
    assert_eq!(report["checks"][0]["outcome"], "passed", "{report}");
    assert_eq!(report["checks"][0]["passed"], 2);
    let (code, out, err) =
        cli(&home, &["session", "merge", &session, "--update-checkout", "-m", "fix add"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("newTip"), "{out}");
    let merged = git(&root, &["show", "main:calc.py"]);
    assert!(merged.contains("return a + b"), "{merged}");
}

// ----- the host in process: stops, the gate forced, bad checks --------------------------------

use nucleic_protocol::{CheckOutcome, CheckSpec, CheckTrigger, EventKind, FinishAction, Intent};

use crate::host_support::{approve_until_turn_done, host, new_session, repo};

fn check(name: &str, argv: &[&str], timeout_secs: u64) -> CheckSpec {
    CheckSpec {
        name: name.into(),
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        timeout_secs,
        env: Vec::new(),
        required: true,
    }
}

/// A session (turn done, agent waiting) of a project with these checks.
async fn session_with(
    dir: &Path,
    checks: Vec<CheckSpec>,
) -> (std::sync::Arc<nucleic_host::Host>, String, std::path::PathBuf) {
    let root = repo(dir);
    let host = host(dir).await;
    let project =
        host.add_project(root.to_str().unwrap(), None, move |s| s.checks = checks).await.unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write notes.txt containing hi"), "test")
        .await
        .unwrap();
    approve_until_turn_done(&host, &s.session_id).await;
    // The turn's end reaches the status a moment later: finishing refuses a working session.
    let start = Instant::now();
    while host.session_summary(&s.session_id).await.unwrap().status
        == nucleic_protocol::SessionStatus::Running
    {
        assert!(start.elapsed() < Duration::from_secs(10), "the session stays running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (host, s.session_id, root)
}

/// Pids of live processes whose command line is `sleep <marker>`.
fn sleepers(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{marker}\0").as_bytes())
        })
        .filter(|p| nucleic_agents::process::proc_stat(*p).is_some_and(|s| !s.zombie))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_the_session_kills_its_running_check_whole() {
    let dir = tempfile::tempdir().unwrap();
    let hang = check("hang", &["sh", "-c", "sleep 3101 & sleep 3101"], 120);
    let (host, id, _) = session_with(dir.path(), vec![hang]).await;
    let running = {
        let (host, id) = (host.clone(), id.clone());
        tokio::spawn(async move { host.run_checks(&id, None, CheckTrigger::Request).await })
    };
    let start = Instant::now();
    while sleepers("3101").len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(20), "the check never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopped = Instant::now();
    host.intent(Intent::Stop { session_id: id.clone() }, "test").await.unwrap();
    let results =
        tokio::time::timeout(Duration::from_secs(10), running).await.unwrap().unwrap().unwrap();
    assert_eq!(results[0].outcome, CheckOutcome::Stopped);
    assert!(stopped.elapsed() < Duration::from_secs(5), "{:?}", stopped.elapsed());
    assert_eq!(sleepers("3101"), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_that_forks_a_daemon_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = check(
        "daemon",
        &[
            "sh",
            "-c",
            "(setsid sleep 3102 </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo '1 passed, 0 failed'",
        ],
        30,
    );
    let (host, id, _) = session_with(dir.path(), vec![daemon]).await;
    let results = host.run_checks(&id, None, CheckTrigger::Request).await.unwrap();
    assert_eq!(results[0].outcome, CheckOutcome::Passed, "{:?}", results[0]);
    assert_eq!(sleepers("3102"), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn printed_failures_refuse_the_merge_and_a_forced_merge_records_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    // Exits 0 but prints a failure: the counts win.
    let liar = check("tests", &["sh", "-c", "echo 'tests: 3 passed, 1 failed'; exit 0"], 30);
    let (host, id, root) = session_with(dir.path(), vec![liar]).await;
    let merge = |force: Option<&str>| FinishAction::Merge {
        message: None,
        update_checkout: true,
        force_reason: force.map(str::to_owned),
    };
    let err = host.finish(&id, merge(None), "test").await.unwrap_err();
    assert_eq!(err.code(), nucleic_protocol::ProtocolErrorCode::GitRefused, "{err}");
    assert!(err.to_string().contains("tests FAILED: 3 passed, 1 failed (exit 0"), "{err}");
    assert!(!root.join("notes.txt").exists());
    host.finish(&id, merge(Some("hotfix; the test is known to be flaky")), "test").await.unwrap();
    assert!(root.join("notes.txt").exists());
    let transcript = dir.path().join("home/sessions").join(&id).join("transcript.jsonl");
    let events = nucleic_store::read_transcript(&transcript, 1).unwrap().events;
    let flags: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CheckFinished(c) => c.flag.clone(),
            _ => None,
        })
        .collect();
    assert!(
        flags.iter().all(|f| f.contains("exit code 0, but the output reports 1 failed")),
        "{flags:?}"
    );
    let forced = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::WorktreeFinished(w) => w.forced_reason.clone(),
            _ => None,
        })
        .unwrap();
    assert!(
        forced.starts_with("hotfix; the test is known to be flaky (failing: tests FAILED"),
        "{forced}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_that_cannot_run_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let checks =
        vec![check("plain", &["./README.md"], 30), check("missing", &["no-such-test-runner"], 30)];
    let (host, id, _) = session_with(dir.path(), checks).await;
    let results = host.run_checks(&id, None, CheckTrigger::Request).await.unwrap();
    assert_eq!(results[0].outcome, CheckOutcome::Error);
    assert!(
        results[0].error.as_deref().unwrap().ends_with("README.md: not executable"),
        "{:?}",
        results[0]
    );
    assert!(results[1].error.as_deref().unwrap().contains("no-such-test-runner: not found"));
    let err = host.run_checks(&id, Some("nope"), CheckTrigger::Request).await.unwrap_err();
    assert!(err.to_string().contains("check \"nope\" (the project has: plain, missing)"), "{err}");
}
