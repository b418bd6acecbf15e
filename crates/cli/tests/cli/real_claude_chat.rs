//! The chat bridge end to end with the real pinned `claude` (against the mock model, offline,
//! in a loopback-only namespace, confined, under the daemon): pairing on the mock Bot API; a
//! task approved by button and a follow-up by code (both recorded as the Telegram user); a file
//! in that the model reads, a file out; diff, tests, report; keep, continue, handoff; then a
//! two-phase task whose plan is rejected with a reason (which reaches the model), revised,
//! confirmed and executed. And on a real Synapse: pairing, a task approved by code (recorded as
//! the Matrix user), keep.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{Computed, MockAnthropic, Reply, Script, ToolCall};
use nucleic_testkit::mock_telegram::MockTelegram;
use serde_json::json;

use crate::chat_bridge::{
    BridgeProc, ME, answered_by, cli, code_of, only_session, pair, sent_containing, setup_with,
    show,
};

/// What the attached file holds (the model must read it through its `Read` tool).
const ATTACHED: &[u8] = b"attached-notes-5d1e\n";
/// The reason a plan is rejected with (it must reach the model).
const REJECTION: &str = "REASON-3f: name the file planned.txt";

/// The `[Attached file: <path> (…)]` a prompt carries, if any.
fn attached_path(body: &serde_json::Value) -> Option<String> {
    let text = body["messages"].to_string();
    let start = text.find("[Attached file: ")? + "[Attached file: ".len();
    let end = start + text[start..].find(" (")?;
    Some(text[start..end].to_owned())
}

/// Each turn's first reply: a `Read` of the attachment its prompt names, else a `Write` of the
/// file it names; then "done".
fn chat_script() -> Script {
    Script::new(vec![
        Computed::reply(|body| match attached_path(body) {
            Some(path) => Reply::ToolUses {
                text: Some("I'll read the attachment.".into()),
                calls: vec![ToolCall::new("Read", json!({ "file_path": path }))],
            },
            None => Reply::WriteNamedFile,
        }),
        Reply::Text("Done.".into()),
    ])
}

/// Plan mode: a write before the plan (refused), a plan, a revised plan after the rejection,
/// then, approved into edit mode, the write itself.
fn plan_script() -> Script {
    let exit_plan = || Reply::ToolUses {
        text: Some("Here is my plan.".into()),
        calls: vec![ToolCall::new("ExitPlanMode", json!({}))],
    };
    Script::new(vec![
        Reply::WriteNamedFile,
        Reply::WritePlanFile("# Plan v1\n\n1. Write a file.".into()),
        exit_plan(),
        Reply::WritePlanFile("# Plan v2\n\n1. Write `planned.txt` containing *p*.".into()),
        exit_plan(),
        Reply::WriteNamedFile,
        Reply::Text("Done: planned.txt written.".into()),
    ])
}

/// Waits (up to 90 s) for `needle` in a message to me after `skip`, approving every approval
/// that comes meanwhile by its code; the message.
async fn approving_until(mock: &MockTelegram, needle: &str, skip: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut answered = Vec::new();
    loop {
        let sent = mock.sent();
        let mine = || sent.iter().skip(skip).filter(|s| s.chat_id == ME);
        if let Some(s) = mine().find(|s| s.text.contains(needle)) {
            return s.text.clone();
        }
        for approval in mine().filter(|s| s.text.starts_with("Approval ")) {
            let code = code_of(approval);
            if !answered.contains(&code) {
                mock.push_message(ME, None, ME, &format!("/cc approve {code}"));
                answered.push(code);
            }
        }
        if Instant::now() >= deadline {
            let texts: Vec<&str> = sent.iter().skip(skip).map(|s| s.text.as_str()).collect();
            panic!("no message containing {needle:?} within 90 s; sent: {texts:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The daemon's environment for the real `claude` against `model`: the offline environment,
/// where the pinned CLI is, and a git identity (the offline HOME has none; `continue` commits
/// the kept session's uncommitted work as the person). Rules that ask for every write.
fn daemon_env(model: &MockAnthropic, dir: &std::path::Path) -> Vec<(String, String)> {
    let mut env = claude_offline_env(&model.base_url(), &dir.join("scratch"));
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
    crate::support::ask_for_everything(&dir.join("home"));
    env
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_chat_task_files_finish_and_a_two_phase_plan_through_telegram() {
    if isolated!("real_claude_chat_task_files_finish_and_a_two_phase_plan_through_telegram") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(chat_script()).await.unwrap();
    let env = daemon_env(&model, dir.path());
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (home, _guard) = setup_with(dir.path(), &pairs).await;
    let (code, out, err) = cli(&home, &["project", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let project = out.split_whitespace().next().unwrap().to_owned();
    let check = ["project", "check", "add", &project, "tests", "--", "test", "-f", "hello.txt"];
    let (code, _, err) = cli(&home, &check).await;
    assert_eq!(code, 0, "{err}");
    let mock = MockTelegram::start(crate::chat_bridge::TOKEN).await.unwrap();
    let bridge = BridgeProc::start_with(&home, &mock, "claude", "claude", &env);
    pair(&home, &mock).await;

    // A task: the real agent's Write waits for the person, who approves with the button.
    mock.push_message(ME, None, ME, "/cc write hello.txt containing hi");
    sent_containing(&mock, ME, "Started session", 0).await;
    let approval = sent_containing(&mock, ME, "Approval ", 0).await;
    assert!(approval.text.contains("Write"), "{}", approval.text);
    let code = code_of(&approval);
    let session = only_session(&home).await;
    let worktree = PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap());
    assert!(!worktree.join("hello.txt").exists(), "written before it was approved");
    mock.push_callback(ME, ME, approval.message_id, &format!("a:{code}"));
    sent_containing(&mock, ME, "Turn ended", 0).await;
    assert_eq!(std::fs::read_to_string(worktree.join("hello.txt")).unwrap(), "hi\n");
    // A follow-up, approved by its code.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc say write second.txt containing two");
    let second = sent_containing(&mock, ME, "Approval ", skip).await;
    mock.push_message(ME, None, ME, &format!("/cc approve {}", code_of(&second)));
    sent_containing(&mock, ME, "Turn ended", skip).await;
    assert_eq!(std::fs::read_to_string(worktree.join("second.txt")).unwrap(), "two\n");
    assert_eq!(answered_by(&home, &session), [format!("telegram:{ME}"), format!("telegram:{ME}")]);

    // A file in: the confined agent reads it with its own tool.
    let skip = mock.sent().len();
    mock.push_document(ME, ME, "notes.txt", ATTACHED, ATTACHED.len() as u64, None);
    sent_containing(&mock, ME, "Attached notes.txt", skip).await;
    mock.push_message(ME, None, ME, "/cc say read the attached notes");
    approving_until(&mock, "Turn ended", skip).await;
    let needle = String::from_utf8_lossy(ATTACHED).trim().to_owned();
    for s in mock.sent().iter().skip(skip) {
        println!("SENT: {}", s.text);
    }
    assert!(
        model.requests().iter().any(|r| r.body.to_string().contains(&needle)),
        "the attachment's content never reached the model"
    );
    // A file out.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc send hello.txt");
    let doc = sent_containing(&mock, ME, "hello.txt", skip).await;
    assert_eq!(doc.method, "sendDocument", "{doc:?}");
    assert_eq!(doc.file.as_ref().map(|(_, b)| b.as_slice()), Some(&b"hi\n"[..]));

    // What the work is: diff, tests, report.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc diff");
    let diff = sent_containing(&mock, ME, "second.txt", skip).await;
    assert!(diff.text.contains("hello.txt"), "{}", diff.text);
    mock.push_message(ME, None, ME, "/cc tests");
    let tests = sent_containing(&mock, ME, "tests:", skip).await;
    assert!(tests.text.contains("Passed"), "{}", tests.text);
    mock.push_message(ME, None, ME, "/cc report");
    let report = sent_containing(&mock, ME, "Report of session", skip).await;
    assert!(report.text.contains("2 files"), "{}", report.text);

    // Keep, continue on its changes, hand off to a terminal.
    mock.push_message(ME, None, ME, "/cc keep");
    sent_containing(&mock, ME, "Kept session", skip).await;
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc continue");
    let continued = approving_until(&mock, "continues", skip).await;
    approving_until(&mock, "Turn ended", skip).await;
    mock.push_message(ME, None, ME, "/cc handoff");
    let handoff = sent_containing(&mock, ME, "To take the session over", skip).await;
    assert!(
        handoff.text.contains("claude") && handoff.text.contains("--resume"),
        "{}",
        handoff.text
    );
    println!("continue: {continued}");

    // Two-phase: a plan, rejected with a reason, revised, confirmed, executed in edit mode.
    model.set_script(plan_script());
    mock.push_message(ME, None, ME, "/cc clear");
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc plan write planned.txt containing p");
    let plan = approving_until(&mock, "Plan ", skip).await;
    let plan_code = plan.split_whitespace().nth(1).unwrap().to_owned();
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, &format!("/cc reject {plan_code} {REJECTION}"));
    let revised = approving_until(&mock, "Plan v2", skip).await;
    assert!(
        model.requests().iter().any(|r| r.body.to_string().contains(REJECTION)),
        "the rejection's reason never reached the model"
    );
    let revised_code = revised.split_whitespace().nth(1).unwrap().to_owned();
    assert_ne!(revised_code, plan_code);
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, &format!("/cc confirm {revised_code}"));
    approving_until(&mock, "Turn ended", skip).await;
    let (code, out, err) = cli(&home, &["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let mut content = None;
    for id in out.lines().filter_map(|l| l.split_whitespace().next()) {
        let summary = show(&home, id).await;
        let path = PathBuf::from(summary["worktree"]["path"].as_str().unwrap_or("/nonexistent"));
        content = content.or(std::fs::read_to_string(path.join("planned.txt")).ok());
    }
    assert_eq!(content.as_deref(), Some("p\n"), "the confirmed plan was executed");
    bridge.kill().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_chat_on_a_real_synapse_pairs_approves_by_code_and_keeps() {
    if isolated!("real_claude_chat_on_a_real_synapse_pairs_approves_by_code_and_keeps") {
        return;
    }
    use crate::chat_matrix::{MatrixBridge, room_with, said, say, wait_joined};
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(chat_script()).await.unwrap();
    let env = daemon_env(&model, dir.path());
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (home, _guard) = setup_with(dir.path(), &pairs).await;
    let synapse = nucleic_testkit::synapse::Synapse::start(&dir.path().join("synapse")).unwrap();
    let bot = synapse.user("nucleic", "bot-password").unwrap();
    let alice = synapse.user("alice", "alice-password").unwrap();
    let token_file = dir.path().join("matrix-token");
    std::fs::write(&token_file, format!("{}\n", bot.token)).unwrap();
    let bridge = MatrixBridge::start_with(&home, &synapse, &token_file, "claude", "claude", &env);
    let (code, out, err) = cli(&home, &["chat", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    let room = room_with(&synapse, &alice, &bot.user_id);
    wait_joined(&synapse, &alice, &room, &bot.user_id, &home).await;
    say(&synapse, &alice, &room, &format!("/cc pair {}", out.trim()));
    said(&synapse, &alice, &room, &bot.user_id, "Paired", 0).await;
    say(&synapse, &alice, &room, "/cc write hello.txt containing hi from matrix");
    let approval = said(&synapse, &alice, &room, &bot.user_id, "Approval ", 0).await;
    assert!(approval.contains("Write"), "{approval}");
    let code = approval.split_whitespace().nth(1).unwrap().to_owned();
    let session = only_session(&home).await;
    let worktree = PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap());
    assert!(!worktree.join("hello.txt").exists(), "written before it was approved");
    say(&synapse, &alice, &room, &format!("/cc approve {code}"));
    said(&synapse, &alice, &room, &bot.user_id, "Turn ended", 0).await;
    assert_eq!(std::fs::read_to_string(worktree.join("hello.txt")).unwrap(), "hi from matrix\n");
    assert_eq!(answered_by(&home, &session), [format!("matrix:{}", alice.user_id)]);
    say(&synapse, &alice, &room, "/cc keep");
    said(&synapse, &alice, &room, &bot.user_id, "Kept session", 0).await;
    bridge.kill().await;
}

/// Every file under `dir` with its bytes.
fn files_under(dir: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((path, bytes));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_chat_lists_a_terminal_session_and_carries_it_on() {
    if isolated!("real_claude_chat_lists_a_terminal_session_and_carries_it_on") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(chat_script()).await.unwrap();
    let env = daemon_env(&model, dir.path());
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (home, _guard) = setup_with(dir.path(), &pairs).await;
    // The person's own `claude` in a terminal in the checkout, this morning.
    let root = dir.path().join("repo");
    let prompt = "write outside.txt containing from the terminal";
    let out = crate::real_claude_adopt::claude_in_terminal(&root, &env, prompt);
    let outside: serde_json::Value = serde_json::from_str(&out).unwrap();
    let outside_id = outside["session_id"].as_str().unwrap().to_owned();
    let agent_home = dir.path().join("scratch/home/.claude/projects");
    let original: Vec<_> = files_under(&agent_home)
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains(&outside_id))
        .collect();
    assert_eq!(original.len(), 1, "the terminal session's file: {original:?}");

    let mock = MockTelegram::start(crate::chat_bridge::TOKEN).await.unwrap();
    let bridge = BridgeProc::start_with(&home, &mock, "outside", "claude", &env);
    pair(&home, &mock).await;
    mock.push_message(ME, None, ME, "/cc sessions");
    let listed = sent_containing(&mock, ME, "From outside Nucleic", 0).await;
    let line = listed
        .text
        .lines()
        .find(|l| l.contains(&outside_id[..8]))
        .unwrap_or_else(|| panic!("not listed: {}", listed.text));
    assert!(line.contains("claude") && line.contains("write outside.txt"), "{line}");
    let number = line.split('.').next().unwrap().to_owned();
    mock.push_message(ME, None, ME, &format!("/cc resume {number}"));
    sent_containing(&mock, ME, "is from outside Nucleic", 0).await;
    // Nothing is adopted before the person says what to do next.
    let (_, list, _) = cli(&home, &["session", "list"]).await;
    assert!(list.trim().is_empty(), "{list}");

    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc say write adopted.txt containing carried on");
    approving_until(&mock, "Carried", skip).await;
    approving_until(&mock, "Turn ended", skip).await;
    let session = only_session(&home).await;
    let worktree = PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(worktree.join("adopted.txt")).unwrap(), "carried on\n");
    // The model got the terminal conversation as the history of the new turn.
    let last = model.requests().last().unwrap().body.to_string();
    assert!(last.contains(prompt) && last.contains("write adopted.txt"), "no history: {last}");
    // The original session file is byte for byte as it was.
    assert_eq!(std::fs::read(&original[0].0).unwrap(), original[0].1, "the original changed");
    bridge.kill().await;
}
