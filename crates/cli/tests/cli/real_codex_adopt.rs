//! A Codex session made in the person's terminal (`codex exec`, pinned, against the mock
//! Responses API, offline, in a loopback-only namespace) carried on under Nucleic: listed,
//! adopted into a worktree of its own, app-server's `thread/fork` carrying its history into a
//! new thread there, and the rollout the person's session wrote left as it was.

use std::path::Path;
use std::time::Duration;

use nucleic_host::AdoptOutside;
use nucleic_protocol::{Backend, EventKind};
use nucleic_testkit::agents::real_codex;
use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::Script;

use crate::daemon::git;
use crate::real_codex::codex_setup;

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_codex_session_is_adopted_as_a_fork_in_a_worktree() {
    if isolated!("a_terminal_codex_session_is_adopted_as_a_fork_in_a_worktree") {
        return;
    }
    let s = codex_setup(Script::text("Noted.")).await;
    let root = s.dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let root = root.canonicalize().unwrap();

    // The person's own session, in the terminal, before Nucleic knows of it.
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new(real_codex())
            .args(["exec", "--json", "remember the word TERMINAL-TURN"])
            .envs(s.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&root)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("codex exec did not finish within 180 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let thread = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "thread.started")
        .and_then(|v| v["thread_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no thread.started in {stdout}"));

    let host = crate::real_codex_host::codex_host(&s).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let found = host.outside_sessions(&project.project_id).await.unwrap();
    let listed = found
        .sessions
        .iter()
        .find(|o| o.id == thread)
        .unwrap_or_else(|| panic!("thread {thread} not listed: {found:#?}"));
    assert_eq!(listed.backend, Backend::Codex);
    let rollout = std::path::PathBuf::from(&listed.path);
    let original = std::fs::read(&rollout).unwrap();

    s.mock.set_script(Script::text("Carried on."));
    let before = s.mock.requests().len();
    let adopt = AdoptOutside {
        project_id: project.project_id.clone(),
        session: thread.clone(),
        prompt: "now say ADOPTED-TURN".into(),
        mode: None,
        in_place: false,
    };
    let summary = host.adopt_outside(adopt, "test").await.unwrap();
    let id = summary.session_id.clone();
    let worktree = summary.worktree.clone().expect("a worktree").path;
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let (mut kinds, mut started) = (Vec::new(), None);
    loop {
        let e = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .expect("the adopted session's turn did not complete within 60 s")
            .unwrap()
            .unwrap();
        if let EventKind::SessionStarted(s) = &e.kind {
            started = Some(s.clone());
        }
        let done = matches!(e.kind, EventKind::TurnCompleted(_)) && started.is_some();
        kinds.push(e.kind.clone());
        if done {
            break;
        }
    }
    host.stop(&id).await.unwrap();

    // A new thread (the fork), running in the session's worktree.
    let started = started.unwrap();
    assert_ne!(started.backend_session_id, thread, "{kinds:#?}");
    assert_eq!(started.cwd, worktree);
    // The transcript: the terminal's turn first, then the adoption's note, then the new turn.
    let texts: Vec<String> = kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::UserText(t) => Some(t.text.clone()),
            EventKind::SessionUpdated(u) => u.note.clone(),
            _ => None,
        })
        .collect();
    assert!(texts[0].contains("TERMINAL-TURN"), "{texts:#?}");
    assert!(texts[1].starts_with("Adopted from the codex session"), "{texts:#?}");
    assert!(texts[2].contains("ADOPTED-TURN"), "{texts:#?}");
    // The model got the earlier conversation with the new turn.
    let carried = s.mock.requests()[before..].iter().any(|r| {
        let body = r.body.to_string();
        body.contains("TERMINAL-TURN") && body.contains("ADOPTED-TURN")
    });
    assert!(carried, "no request carried the terminal's history and the new turn");
    // The person's own rollout is as it was; the checkout has no trace of the adoption.
    assert_eq!(std::fs::read(&rollout).unwrap(), original, "the original rollout changed");
    assert!(Path::new(&worktree).is_dir());
    assert_eq!(git(&root, &["status", "--porcelain"]).trim(), "");
}
