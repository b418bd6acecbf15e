//! The runner against real processes and the parsers against real runners' output.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nucleic_checks::{CheckCommand, CheckError, CheckRun, counts_in, run_check};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name))
        .unwrap()
}

#[test]
fn counts_of_real_and_sample_runner_outputs() {
    type Expected = (u64, u64, u64, &'static str);
    let cases: &[(&str, Expected)] = &[
        // Real outputs (cargo 1.95, cargo-nextest, pytest 8, node 20's test runner).
        ("cargo-test.txt", (1, 1, 1, "cargo")),
        ("nextest.txt", (2, 1, 1, "nextest")),
        ("pytest.txt", (2, 1, 1, "pytest")),
        ("node-test-tap.txt", (1, 1, 1, "node")),
        ("node-test-spec.txt", (1, 1, 1, "node")),
        ("plain-exit0-with-failures.txt", (2, 1, 0, "plain")),
        // Samples in the runners' formats (no such runner on the machine).
        ("go-test-v.sample.txt", (2, 1, 1, "go")),
        ("vitest.sample.txt", (1, 1, 1, "vitest")),
        ("jest.sample.txt", (1, 1, 1, "jest")),
    ];
    for (name, want) in cases {
        let c = counts_in(&fixture(name)).unwrap_or_else(|| panic!("{name}: no counts"));
        assert_eq!((c.passed, c.failed, c.skipped, c.runner), *want, "{name}");
    }
}

fn command(dir: &Path, argv: &[&str], timeout: Duration) -> CheckCommand {
    CheckCommand {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: dir.to_owned(),
        timeout,
        env_allow: vec!["CHECKS_TEST_ALLOWED".into()],
        isolation: None,
        log_path: dir.join("logs/check.log"),
        log_cap: nucleic_checks::LOG_CAP_BYTES,
    }
}

async fn run(cmd: &CheckCommand) -> (Result<CheckRun, CheckError>, Vec<(Instant, String)>) {
    let mut pieces = Vec::new();
    let (_stop, stop) = tokio::sync::watch::channel(false);
    let result = run_check(cmd, |t| pieces.push((Instant::now(), t)), stop).await;
    (result, pieces)
}

fn alive(pid: u32) -> bool {
    nucleic_agents::process::proc_stat(pid).is_some_and(|s| !s.zombie)
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

#[tokio::test]
async fn a_hanging_check_is_killed_whole_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let s = script(
        dir.path(),
        "hang.sh",
        &format!(
            "sleep 300 & echo $! > {p}; setsid sleep 300 & echo $! >> {p}; echo started; sleep 300\n",
            p = pids.display()
        ),
    );
    let started = Instant::now();
    let (result, _) = run(&command(dir.path(), &[&s], Duration::from_millis(800))).await;
    let run = result.unwrap();
    assert!(run.timed_out);
    assert_eq!(run.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let children: Vec<u32> =
        std::fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(children.len(), 2);
    for pid in children {
        assert!(!alive(pid), "{pid} outlived the timeout");
    }
}

#[tokio::test]
async fn a_daemon_it_forks_is_killed_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    // Double fork + setsid, output closed: reparented away from the check, in a session and
    // group of its own, holding no pipe.
    let s = script(
        dir.path(),
        "daemon.sh",
        &format!(
            "( setsid sh -c 'echo $$ > {p}; exec sleep 300' </dev/null >/dev/null 2>&1 & ) ; sleep 0.2; echo '1 passed, 0 failed'\n",
            p = pidfile.display()
        ),
    );
    let (result, _) = run(&command(dir.path(), &[&s], Duration::from_secs(20))).await;
    let run = result.unwrap();
    assert_eq!(run.exit_code, Some(0));
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(run.leftovers_killed >= 1, "{run:?}");
    assert!(!alive(pid), "the daemon {pid} outlived its check");
}

#[tokio::test]
async fn a_flood_of_output_is_capped_in_the_log_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(
        dir.path(),
        &["sh", "-c", "head -c 6000000 /dev/zero | tr '\\0' 'x'; echo; echo '3 passed, 0 failed'"],
        Duration::from_secs(30),
    );
    cmd.log_cap = 1 << 20;
    let (result, pieces) = run(&cmd).await;
    let run = result.unwrap();
    assert_eq!(run.output_bytes, 6_000_000 + 1 + 19);
    assert_eq!(run.log_bytes, 1 << 20);
    let log = std::fs::metadata(&cmd.log_path).unwrap();
    assert_eq!(log.permissions().mode() & 0o777, 0o600);
    assert!(log.len() < (1 << 20) + 200, "{}", log.len());
    // The counts come from the end, past the cap.
    assert_eq!(run.counts.map(|c| c.passed), Some(3));
    // Streamed pieces stop at their own cap.
    let streamed: usize = pieces.iter().map(|(_, t)| t.len()).sum();
    assert!(streamed <= nucleic_checks::run::STREAM_CAP_BYTES + 200, "{streamed}");
}

#[tokio::test]
async fn output_comes_in_batches_at_most_every_250_ms() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = command(
        dir.path(),
        &["sh", "-c", "i=0; while [ $i -lt 40 ]; do echo line $i; i=$((i+1)); sleep 0.02; done"],
        Duration::from_secs(30),
    );
    let (result, pieces) = run(&cmd).await;
    assert_eq!(result.unwrap().exit_code, Some(0));
    let text: String = pieces.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(text.lines().count(), 40);
    assert!(pieces.len() < 10, "{} pieces for 40 lines over ~1 s", pieces.len());
    // Batches during the run are a tick apart; the last one (after the exit) may come sooner.
    let during = &pieces[..pieces.len() - 1];
    for pair in during.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= Duration::from_millis(200), "{gap:?}");
    }
}

#[tokio::test]
async fn not_executable_and_missing_programs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain.sh"), "#!/bin/sh\necho hi\n").unwrap();
    let (result, _) = run(&command(dir.path(), &["./plain.sh"], Duration::from_secs(5))).await;
    let err = result.unwrap_err();
    assert!(matches!(err, CheckError::NotExecutable { .. }), "{err}");
    assert!(err.to_string().contains("plain.sh: not executable"), "{err}");
    let (result, _) =
        run(&command(dir.path(), &["no-such-runner-xyz"], Duration::from_secs(5))).await;
    assert!(result.unwrap_err().to_string().contains("no-such-runner-xyz: not found"));
}

/// Runs inside a copy of this test binary started with host-like variables set (the test
/// cannot set variables in its own process: `set_var` is unsafe).
#[tokio::test]
async fn the_environment_is_scrubbed_to_the_basics_and_the_allow_list() {
    if std::env::var_os("CHECKS_TEST_CHILD").is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "the_environment_is_scrubbed_to_the_basics_and_the_allow_list"])
            .env("CHECKS_TEST_CHILD", "1")
            .env("NUCLEIC_HOME", "/secret")
            .env("NUCLEIC_TOKEN_HINT", "x")
            .env("CHECKS_TEST_ALLOWED", "yes")
            .env("CHECKS_TEST_OTHER", "no")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (result, pieces) = run(&command(dir.path(), &["env"], Duration::from_secs(5))).await;
    assert_eq!(result.unwrap().exit_code, Some(0));
    let text: String = pieces.iter().map(|(_, t)| t.as_str()).collect();
    assert!(text.contains("CHECKS_TEST_ALLOWED=yes"), "{text}");
    assert!(text.contains("PATH="), "{text}");
    assert!(!text.contains("NUCLEIC_"), "{text}");
    assert!(!text.contains("CHECKS_TEST_OTHER"), "{text}");
    assert!(!text.contains("CHECKS_TEST_CHILD"), "{text}");
}
