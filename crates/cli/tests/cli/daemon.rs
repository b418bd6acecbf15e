//! The daemon end to end: `nucleic project …` / `nucleic session …` start it on demand and
//! drive sessions of the simulated agent through the sync protocol.

use std::path::Path;
use std::time::Duration;

use crate::support::nucleic;

/// Runs `nucleic <args>` with `home` as NUCLEIC_HOME; returns (exit code, stdout, stderr).
async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(nucleic())
        .args(args)
        .env("NUCLEIC_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stops the daemon of `home` when dropped.
struct DaemonGuard(std::path::PathBuf);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(self.0.join("daemon.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(pid) = v["pid"].as_i64()
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_drives_sessions_through_an_auto_started_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hi\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "init"]);

    let (code, project, err) = cli(&home, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let mode = std::fs::metadata(home.join("token")).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);

    let (code, out, err) = cli(
        &home,
        &[
            "session",
            "new",
            "--project",
            &project,
            "--agent",
            "sim",
            "write hello.txt containing hi",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();

    // Wait for the approval, then answer it from another CLI process.
    let mut request = None;
    for _ in 0..100 {
        let (_, out, _) = cli(&home, &["session", "show", &session]).await;
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v["pendingApprovals"] == 1 {
            request = Some(v);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(request.is_some(), "no approval appeared");
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let text = std::fs::read_to_string(&transcript).unwrap();
    let request_id = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["kind"]["type"] == "approvalRequested")
        .map(|e| e["kind"]["requestID"].as_str().unwrap().to_owned())
        .unwrap();
    let (code, _, err) = cli(&home, &["session", "approve", &session, &request_id]).await;
    assert_eq!(code, 0, "{err}");
    // A second answer is refused, naming who answered.
    let (code, _, err) = cli(&home, &["session", "deny", &session, &request_id, "too late"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("alreadyResolved") && err.contains("terminal"), "{err}");

    for _ in 0..100 {
        let (_, out, _) = cli(&home, &["session", "diff", &session]).await;
        if out.contains("hello.txt") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, diff, _) = cli(&home, &["session", "diff", &session]).await;
    assert!(diff.contains("untracked") && diff.contains("hello.txt"), "{diff}");
    let (code, _, err) = cli(&home, &["session", "merge", &session, "-m", "add hello"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(git(&root, &["show", "main:hello.txt"]), "hi\n");
    let (_, list, _) = cli(&home, &["session", "list"]).await;
    assert!(list.contains(&session), "{list}");
}
