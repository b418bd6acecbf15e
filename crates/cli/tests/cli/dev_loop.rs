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
fn demo_repo(dir: &Path) -> std::path::PathBuf {
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
fn events_of(home: &Path, session: &str, kind: &str) -> Vec<Value> {
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
async fn report_number(home: &Path, session: &str, n: usize) -> Value {
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
        &["project", "check", "add", &project, "tests", "--timeout", "60", "--", "python3", "test_calc.py"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tests  timeout 60 s  python3 test_calc.py"), "{out}");
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
    assert_eq!((finished[0]["passed"].as_u64(), finished[0]["failed"].as_u64()), (Some(1), Some(1)));
    let log = finished[0]["logPath"].as_str().unwrap();
    let mode = std::fs::metadata(log).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    assert!(std::fs::read_to_string(log).unwrap().contains("FAIL add(1, 2) = 2, want 3"));
    assert!(!events_of(&home, &session, "checkOutput").is_empty());
    let contradictions = report["contradictions"].as_array().unwrap();
    let claims: Vec<&str> = contradictions.iter().map(|c| c["claim"].as_str().unwrap()).collect();
    assert_eq!(claims, ["Fixed the add bug.", "All tests pass."], "{report}");
    assert!(contradictions[1]["fact"].as_str().unwrap().contains("tests FAILED: 1 passed, 1 failed"));
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
    let (code, _, err) = cli(&home, &["session", "merge", &session, "--update-checkout", "--force", " "]).await;
    assert_ne!(code, 0);
    assert!(err.contains("needs a reason"), "{err}");
    assert_eq!(git(&root, &["rev-parse", "main"]), main_before);

    // The real fix: the check passes, the report is clean, the merge goes through.
    let (code, _, err) = cli(
        &home,
        &["session", "send", &session, "edit calc.py: return a * b -> return a + b then say Fixed it for real."],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let report = report_number(&home, &session, 3).await;
    assert_eq!(report["contradictions"], serde_json::json!([]), "{report}");
    assert_eq!(report["checks"][0]["outcome"], "passed", "{report}");
    assert_eq!(report["checks"][0]["passed"], 2);
    let (code, out, err) = cli(&home, &["session", "merge", &session, "--update-checkout", "-m", "fix add"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("newTip"), "{out}");
    let merged = git(&root, &["show", "main:calc.py"]);
    assert!(merged.contains("return a + b"), "{merged}");
}
