//! A Gemini CLI session in the daemon, driven through the CLI, with the real pinned `gemini`
//! (over ACP) against the mock Gemini API in a loopback-only namespace, confined as every agent:
//! streamed text, a write asked through the host's policy, allowed from the CLI and done
//! through the host's `fs/write_text_file`; a write denied from the CLI (the refusal reaching
//! the model, the card closed by the host); a command the policy's invariant denies without a
//! person; a turn interrupted mid-stream; and, by effect, writes outside the worktree (`../`, an
//! absolute path, a link inside pointing out) and a delegated write into a read-only worktree
//! refused, the files unchanged.

use std::path::Path;
use std::time::Duration;

use nucleic_testkit::agents::{gemini_offline_env, real_gemini};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_gemini::{MockGemini, Reply, Script, function_responses};
use serde_json::{Value, json};

use crate::daemon::{DaemonGuard, cli_env, empty_repo};
use crate::real_codex_host::transcript;

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"]["type"] == kind).collect()
}

fn is_egress(event: &Value) -> bool {
    event["kind"]["toolName"] == nucleic_protocol::EGRESS_APPROVAL
}

/// The approvals of `events` no resolution answers yet (the agent's own network questions
/// left out).
fn open_asks(events: &[Value]) -> Vec<Value> {
    let resolved: Vec<&Value> =
        of_type(events, "approvalResolved").iter().map(|e| &e["kind"]["requestID"]).collect();
    of_type(events, "approvalRequested")
        .into_iter()
        .filter(|a| !is_egress(a) && !resolved.contains(&&a["kind"]["requestID"]))
        .cloned()
        .collect()
}

/// Polls the transcript (up to 120 s: Gemini CLI starts in 2–5 s on a busy machine) until
/// `done` holds.
async fn wait_for(home: &Path, session: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..1200 {
        let events = transcript(home, session);
        if done(&events) {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out; transcript: {:#?}", transcript(home, session));
}

fn turns(n: usize) -> impl Fn(&[Value]) -> bool {
    move |ev: &[Value]| of_type(ev, "turnCompleted").len() >= n
}

fn text_of(events: &[Value]) -> String {
    of_type(events, "assistantText").iter().filter_map(|e| e["kind"]["text"].as_str()).collect()
}

/// A daemon home, a repository and the Gemini environment pointing at a fresh mock.
struct Setup {
    dir: tempfile::TempDir,
    mock: MockGemini,
    env: Vec<(String, String)>,
    home: std::path::PathBuf,
    project: String,
}

impl Setup {
    async fn new(script: Script) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockGemini::start(script).await.unwrap();
        let mut env = gemini_offline_env(&mock.base_url(), &dir.path().join("scratch"));
        // The daemon finds the pinned `gemini` on PATH (its HOME is the throwaway one).
        let bin = real_gemini().parent().unwrap().to_string_lossy().into_owned();
        let path = std::env::var("PATH").unwrap_or_default();
        env.push(("PATH".into(), format!("{bin}:{path}")));
        let home = dir.path().join("nucleic-home");
        crate::support::ask_for_everything(&home);
        let root = empty_repo(dir.path());
        let mut s = Setup { dir, mock, env, home, project: String::new() };
        let (code, project, err) = s.cli(&["project", "add", root.to_str().unwrap()]).await;
        assert_eq!(code, 0, "{err}");
        s.project = project.trim().to_owned();
        s
    }

    async fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let env: Vec<(&str, &str)> =
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        cli_env(&self.home, args, &env).await
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.cli(args).await;
        assert_eq!(code, 0, "nucleic {args:?}: {err}");
        out
    }

    /// `session new --agent gemini` with `extra` flags; returns the session id.
    async fn new_session(&self, extra: &[&str], prompt: &str) -> String {
        let mut args = vec!["session", "new", "--project", &self.project, "--agent", "gemini"];
        args.extend_from_slice(extra);
        args.push(prompt);
        self.ok(&args).await.split_whitespace().next().unwrap().to_owned()
    }

    fn worktree(&self, session: &str) -> std::path::PathBuf {
        let events = transcript(&self.home, session);
        let created = of_type(&events, "sessionCreated");
        created[0]["kind"]["worktree"]["path"].as_str().unwrap().into()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_in_the_daemon_asks_writes_denies_and_is_interrupted() {
    if isolated!("real_gemini_in_the_daemon_asks_writes_denies_and_is_interrupted") {
        return;
    }
    let s = Setup::new(Script::write_then_done("a.txt", "from gemini\n")).await;
    let _guard = DaemonGuard(s.home.clone());
    let id = s.new_session(&[], "write a.txt").await;

    // The write is put to the policy (rules ask for every write), then to a person.
    let events = wait_for(&s.home, &id, |ev| !open_asks(ev).is_empty()).await;
    let ask = open_asks(&events)[0].clone();
    assert_eq!(ask["kind"]["toolName"], "Write", "{ask}");
    assert_eq!(ask["kind"]["risk"], "medium", "the policy classed it: {ask}");
    assert!(ask["kind"]["riskReasons"].to_string().contains("writes a file"), "{ask}");
    let request = ask["kind"]["requestID"].as_str().unwrap().to_owned();
    assert!(request.starts_with("acp-"), "{request}");
    s.ok(&["session", "approve", &id, &request]).await;
    let events = wait_for(&s.home, &id, turns(1)).await;
    let worktree = s.worktree(&id);
    assert_eq!(std::fs::read_to_string(worktree.join("a.txt")).unwrap(), "from gemini\n");
    assert!(events.iter().any(|e| e["nativeType"] == "fs/write_text_file"), "{events:#?}");
    assert_eq!(text_of(&events), "done");
    assert!(events.iter().all(|e| e["backend"] == "gemini"));
    let started = &of_type(&events, "sessionStarted")[0]["kind"];
    assert_eq!(started["agentVersion"], "0.61.0");
    assert_eq!(started["cwd"], worktree.to_str().unwrap());

    // A second write, denied from the CLI: nothing written, the card closed, the model told.
    s.mock.set_script(Script::write_then_done("b.txt", "never\n"));
    s.ok(&["session", "send", &id, "now write b.txt"]).await;
    let events = wait_for(&s.home, &id, |ev| !open_asks(ev).is_empty()).await;
    let request = open_asks(&events)[0]["kind"]["requestID"].as_str().unwrap().to_owned();
    s.ok(&["session", "deny", &id, &request, "not b.txt"]).await;
    let events = wait_for(&s.home, &id, turns(2)).await;
    assert!(!worktree.join("b.txt").exists());
    let call = of_type(&events, "approvalRequested")
        .into_iter()
        .find(|a| a["kind"]["requestID"] == request.as_str())
        .and_then(|a| a["kind"]["toolCallID"].as_str().map(str::to_owned));
    let closed = of_type(&events, "toolResult").into_iter().any(|r| {
        r["kind"]["isError"] == true && call.as_deref().is_none_or(|c| r["kind"]["toolCallID"] == c)
    });
    let cards: Vec<String> = events
        .iter()
        .filter(|e| {
            ["toolResult", "toolCall", "approvalRequested", "approvalResolved"]
                .contains(&e["kind"]["type"].as_str().unwrap_or_default())
        })
        .map(|e| e["kind"].to_string())
        .collect();
    assert!(closed, "the host closes the rejected call's card: {cards:#?}");
    let last = s.mock.turns().into_iter().last().unwrap();
    let answers = function_responses(&last.body);
    println!("gemini: the model got, after the deny: {answers:?}");
    // ACP's reject carries no reason: the model learns the call was refused, not why.
    let refusal = answers.last().unwrap();
    assert_eq!(refusal["name"], "write_file", "{answers:?}");
    assert!(refusal["response"]["error"].to_string().contains("canceled by the user"), "{refusal}");

    // A command the policy's invariant refuses: denied by the host, never put to a person.
    s.mock.set_script(Script::shell_then_done("sudo true"));
    s.ok(&["session", "send", &id, "run it"]).await;
    let events = wait_for(&s.home, &id, turns(3)).await;
    let sudo = of_type(&events, "approvalResolved")
        .into_iter()
        .find(|r| r["kind"]["by"] == "invariant:sudo")
        .unwrap_or_else(|| panic!("no policy deny: {events:#?}"));
    assert_eq!(sudo["kind"]["decision"], "deny", "{sudo}");
    let last = s.mock.turns().into_iter().last().unwrap();
    let answers = function_responses(&last.body);
    let refusal = answers.last().unwrap();
    assert_eq!(refusal["name"], "run_shell_command", "{answers:?}");
    assert!(refusal["response"]["error"].to_string().contains("canceled by the user"), "{refusal}");

    // A slow turn, interrupted from the CLI mid-stream.
    let chunks: Vec<String> = (0..60).map(|i| format!("chunk {i}. ")).collect();
    let mut slow = Script::new(vec![Reply::Text(chunks)]);
    slow.chunk_delay = Duration::from_millis(250);
    s.mock.set_script(slow);
    let before = transcript(&s.home, &id).len();
    s.ok(&["session", "send", &id, "talk slowly"]).await;
    wait_for(&s.home, &id, |ev| {
        ev.len() > before && ev[before..].iter().any(|e| e["kind"]["type"] == "assistantText")
    })
    .await;
    s.ok(&["session", "interrupt", &id]).await;
    let events = wait_for(&s.home, &id, turns(4)).await;
    let last = of_type(&events, "turnCompleted")[3]["kind"].clone();
    assert_eq!(last["stopReason"], "cancelled", "{last}");
    assert!(!text_of(&events[before..]).contains("chunk 59"), "cut short");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_in_the_daemon_cannot_write_outside_its_worktree_or_a_readonly_one() {
    if isolated!("real_gemini_in_the_daemon_cannot_write_outside_its_worktree_or_a_readonly_one") {
        return;
    }
    let s = Setup::new(Script::text(&["unused"])).await;
    let _guard = DaemonGuard(s.home.clone());
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("o.txt"), "keep\n").unwrap();
    let write = |path: &str| Reply::Call {
        name: "write_file".into(),
        args: json!({"file_path": path, "content": "pwned\n"}),
    };
    // Full trust in the agent's own mode (yolo: it asks nothing), so only the host stands in
    // the way: `../`, an absolute path, then a link the agent finds in its worktree.
    let abs = outside.join("o.txt").to_string_lossy().into_owned();
    s.mock.set_script(Script::new(vec![
        write("../outside-new.txt"),
        write(&abs),
        write("link/o.txt"),
        Reply::Text(vec!["done".into()]),
    ]));
    let flags = ["--permission-mode", "bypassPermissions", "--mode", "full"];
    let id = s.new_session(&flags, "write them").await;
    let events = wait_for(&s.home, &id, |ev| !of_type(ev, "sessionStarted").is_empty()).await;
    assert!(!events.is_empty());
    let worktree = s.worktree(&id);
    std::os::unix::fs::symlink(&outside, worktree.join("link")).unwrap();
    let events = wait_for(&s.home, &id, turns(1)).await;
    assert_eq!(std::fs::read_to_string(outside.join("o.txt")).unwrap(), "keep\n");
    assert!(!s.dir.path().join("outside-new.txt").exists());
    assert!(!worktree.parent().unwrap().join("outside-new.txt").exists());
    let failed =
        of_type(&events, "toolResult").iter().filter(|r| r["kind"]["isError"] == true).count();
    assert_eq!(failed, 3, "every write failed: {events:#?}");

    // A readonly session whose agent asks nothing: its delegated write is the host's to do,
    // and the host refuses it as the sandbox would.
    s.mock.set_script(Script::write_then_done("ro.txt", "pwned\n"));
    let flags = ["--permission-mode", "bypassPermissions", "--mode", "readonly"];
    let id = s.new_session(&flags, "write ro.txt").await;
    let events = wait_for(&s.home, &id, turns(1)).await;
    let worktree = s.worktree(&id);
    assert!(!worktree.join("ro.txt").exists(), "{events:#?}");
    let refused = of_type(&events, "error").into_iter().any(|e| {
        e["kind"]["message"].as_str().is_some_and(|m| m.contains("read-only to the agent"))
    });
    let asked = events.iter().any(|e| e["nativeType"] == "fs/write_text_file");
    assert!(asked && refused, "the delegated write was refused by the host: {events:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_survives_a_host_sigkill_mid_turn() {
    if isolated!("real_gemini_survives_a_host_sigkill_mid_turn") {
        return;
    }
    let chunks: Vec<String> = (0..30).map(|i| format!("part {i}. ")).collect();
    let mut slow = Script::new(vec![Reply::Text(chunks)]);
    slow.chunk_delay = Duration::from_millis(150);
    let s = Setup::new(slow).await;
    let _guard = DaemonGuard(s.home.clone());
    let id = s.new_session(&[], "talk slowly").await;
    let events = wait_for(&s.home, &id, |ev| !of_type(ev, "assistantText").is_empty()).await;
    assert!(of_type(&events, "turnCompleted").is_empty(), "still streaming");
    let agent = of_type(&events, "sessionStarted")[0]["kind"]["backendSessionID"].clone();

    // Kill the daemon mid-turn; the next CLI call starts a new one, which re-adopts the same
    // gemini process from its keeper. The model's stream went through the dead host's egress
    // proxy and was cut: the turn ends, as failed, and the session goes on.
    let daemon = crate::daemon::daemon_pid(&s.home);
    let pid = nix::unistd::Pid::from_raw(daemon);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    for _ in 0..50 {
        if !crate::daemon::alive(daemon) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::remove_file(s.home.join("daemon.json")).unwrap();
    s.ok(&["session", "show", &id]).await;
    let events = wait_for(&s.home, &id, turns(1)).await;
    let end = &of_type(&events, "turnCompleted")[0]["kind"];
    println!("gemini: the turn cut by the host's death ended {end}");
    assert_eq!(end["isError"], true, "{end}");
    let texts = of_type(&events, "assistantText");
    let mut seen: Vec<&str> = texts.iter().filter_map(|e| e["kind"]["text"].as_str()).collect();
    let count = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), count, "no chunk repeated by the re-adoption");

    // A follow-up goes to the same gemini process and session.
    s.mock.set_script(Script::text(&["after the restart"]));
    s.ok(&["session", "send", &id, "still there?"]).await;
    let events = wait_for(&s.home, &id, turns(2)).await;
    assert!(text_of(&events).ends_with("after the restart"), "{events:#?}");
    let started = of_type(&events, "sessionStarted");
    assert_eq!(started.len(), 1, "no new gemini process: {started:#?}");
    assert_eq!(started[0]["kind"]["backendSessionID"], agent);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seq continues without a gap");
    let last = s.mock.turns().into_iter().last().unwrap();
    // Gemini CLI drops a failed turn's prompt from the history it sends: only the follow-up.
    assert!(last.body["contents"].to_string().contains("still there?"), "{}", last.body);
}

/// The daemon's resident memory, in kB.
fn rss_kb(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// What an idle Gemini session costs the host (its keeper and the agent not counted): the
/// daemon's RSS with one idle session, then with four. Printed for `docs/benchmarks.md`; the
/// bound (≤ 2 MB each) is the issue's.
#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_idle_sessions_cost_the_host_little_memory() {
    if isolated!("real_gemini_idle_sessions_cost_the_host_little_memory") {
        return;
    }
    let s = Setup::new(Script::text(&["ok"])).await;
    let _guard = DaemonGuard(s.home.clone());
    let idle = |id: String| {
        let home = s.home.clone();
        async move { wait_for(&home, &id, turns(1)).await }
    };
    idle(s.new_session(&[], "first").await).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let daemon = crate::daemon::daemon_pid(&s.home);
    let before = rss_kb(daemon);
    let more = 3;
    for n in 0..more {
        idle(s.new_session(&[], &format!("idle {n}")).await).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kb(daemon);
    let per = after.saturating_sub(before) as f64 / f64::from(more);
    println!(
        "gemini: daemon RSS {before} kB with 1 idle session, {after} kB with 4: {per:.0} kB each"
    );
    assert!(per <= 2048.0, "{per} kB per idle Gemini session");
}

/// Gemini's own commands run in its sandbox: asking nothing (`yolo`), a command that rewrites
/// its settings (hooks and MCP servers a later run by the person would load) and a file outside
/// changes neither, while its state folder stays writable.
#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_commands_reach_only_its_state_in_the_sandbox() {
    if isolated!("real_gemini_commands_reach_only_its_state_in_the_sandbox") {
        return;
    }
    let s = Setup::new(Script::text(&["unused"])).await;
    let _guard = DaemonGuard(s.home.clone());
    let gemini_dir = s.dir.path().join("scratch/gemini-home/.gemini");
    let settings = std::fs::read_to_string(gemini_dir.join("settings.json")).unwrap();
    let outside = s.dir.path().join("outside.txt");
    std::fs::write(&outside, "keep\n").unwrap();
    let command = format!(
        "echo '{{\"hooks\":{{}}}}' > \"$HOME/.gemini/settings.json\"; echo pwned > {}; \
         echo probe > \"$HOME/.gemini/tmp/probe\"; \
         mkdir -p \"$HOME/.gemini/commands\"; echo evil > \"$HOME/.gemini/commands/evil.toml\"",
        outside.display()
    );
    s.mock.set_script(Script::shell_then_done(&command));
    let flags = ["--permission-mode", "bypassPermissions", "--mode", "full"];
    let id = s.new_session(&flags, "run it").await;
    let events = wait_for(&s.home, &id, turns(1)).await;
    assert!(events.iter().any(|e| e["kind"]["type"] == "toolResult"), "{events:#?}");
    assert_eq!(std::fs::read_to_string(gemini_dir.join("settings.json")).unwrap(), settings);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep\n");
    assert_eq!(std::fs::read_to_string(gemini_dir.join("tmp/probe")).unwrap(), "probe\n");
    assert!(gemini_dir.join("projects.json").is_file(), "its project registry was written");
    assert!(!gemini_dir.join("commands/evil.toml").exists(), "a command for later runs planted");
}

/// `nucleic run --agent gemini` in place (no daemon): one turn streamed, the run completed.
#[tokio::test(flavor = "multi_thread")]
async fn real_gemini_runs_in_place_with_nucleic_run() {
    if isolated!("real_gemini_runs_in_place_with_nucleic_run") {
        return;
    }
    let s = Setup::new(Script::text(&["Hello ", "from run."])).await;
    let cwd = s.dir.path().join("repo").canonicalize().unwrap();
    let gemini = real_gemini().to_string_lossy().into_owned();
    let args = ["run", "--agent", "gemini", "--agent-bin", &gemini, "--json", "say hi"];
    let r = crate::support::run_nucleic(&cwd, &args, &s.env).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text: String = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            nucleic_protocol::EventKind::AssistantText(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello from run.");
    assert!(r.events.iter().all(|e| e.backend == nucleic_protocol::Backend::Gemini));
    let finished = r.events.iter().find_map(|e| match &e.kind {
        nucleic_protocol::EventKind::RunFinished(f) => Some(f.outcome),
        _ => None,
    });
    assert_eq!(finished, Some(nucleic_protocol::RunOutcome::Completed), "{:#?}", r.events);
}
