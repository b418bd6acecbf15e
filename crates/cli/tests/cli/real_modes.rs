//! Modes switched mid-session with the real pinned `claude` and `codex` against the mocks, in a
//! loopback-only namespace: a session started in `edit` is asked about a write (`touch`),
//! switched to `readonly` its next write is denied by `mode:readonly` without a person, switched
//! back to `edit` it is asked again; each switch is a `sessionUpdated` event of the transcript.
//! The mode survives a host restart: the resumed agent starts in it.

use std::sync::Arc;

use nucleic_host::Host;
use nucleic_protocol::{Backend, Decision, DecisionKind, EventKind};
use nucleic_testkit::agents::claude_offline_env;
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};

use crate::real_policy::{
    Turn, assert_by_policy, host_config, new_session, run_turn_from, shutdown,
};

/// The next turn of `id` after `prompt`, from the event after the last one seen.
async fn next_turn(host: &Host, id: &str, prompt: &str) -> Turn {
    let from = host.session_summary(id).await.unwrap().last_seq + 1;
    host.send_input(id, prompt).await.unwrap();
    run_turn_from(host, id, from, |_| Decision::Deny { message: "not now".into() }).await
}

fn asked_about(turn: &Turn, needle: &str) -> bool {
    turn.asked.iter().any(|a| a.input.to_string().contains(needle))
}

/// Sets the mode and checks what the host recorded and reports.
async fn switch(host: &Arc<Host>, id: &str, mode: &str) {
    let update = host.set_session_mode(id, mode, "test").await.unwrap();
    assert_eq!(update.mode.as_deref(), Some(mode));
    assert!(update.note.as_deref().is_some_and(|n| n.contains("at once")), "{update:?}");
    assert_eq!(host.session_summary(id).await.unwrap().mode.as_deref(), Some(mode));
}

/// The three turns, whatever the backend; `script` sets the mock's call for a turn.
async fn edit_readonly_edit(host: &Arc<Host>, id: &str, script: impl Fn(&str)) {
    assert_eq!(host.session_summary(id).await.unwrap().mode.as_deref(), Some("edit"));
    switch(host, id, "readonly").await;
    script("touch two.txt");
    let turn = next_turn(host, id, "again").await;
    assert_by_policy(&turn, "touch two.txt", DecisionKind::Deny, "mode:readonly");
    switch(host, id, "edit").await;
    script("touch three.txt");
    let turn = next_turn(host, id, "once more").await;
    assert!(asked_about(&turn, "touch three.txt"), "{:#?}", turn.events);
    // An unknown mode is refused, naming the three; the session keeps its mode.
    let e = host.set_session_mode(id, "yolo", "test").await.unwrap_err().to_string();
    assert!(e.contains("yolo") && e.contains("readonly, edit or full"), "{e}");
    let mut events = host.subscribe(id, 1).await.unwrap();
    let last = host.session_summary(id).await.unwrap().last_seq;
    let mut modes = Vec::new();
    while let Ok(Ok(Some(e))) =
        tokio::time::timeout(std::time::Duration::from_secs(5), events.next()).await
    {
        if let EventKind::SessionUpdated(u) = &e.kind {
            modes.push((u.mode.clone().unwrap_or_default(), u.by.clone()));
        }
        if e.seq >= last {
            break;
        }
    }
    let expected = [("readonly", "test"), ("edit", "test")].map(|(m, b)| (m.into(), b.into()));
    assert_eq!(modes, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_switched_to_readonly_mid_session_denies_the_next_write() {
    if isolated!("real_claude_switched_to_readonly_mid_session_denies_the_next_write") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let mock = MockAnthropic::start(Script::bash_then_done("touch one.txt")).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(host_config(&dir.path().join("home"), env.clone(), true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let mut request = new_session(&project.project_id, Backend::ClaudeCode, "go");
    request.mode = Some("edit".into());
    let id = host.new_session(request, "test").await.unwrap().session_id;
    let turn = run_turn_from(&host, &id, 1, |_| Decision::Deny { message: "not now".into() }).await;
    assert!(asked_about(&turn, "touch one.txt"), "edit asks: {:#?}", turn.events);
    edit_readonly_edit(&host, &id, |cmd| mock.set_script(Script::bash_then_done(cmd))).await;
    shutdown(host).await;

    // A new host: the session's agent is not running; the switch is kept (catalog) and the
    // resumed agent starts in it.
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let update = host.set_session_mode(&id, "readonly", "test").await.unwrap();
    assert!(update.note.as_deref().is_some_and(|n| n.contains("next starts")), "{update:?}");
    mock.set_script(Script::bash_then_done("touch four.txt"));
    let turn = next_turn(&host, &id, "after the restart").await;
    assert_by_policy(&turn, "touch four.txt", DecisionKind::Deny, "mode:readonly");
    shutdown(host).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_switched_to_readonly_mid_session_denies_the_next_write() {
    if isolated!("real_codex_switched_to_readonly_mid_session_denies_the_next_write") {
        return;
    }
    use nucleic_testkit::mock_openai::{Script as CodexScript, ToolCall as CodexCall};
    let turn_of = |cmd: &str| CodexScript::tools_then_done(vec![CodexCall::exec_command(cmd)]);
    let s = crate::real_codex::codex_setup(turn_of("touch one.txt")).await;
    let root = crate::daemon::empty_repo(s.dir.path());
    let home = s.dir.path().join("nucleic-home");
    let host = Host::open(host_config(&home, s.env.clone(), false)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    // The project's default mode (set as the cockpit and `nucleic project mode` do) applies.
    host.set_project_mode(&project.project_id, Some("edit")).await.unwrap();
    let request = new_session(&project.project_id, Backend::Codex, "go");
    let id = host.new_session(request, "test").await.unwrap().session_id;
    let turn = run_turn_from(&host, &id, 1, |_| Decision::Deny { message: "not now".into() }).await;
    assert!(asked_about(&turn, "touch one.txt"), "edit asks: {:#?}", turn.events);
    edit_readonly_edit(&host, &id, |cmd| s.mock.set_script(turn_of(cmd))).await;
    shutdown(host).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_switched_out_of_readonly_writes_its_worktree_after_a_restart_of_its_agent() {
    if isolated!(
        "real_claude_switched_out_of_readonly_writes_its_worktree_after_a_restart_of_its_agent"
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    // A command the policy allows in every mode, that writes: only the file system stops it.
    let write = "echo note > made.txt";
    let mock = MockAnthropic::start(Script::bash_then_done(write)).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let mut request = new_session(&project.project_id, Backend::ClaudeCode, "go");
    request.mode = Some("readonly".into());
    let id = host.new_session(request, "test").await.unwrap().session_id;
    run_turn_from(&host, &id, 1, |_| Decision::Allow).await;
    let worktree = host.session_summary(&id).await.unwrap().worktree.unwrap().path;
    let made = std::path::Path::new(&worktree).join("made.txt");
    assert!(!made.exists(), "a readonly session's agent wrote its worktree");
    let update = host.set_session_mode(&id, "edit", "test").await.unwrap();
    assert!(update.note.as_deref().is_some_and(|n| n.contains("resumes")), "{update:?}");
    let from = host.session_summary(&id).await.unwrap().last_seq + 1;
    host.send_input(&id, "now write it").await.unwrap();
    run_turn_from(&host, &id, from, |_| Decision::Allow).await;
    assert_eq!(std::fs::read_to_string(&made).unwrap_or_default(), "note\n", "edit writes again");
    shutdown(host).await;
}
