//! Plans and questions from the CLI, through an auto-started daemon and the simulated agent:
//! `session new --plan`, `session approve --mode`, `session answer`, and their bad input (a
//! plan approved without a mode or with an unknown one, a choice that does not exist).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::daemon::{DaemonGuard, cli_env, git};

async fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

/// Waits until `session` has one pending approval of `tool`; returns `session show`'s view.
async fn pending(home: &Path, session: &str, tool: &str) -> Value {
    for _ in 0..200 {
        let (_, out, _) = cli(home, &["session", "show", session]).await;
        if let Ok(v) = serde_json::from_str::<Value>(&out)
            && v["approvals"].as_array().is_some_and(|a| a.len() == 1 && a[0]["toolName"] == tool)
        {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no pending {tool} approval in session {session} within 20 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_and_questions_are_answered_from_the_cli() {
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
    let prompt = "plan # Plan\\n1. Ask the color\\n2. Write done.txt then ask Which color? Red / Blue then write done.txt containing ok";
    let args = ["session", "new", "--project", project.trim(), "--agent", "sim", "--plan", prompt];
    let (code, out, err) = cli(&home, &args).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();

    // The plan: refused without a mode, and with an unknown one; approved into edit.
    pending(&home, &session, "ExitPlanMode").await;
    let (code, _, err) = cli(&home, &["session", "approve", &session]).await;
    assert_ne!(code, 0);
    assert!(err.contains("is a plan: approve it with --mode readonly|edit|full"), "{err}");
    let (code, _, err) = cli(&home, &["session", "approve", &session, "--mode", "yolo"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("\"yolo\": expected readonly, edit or full"), "{err}");
    let (code, _, err) = cli(&home, &["session", "approve", &session, "--mode", "edit"]).await;
    assert_eq!(code, 0, "{err}");

    // The question: a choice that does not exist is refused (still pending), naming the choices.
    pending(&home, &session, "AskUserQuestion").await;
    let (code, _, err) = cli(&home, &["session", "answer", &session, "Green"]).await;
    assert_ne!(code, 0);
    assert!(err.contains(r#""Which color?" has no choice "Green" (choices: Red, Blue"#), "{err}");
    let (code, _, err) = cli(&home, &["session", "answer", &session, "Blue", "Red"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("1 question(s) asked"), "{err}");
    pending(&home, &session, "AskUserQuestion").await;
    let (code, _, err) = cli(&home, &["session", "answer", &session, "Blue"]).await;
    assert_eq!(code, 0, "{err}");

    // The agent went on: its write is asked (the simulated agent has no host policy).
    pending(&home, &session, "Write").await;
    let (code, _, err) = cli(&home, &["session", "approve", &session]).await;
    assert_eq!(code, 0, "{err}");
    let transcript = home.join("sessions").join(&session).join("transcript.jsonl");
    let mut resolved = Vec::new();
    for _ in 0..200 {
        let text = std::fs::read_to_string(&transcript).unwrap();
        resolved = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["kind"]["type"] == "approvalResolved")
            .map(|e| (e["kind"]["decision"].clone(), e["kind"]["mode"].clone()))
            .collect();
        if resolved.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let approve_plan = (Value::from("approvePlan"), Value::from("edit"));
    assert_eq!(
        resolved,
        [approve_plan, ("answered".into(), Value::Null), ("allow".into(), Value::Null)]
    );
}
