//! Continuing a session in another agent, end to end through the daemon with the real pinned
//! `claude` and `gemini` against their mock model servers, confined, in a loopback-only
//! namespace: a Claude session writes a file (allowed from the CLI), then the mock answers every
//! request `429 rate_limit_error` and the turn fails; `nucleic session continue --agent gemini`
//! starts Gemini CLI in a new worktree holding the file, and the model behind Gemini receives
//! the task, the follow-up, why Claude stopped, the file list and the person's new words.

use std::path::Path;
use std::time::Duration;

use nucleic_testkit::agents::{claude_offline_env, gemini_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{FaultKind, MockAnthropic, Script};
use nucleic_testkit::mock_gemini::{MockGemini, Script as GeminiScript};
use serde_json::Value;

use crate::daemon::{DaemonGuard, cli_env, empty_repo};
use crate::real_codex_host::transcript;

/// Polls `session`'s transcript (up to 120 s) until `done` holds.
async fn wait_for(
    home: &Path,
    session: &str,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    for _ in 0..1200 {
        let events = transcript(home, session);
        if done(&events) {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 120 s; transcript: {:#?}", transcript(home, session));
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"]["type"] == kind).count()
}

fn pending(events: &[Value]) -> Option<String> {
    let resolved: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"]["type"] == "approvalResolved")
        .map(|e| &e["kind"]["requestID"])
        .collect();
    events
        .iter()
        .filter(|e| e["kind"]["type"] == "approvalRequested")
        .find(|e| !resolved.contains(&&e["kind"]["requestID"]))
        .and_then(|e| e["kind"]["requestID"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_rate_limited_is_continued_in_gemini_with_the_task_a_summary_and_its_files() {
    if isolated!(
        "real_claude_rate_limited_is_continued_in_gemini_with_the_task_a_summary_and_its_files"
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let claude_model =
        MockAnthropic::start(Script::bash_then_done("echo kept > notes.txt")).await.unwrap();
    let gemini_model = MockGemini::start(GeminiScript::text(&["picked up"])).await.unwrap();
    let scratch = dir.path().join("scratch");
    // One daemon for both agents: Claude's offline environment, Gemini's on top (its HOME has
    // the silent settings; Claude makes its own folder there), the pinned CLIs' cache, a git
    // identity (continuing commits the kept work as the person).
    let mut env = claude_offline_env(&claude_model.base_url(), &scratch);
    let gemini = gemini_offline_env(&gemini_model.base_url(), &scratch);
    env.retain(|(k, _)| !gemini.iter().any(|(g, _)| g == k));
    env.extend(gemini);
    let cache = real_claude().ancestors().nth(4).unwrap().to_string_lossy().into_owned();
    env.push(("NUCLEIC_AGENT_CACHE".into(), cache));
    for (name, value) in [
        ("GIT_AUTHOR_NAME", "Person"),
        ("GIT_AUTHOR_EMAIL", "person@example.invalid"),
        ("GIT_COMMITTER_NAME", "Person"),
        ("GIT_COMMITTER_EMAIL", "person@example.invalid"),
    ] {
        env.push((name.into(), value.into()));
    }
    let home = dir.path().join("home");
    crate::support::ask_for_everything(&home);
    let _guard = DaemonGuard(home.clone());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let cli = async |args: &[&str]| {
        let (code, out, err) = cli_env(&home, args, &env).await;
        assert_eq!(code, 0, "nucleic {args:?}: {err}");
        out
    };
    let root = empty_repo(dir.path());
    let project = cli(&["project", "add", root.to_str().unwrap()]).await.trim().to_owned();

    // Claude writes the notes (allowed from the CLI).
    let out =
        cli(&["session", "new", "--project", &project, "--agent", "claude", "write the notes"])
            .await;
    let first = out.split_whitespace().next().unwrap().to_owned();
    let events = wait_for(&home, &first, "Claude's approval", |e| pending(e).is_some()).await;
    cli(&["session", "approve", &first, &pending(&events).unwrap()]).await;
    wait_for(&home, &first, "Claude's first turn", |e| count(e, "turnCompleted") >= 1).await;

    // Then every request is rate limited: the follow-up's turn fails.
    claude_model.set_script(Script::text("never").with_fault(FaultKind::Http429, None));
    cli(&["session", "send", &first, "now add a test for the notes"]).await;
    let events =
        wait_for(&home, &first, "the rate-limited turn", |e| count(e, "turnCompleted") >= 2).await;
    assert!(
        events.iter().any(|e| e["kind"]["type"] == "apiRetry" && e["kind"]["httpStatus"] == 429),
        "no 429 retry recorded: {events:#?}"
    );

    // Continued in Gemini CLI.
    let out =
        cli(&["session", "continue", &first, "--agent", "gemini", "carry on with the test"]).await;
    let next: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let second = next["sessionID"].as_str().unwrap().to_owned();
    assert_eq!(next["backend"], "gemini", "{next}");
    let events =
        wait_for(&home, &second, "Gemini's turn", |e| count(e, "turnCompleted") >= 1).await;
    assert!(events.iter().all(|e| e["backend"] == "gemini"), "{events:#?}");
    let created = &events[0]["kind"];
    assert_eq!(created["continuesSessionID"], first.as_str(), "{created}");
    assert!(created["title"].as_str().unwrap().contains("continued in"), "{created}");
    // It works on Claude's changes.
    let worktree = created["worktree"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(Path::new(worktree).join("notes.txt")).unwrap(), "kept\n");
    // Its model got the handover: the task, the follow-up, why Claude stopped, the files, the
    // person's words — in its first turn's request.
    let first_turn =
        gemini_model.turns().into_iter().next().expect("Gemini asked its model nothing");
    let body = first_turn.body.to_string();
    for needle in [
        "write the notes",
        "now add a test for the notes",
        "notes.txt",
        "carry on with the test",
        "Claude Code",
    ] {
        assert!(body.contains(needle), "{needle:?} not handed over: {body}");
    }
    let why = body.split("## Why it stopped").nth(1).unwrap_or_else(|| panic!("no reason: {body}"));
    let why: String = why.chars().take(200).collect();
    println!("handed over, why it stopped: {why}");
    assert!(why.contains("429") || why.contains("rate_limit"), "the reason is not the 429: {why}");
    // The first session's transcript says where it went.
    let old = transcript(&home, &first);
    assert!(
        old.iter().any(|e| e["kind"]["type"] == "worktreeFinished"
            && e["kind"]["continuedIn"] == second.as_str()),
        "{old:#?}"
    );
}
