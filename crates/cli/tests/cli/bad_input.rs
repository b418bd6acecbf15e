//! Bad input at the command line: missing agents, bad paths, bad options.

use crate::support::*;

#[tokio::test]
async fn agent_bin_pointing_at_nothing_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent-bin", "/nonexistent/claude", "hi"], &[]).await;
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot start agent /nonexistent/claude: no such file"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn agent_bin_that_is_not_executable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude");
    std::fs::write(&file, "not a program").unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent-bin", file.to_str().unwrap(), "hi"], &[]).await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("permission denied"), "{}", r.stderr);
}

#[tokio::test]
async fn missing_claude_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PATH".to_owned(), "/nonexistent".to_owned()),
        ("NUCLEIC_AGENT_CACHE".to_owned(), "/nonexistent".to_owned()),
    ];
    let r = run_nucleic(dir.path(), &["run", "--agent", "claude", "hi"], &env).await;
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("claude not found") && r.stderr.contains("--agent sim"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_missing_working_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent", "sim", "--cwd", "/nonexistent/dir", "hi"], &[])
            .await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}

#[tokio::test]
async fn an_unknown_permission_mode_is_refused_before_spawning() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent", "sim", "--permission-mode", "yolo", "hi"], &[])
            .await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("unknown permission mode"), "{}", r.stderr);
}

#[tokio::test]
async fn doctor_reports_each_tool() {
    let out = tokio::process::Command::new(nucleic()).arg("doctor").output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for tool in ["git", "claude", "codex", "sim", "confinement", "git confinement"] {
        assert!(text.lines().any(|l| l.starts_with(tool)), "no line for {tool}:\n{text}");
    }
    assert!(text.contains("verdict:"));
    // The pinned installs (what scripts/test.sh installs) are recognised as the tested versions.
    for tool in ["claude", "codex"] {
        let line = text.lines().find(|l| l.starts_with(tool)).unwrap();
        if line.contains("/nucleic/agents/") {
            assert!(line.contains("ok, tested version"), "{line}");
        }
    }
}
