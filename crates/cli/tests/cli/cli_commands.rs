//! The CLI's session and project commands against a daemon with the simulated agent: disk
//! sizes and reclaiming, the project's mode, one turn's diff and a review sent.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::daemon::{DaemonGuard, cli_env};
use crate::host_support::repo;

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_shows_disk_per_session_and_gc_reclaims_over_budget_after_a_dry_run() {
    use crate::daemon::empty_repo;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = empty_repo(dir.path());
    let cli = |args: &'static [&'static str]| cli_env(&home, args, &[]);
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let new = ["session", "new", "--project", &project, "--agent", "sim", "say hi"];
    let (code, out, err) = cli_env(&home, &new, &[]).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    for _ in 0..100 {
        let (_, out, _) = cli_env(&home, &["session", "show", &session], &[]).await;
        if out.contains("\"awaiting-input\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, out, err) = cli_env(&home, &["session", "disk", &session], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("build output"), "{out}");
    let (_, list, _) = cli(&["session", "list"]).await;
    assert!(list.contains(" KB ") || list.contains(" MB "), "a size in the list: {list}");

    let (code, _, err) =
        cli_env(&home, &["project", "disk", &project, "--budget", "lots"], &[]).await;
    assert_eq!(code, 2);
    assert!(err.contains("not a size like 500M"), "{err}");
    let (code, out, err) =
        cli_env(&home, &["project", "disk", &project, "--budget", "1K"], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("budget: 1.0 KB") && out.contains(&session), "{out}");

    let (code, out, err) = cli(&["gc"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("due for reclaiming (dry run; --apply reclaims) {session}")),
        "{out}"
    );
    assert!(out.contains("; budget)"), "{out}");
    let (code, out, err) = cli(&["gc", "--apply"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("reclaimed {session}")), "{out}");
    let (_, list, _) = cli(&["session", "list"]).await;
    assert!(list.contains("reclaimed"), "{list}");
    let (code, _, err) = cli_env(&home, &["session", "reclaim", &session], &[]).await;
    assert_eq!(code, 2);
    assert!(err.contains("already reclaimed"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_shows_and_sets_the_projects_mode_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = repo(dir.path());
    let cli = |args: Vec<String>| {
        let home = home.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli_env(&home, &args, &[]).await
        }
    };
    let argv = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let (code, project, err) = cli(argv(&["project", "add", root.to_str().unwrap()])).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let (code, out, err) = cli(argv(&["project", "mode", &project])).await;
    assert_eq!((code, out.trim()), (0, "edit"), "{err}");
    let (code, out, err) = cli(argv(&["project", "mode", &project, "full"])).await;
    assert_eq!((code, out.trim()), (0, "full"), "{err}");
    let (code, _, err) = cli(argv(&["project", "mode", &project, "yolo"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("yolo") && err.contains("readonly, edit or full"), "{err}");
    let (code, out, _) = cli(argv(&["project", "mode", &project])).await;
    assert_eq!((code, out.trim()), (0, "full"));
    let (code, out, err) = cli(argv(&["project", "mode", &project, "--clear"])).await;
    assert_eq!((code, out.trim()), (0, "edit"), "{err}");
    // A simulated session has no policy: `--mode` and `session mode` are refused, clearly.
    let new =
        argv(&["session", "new", "--project", &project, "--agent", "sim", "--mode", "full", "hi"]);
    let (code, _, err) = cli(new).await;
    assert_ne!(code, 0);
    assert!(err.contains("no policy"), "{err}");
    let new = argv(&["session", "new", "--project", &project, "--agent", "sim", "hi"]);
    let (code, out, err) = cli(new).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = cli(argv(&["session", "mode", &session, "readonly"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("no policy"), "{err}");
}

/// Runs the CLI against the daemon of `home` until `done(stdout)` (at most 30 s).
async fn cli_until(home: &Path, args: &[&str], done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let (code, out, err) = cli_env(home, args, &[]).await;
        if code == 0 && done(&out) {
            return out;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{args:?}: {out}{err}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_shows_one_turn_and_sends_a_review() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = repo(dir.path());
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = cli_env(
        &home,
        &["session", "new", "--project", project.trim(), "--agent", "sim"]
            .into_iter()
            .chain(["--permission-mode", "acceptEdits", "write a.txt containing one\\ntwo"])
            .collect::<Vec<_>>(),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    let turn = cli_until(&home, &["session", "diff", &id, "--turn", "1", "--patch"], |o| {
        o.contains("+two")
    })
    .await;
    assert!(turn.starts_with("turn 1 of 1\n") && turn.contains("a.txt"), "{turn}");
    let (code, _, err) = cli_env(&home, &["session", "diff", &id, "--turn", "2"], &[]).await;
    assert_ne!(code, 0);
    assert!(err.contains("turn 2"), "{err}");

    let (code, out, err) = cli_env(
        &home,
        &["session", "review", "comment", &id, "a.txt:2", "Make", "it", "three."],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("a.txt:2  (open)") && out.contains("  > two\n  Make it three.\n"),
        "{out}"
    );
    let comment_id = out.split_whitespace().next().unwrap().to_owned();
    for (args, says) in [
        (
            ["session", "review", "comment", &id, "a.txt:9", "x"],
            "line 9 is past the end of a.txt (2 lines)",
        ),
        (["session", "review", "comment", &id, "a.txt", "x"], "expected PATH:LINE"),
        (["session", "review", "comment", &id, "../a.txt:1", "x"], "not a plain relative path"),
    ] {
        let (code, _, err) = cli_env(&home, &args, &[]).await;
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (code, out, err) = cli_env(&home, &["session", "review", "send", &id], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "sent 1 comment(s) to the agent");
    let (code, _, err) = cli_env(&home, &["session", "review", "send", &id], &[]).await;
    assert_ne!(code, 0);
    assert!(err.contains("no open review comments"), "{err}");
    let listed =
        cli_until(&home, &["session", "review", "list", &id], |o| o.contains("(open, sent)")).await;
    assert!(listed.contains(&comment_id), "{listed}");
    let (code, out, err) =
        cli_env(&home, &["session", "review", "resolve", &id, &comment_id], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(resolved)"), "{out}");
    // The review was turn 2.
    cli_until(&home, &["session", "diff", &id], |o| o.contains("turns with snapshots: 1-2")).await;
}
