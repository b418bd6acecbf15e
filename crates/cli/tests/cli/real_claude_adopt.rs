//! Adopting a session made outside Nucleic, with the real pinned `claude` against the mock in the
//! loopback namespace: `claude -p` run directly in the person's checkout leaves a session; the
//! host lists it for the project, adopts it into a new worktree (its history first in the
//! transcript), and a new turn — its command asked and answered — reaches the model with the
//! earlier conversation, while the original session file stays byte for byte as it was.

use std::path::Path;

use nucleic_host::{AdoptOutside, Host};
use nucleic_protocol::{Backend, Decision, EventKind, FinishAction};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Reply, Script};

use crate::real_policy::{host_config, run_turn_from, shutdown};

/// Runs the pinned `claude -p PROMPT` in `cwd` with `env`, allowed to edit; its stdout.
pub(crate) fn claude_in_terminal(cwd: &Path, env: &[(String, String)], prompt: &str) -> String {
    let out = std::process::Command::new(real_claude())
        .args(["-p", prompt, "--permission-mode", "acceptEdits", "--output-format", "json"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "claude failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A checkout, the mock, the person's environment, and their own session made there with
/// `claude -p PROMPT` in the terminal, before Nucleic knows of it.
pub(crate) struct Terminal {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) root: std::path::PathBuf,
    pub(crate) mock: MockAnthropic,
    pub(crate) env: Vec<(String, String)>,
    /// The CLI's id of the session.
    pub(crate) session: String,
}

pub(crate) async fn terminal_session(prompt: &str) -> Terminal {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let script = Script::new(vec![Reply::WriteNamedFile, Reply::Text("Done.".into())]);
    let mock = MockAnthropic::start(script).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let out = claude_in_terminal(&root, &env, prompt);
    let session = serde_json::from_str::<serde_json::Value>(&out).unwrap()["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no session id: {out}"))
        .to_owned();
    Terminal { dir, root, mock, env, session }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_claude_session_is_listed_adopted_into_a_worktree_and_carried_on() {
    if isolated!("a_terminal_claude_session_is_listed_adopted_into_a_worktree_and_carried_on") {
        return;
    }
    let Terminal { dir, root, mock, env, session: outside_id } =
        terminal_session("write terminal.txt containing TERMINAL-TURN").await;
    assert!(root.join("terminal.txt").exists());

    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let found = host.outside_sessions(&project.project_id).await.unwrap();
    assert_eq!(found.sessions.len(), 1, "{found:#?}");
    let listed = &found.sessions[0];
    assert_eq!((listed.backend, listed.id.as_str()), (Backend::ClaudeCode, outside_id.as_str()));
    assert!(listed.title.as_deref().unwrap_or_default().contains("terminal.txt"), "{listed:#?}");
    assert!(listed.live.is_none(), "no process holds it: {listed:#?}");
    let original = std::fs::read(&listed.path).unwrap();

    // Adopted: a new turn whose command is asked (edit mode asks before running python).
    let before = mock.requests().len();
    let prompt = "run `python3 -c \"open('adopted.txt','w').write('x')\"`";
    let adopt = AdoptOutside {
        project_id: project.project_id.clone(),
        session: outside_id.clone(),
        prompt: prompt.into(),
        mode: None,
        in_place: false,
    };
    let summary = host.adopt_outside(adopt, "test").await.unwrap();
    let id = summary.session_id.clone();
    let turn = run_turn_from(&host, &id, 1, |_| Decision::Allow).await;
    let session = host.session_summary(&id).await.unwrap();
    shutdown(host).await;

    assert!(!turn.asked.is_empty(), "the new turn's command was asked: {:#?}", turn.events);
    // The transcript starts with the terminal's history, then the adoption, then the new turn.
    let texts: Vec<String> = turn
        .events
        .iter()
        .filter_map(|k| match k {
            EventKind::UserText(t) => Some(t.text.clone()),
            EventKind::SessionUpdated(u) => u.note.clone(),
            _ => None,
        })
        .collect();
    assert!(texts[0].contains("TERMINAL-TURN"), "{texts:#?}");
    assert!(texts[1].starts_with("Adopted from the claudeCode session"), "{texts:#?}");
    assert!(texts[2].contains("adopted.txt"), "{texts:#?}");
    // The model got the earlier conversation with the new turn.
    let new_requests = &mock.requests()[before..];
    assert!(
        new_requests.iter().any(|r| {
            let body = r.body.to_string();
            body.contains("TERMINAL-TURN") && body.contains("adopted.txt")
        }),
        "no request carried the history and the new turn"
    );
    // A fork: a new conversation id; the original file is untouched.
    let adopted_conversation = turn.events.iter().find_map(|k| match k {
        EventKind::SessionStarted(s) => Some(s.backend_session_id.clone()),
        _ => None,
    });
    assert!(adopted_conversation.is_some_and(|c| c != outside_id), "{:#?}", turn.events);
    assert_eq!(std::fs::read(&listed.path).unwrap(), original, "the original session changed");
    // Its work is in its own worktree, off the checkout's commit; the checkout is as it was.
    let worktree = session.worktree.expect("a worktree").path;
    assert!(Path::new(&worktree).join("adopted.txt").exists(), "{:#?}", turn.events);
    assert!(!root.join("adopted.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_a_live_claude_holds_is_listed_with_it_and_adopted_only_as_a_fork() {
    if isolated!("a_session_a_live_claude_holds_is_listed_with_it_and_adopted_only_as_a_fork") {
        return;
    }
    let Terminal { dir, root, mock: _mock, env, session: outside_id } =
        terminal_session("write held.txt containing HELD-TURN").await;
    // The person's terminal goes on with it: a claude on that session, waiting for input.
    let mut live = std::process::Command::new(real_claude())
        .args(["-p", "--resume", &outside_id, "--input-format", "stream-json"])
        .args(["--output-format", "stream-json", "--verbose"])
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let holder = loop {
        let found = host.outside_sessions(&project.project_id).await.unwrap();
        if let Some(p) =
            found.sessions.iter().find(|s| s.id == outside_id).and_then(|s| s.live.clone())
        {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "the live claude was not seen: {found:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(holder.pid, live.id(), "{holder:?}");
    // Adopted as a fork, saying who holds the original.
    let adopt = AdoptOutside {
        project_id: project.project_id.clone(),
        session: outside_id.clone(),
        prompt: "write forked.txt containing FORKED".into(),
        mode: None,
        in_place: false,
    };
    let id = host.adopt_outside(adopt, "test").await.unwrap().session_id;
    let turn = run_turn_from(&host, &id, 1, |_| Decision::Allow).await;
    shutdown(host).await;
    let _ = live.kill();
    let _ = live.wait();
    let note = turn.events.iter().find_map(|k| match k {
        EventKind::SessionUpdated(u) => u.note.clone(),
        _ => None,
    });
    let note = note.unwrap_or_default();
    assert!(note.contains(&format!("A live claude (pid {})", holder.pid)), "{note}");
    let conversation = turn.events.iter().find_map(|k| match k {
        EventKind::SessionStarted(s) => Some(s.backend_session_id.clone()),
        _ => None,
    });
    assert!(conversation.is_some_and(|c| c != outside_id), "a fork: {:#?}", turn.events);
}

/// The texts of the session's prompts, in transcript order.
pub(crate) async fn prompts(host: &Host, id: &str) -> Vec<String> {
    let row = host.session_summary(id).await.unwrap();
    let mut events = host.subscribe(id, 1).await.unwrap();
    let mut texts = Vec::new();
    for _ in 0..row.last_seq {
        let e = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
            .await
            .expect("the transcript did not replay within 10 s")
            .unwrap()
            .unwrap();
        if let EventKind::UserText(t) = &e.kind {
            texts.push(t.text.clone());
        }
        if e.seq >= row.last_seq {
            break;
        }
    }
    texts
}

/// A follow-up to `id` and its turn to the end.
pub(crate) async fn follow_up(host: &Host, id: &str, text: &str) {
    let from = host.session_summary(id).await.unwrap().last_seq + 1;
    host.send_input(id, text).await.unwrap();
    run_turn_from(host, id, from, |_| Decision::Allow).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn adopted_handed_off_carried_on_in_the_terminal_and_back_nothing_lost_or_twice() {
    if isolated!("adopted_handed_off_carried_on_in_the_terminal_and_back_nothing_lost_or_twice") {
        return;
    }
    let Terminal { dir, root, mock, env, session: outside_id } =
        terminal_session("write one.txt containing TURN-ONE").await;
    let host = Host::open(host_config(&dir.path().join("home"), env.clone(), true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let adopt = AdoptOutside {
        project_id: project.project_id.clone(),
        session: outside_id,
        prompt: "write two.txt containing TURN-TWO".into(),
        mode: None,
        in_place: false,
    };
    let id = host.adopt_outside(adopt, "test").await.unwrap().session_id;
    run_turn_from(&host, &id, 1, |_| Decision::Allow).await;

    // Handed over: Nucleic's agent stops; the person goes on in the terminal.
    let handoff = host.finish(&id, FinishAction::Handoff, "test").await.unwrap().unwrap();
    let nucleic_protocol::IntentResult::Handoff(handoff) = handoff else {
        panic!("a handoff answers its command: {handoff:?}")
    };
    let command = handoff.command;
    let worktree = host.session_summary(&id).await.unwrap().worktree.unwrap().path;
    let conversation = command.rsplit("--resume '").next().unwrap().trim_end_matches('\'');
    assert!(command.starts_with(&format!("cd '{worktree}' && claude --resume '")), "{command}");
    let out = std::process::Command::new(real_claude())
        .args(["-p", "write three.txt containing TURN-THREE", "--resume", conversation])
        .args(["--permission-mode", "acceptEdits"])
        .current_dir(&worktree)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(Path::new(&worktree).join("three.txt").exists());

    // Back in Nucleic: the terminal's turn comes first, then the new one; the model has all.
    let before = mock.requests().len();
    follow_up(&host, &id, "write four.txt containing TURN-FOUR").await;
    let carried = mock.requests()[before..].iter().any(|r| {
        let body = r.body.to_string();
        ["TURN-ONE", "TURN-TWO", "TURN-THREE", "TURN-FOUR"].iter().all(|t| body.contains(t))
    });
    assert!(carried, "the model did not get the whole conversation");
    // Once more, with nothing new in the terminal: nothing is brought back twice.
    host.finish(&id, FinishAction::Handoff, "test").await.unwrap();
    follow_up(&host, &id, "write five.txt containing TURN-FIVE").await;
    let texts = prompts(&host, &id).await;
    shutdown(host).await;
    let turns: Vec<&str> =
        ["TURN-ONE", "TURN-TWO", "TURN-THREE", "TURN-FOUR", "TURN-FIVE"].to_vec();
    let seen: Vec<&str> =
        texts.iter().filter_map(|t| turns.iter().find(|n| t.contains(**n)).copied()).collect();
    assert_eq!(seen, turns, "each turn once, in order: {texts:#?}");
}
