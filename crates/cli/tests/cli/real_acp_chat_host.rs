//! OpenCode and Qwen Code sessions in the daemon, driven through the CLI, with the real pinned
//! CLIs (over ACP) against the mock Chat Completions API in a loopback-only namespace, confined
//! as every agent: a write asked through the host's policy and allowed (the file written), one
//! denied (not written, the refusal reaching the model), a command the policy's invariant denies
//! whatever is answered (not run), and a model server that always fails (the turn ends failed
//! with the server's error, the session usable).

use std::path::Path;
use std::time::{Duration, Instant};

use nucleic_testkit::agents::{opencode_offline_env, qwen_offline_env, real_opencode, real_qwen};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::{
    FaultKind, MockOpenAi, Reply, Script, ToolCall, side_request, tool_messages,
};
use serde_json::{Value, json};

use crate::daemon::{DaemonGuard, cli_env, empty_repo};
use crate::real_codex_host::transcript;

/// One of the Chat Completions agents: its `--agent` name, its pinned binary, its offline
/// environment, its write and shell tools.
struct Agent {
    name: &'static str,
    bin: fn() -> std::path::PathBuf,
    env: fn(&str, &Path) -> Vec<(String, String)>,
    write: fn(&Path, &str) -> ToolCall,
    shell: fn(&str) -> ToolCall,
    /// A rejected call ends the turn with no further model request (OpenCode, unless its
    /// config sets `experimental.continue_loop_on_deny`; Qwen Code): the model reads the
    /// refusal in the next turn's history.
    deny_ends_turn: bool,
}

const OPENCODE: Agent = Agent {
    name: "opencode",
    bin: real_opencode,
    env: opencode_offline_env,
    write: |path, content| {
        ToolCall::function("write", json!({"filePath": path, "content": content}))
    },
    shell: |cmd| ToolCall::function("bash", json!({"command": cmd, "description": "run it"})),
    deny_ends_turn: true,
};

const QWEN: Agent = Agent {
    name: "qwen",
    bin: real_qwen,
    env: qwen_offline_env,
    write: |path, content| {
        ToolCall::function("write_file", json!({"file_path": path, "content": content}))
    },
    shell: |cmd| ToolCall::function("run_shell_command", json!({"command": cmd})),
    deny_ends_turn: true,
};

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"]["type"] == kind).collect()
}

fn open_asks(events: &[Value]) -> Vec<Value> {
    let resolved: Vec<&Value> =
        of_type(events, "approvalResolved").iter().map(|e| &e["kind"]["requestID"]).collect();
    of_type(events, "approvalRequested")
        .into_iter()
        .filter(|a| a["kind"]["toolName"] != nucleic_protocol::EGRESS_APPROVAL)
        .filter(|a| !resolved.contains(&&a["kind"]["requestID"]))
        .cloned()
        .collect()
}

/// Polls the transcript for up to `secs` until `done` holds.
async fn wait_for(
    home: &Path,
    session: &str,
    secs: u64,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
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

struct Setup {
    _dir: tempfile::TempDir,
    agent: &'static Agent,
    mock: MockOpenAi,
    env: Vec<(String, String)>,
    home: std::path::PathBuf,
    project: String,
}

impl Setup {
    async fn new(agent: &'static Agent, script: Script) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockOpenAi::start(script).await.unwrap();
        let mut env = (agent.env)(&mock.base_url(), &dir.path().join("scratch"));
        // A confined agent reaches only the endpoints its row names (OpenCode's provider URL
        // is in its config, which the host does not read).
        env.push(("OPENAI_BASE_URL".into(), mock.base_url()));
        let bin = (agent.bin)().parent().unwrap().to_string_lossy().into_owned();
        let path = std::env::var("PATH").unwrap_or_default();
        env.push(("PATH".into(), format!("{bin}:{path}")));
        let home = dir.path().join("nucleic-home");
        crate::support::ask_for_everything(&home);
        let root = empty_repo(dir.path());
        let mut s = Setup { _dir: dir, agent, mock, env, home, project: String::new() };
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

    /// A session of the agent started with `prompt` (the CLI's `session new` takes one); its
    /// id and worktree, once the transcript shows the session made.
    async fn session(&self, prompt: &str) -> (String, std::path::PathBuf) {
        let args =
            ["session", "new", "--project", &self.project, "--agent", self.agent.name, prompt];
        let id = self.ok(&args).await.split_whitespace().next().unwrap().to_owned();
        let events =
            wait_for(&self.home, &id, 60, |ev| !of_type(ev, "sessionCreated").is_empty()).await;
        let created = of_type(&events, "sessionCreated");
        let worktree = created[0]["kind"]["worktree"]["path"].as_str().unwrap().into();
        (id, worktree)
    }

    /// The conversation's own requests to the model (side requests left out).
    fn turn_requests(&self) -> Vec<Value> {
        self.mock
            .requests()
            .into_iter()
            .filter(|r| r.path == "/v1/chat/completions" && side_request(&r.body).is_none())
            .map(|r| r.body)
            .collect()
    }
}

fn write_then_done(agent: &Agent, path: &Path, content: &str) -> Script {
    Script::new(vec![
        Reply::ToolCalls {
            text: Some("I'll write it.".into()),
            calls: vec![(agent.write)(path, content)],
        },
        Reply::Text("done".into()),
    ])
}

/// The write asked and allowed, one denied, a sudo refused by the invariant.
async fn asks_writes_denies(agent: &'static Agent) {
    let s = Setup::new(agent, Script::text("Hello from the mock model. Streamed in pieces.")).await;
    let _guard = DaemonGuard(s.home.clone());
    let started = Instant::now();
    let (id, worktree) = s.session("say hello").await;

    // The first turn streams text, in more than one chunk, mapped onto the event model.
    let events = wait_for(&s.home, &id, 180, turns(1)).await;
    println!("{}: first turn done {:?} after the session was made", agent.name, started.elapsed());
    let texts: Vec<&str> = of_type(&events, "assistantText")
        .iter()
        .filter_map(|e| e["kind"]["text"].as_str())
        .collect();
    assert!(texts.len() > 1, "streamed in chunks: {texts:?}");
    assert_eq!(texts.concat(), "Hello from the mock model. Streamed in pieces.", "{events:#?}");
    let session_started = &of_type(&events, "sessionStarted")[0]["kind"];
    assert_eq!(session_started["cwd"], worktree.to_str().unwrap());
    let end = &of_type(&events, "turnCompleted")[0]["kind"];
    assert_eq!(end["stopReason"], "end_turn", "{end}");
    assert_ne!(end["isError"], true, "{end}");

    // An allowed write: asked through the policy (rules ask for every write), then the CLI.
    // The path is absolute (Qwen's write tool refuses a relative one), so it is scripted only
    // now that the worktree is known.
    s.mock.set_script(write_then_done(agent, &worktree.join("a.txt"), "from the agent\n"));
    s.ok(&["session", "send", &id, "write a.txt"]).await;
    let events = wait_for(&s.home, &id, 180, |ev| !open_asks(ev).is_empty()).await;
    println!("{}: first approval {:?} after the session was made", agent.name, started.elapsed());
    let ask = open_asks(&events)[0].clone();
    assert_eq!(ask["kind"]["risk"], "medium", "the policy classed it: {ask}");
    let request = ask["kind"]["requestID"].as_str().unwrap().to_owned();
    s.ok(&["session", "approve", &id, &request]).await;
    let events = wait_for(&s.home, &id, 120, turns(2)).await;
    assert_eq!(
        std::fs::read_to_string(worktree.join("a.txt")).ok().as_deref(),
        Some("from the agent\n"),
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e["backend"] == agent.name.replace("opencode", "openCode")));
    // One card: the call (both open it as a bare `edit`, its input empty until the request),
    // its approval (the policy's `Write`), its result.
    assert_eq!(ask["kind"]["toolName"], "Write", "{ask}");
    let call = ask["kind"]["toolCallID"].as_str().unwrap_or_default().to_owned();
    let calls = of_type(&events, "toolCallStarted");
    let card = calls.iter().find(|c| c["kind"]["toolCallID"] == call.as_str());
    assert!(card.is_some(), "{events:#?}");
    let result = of_type(&events, "toolResult");
    let result = result.iter().find(|r| r["kind"]["toolCallID"] == call.as_str());
    assert_ne!(result.map(|r| &r["kind"]["isError"]), Some(&json!(true)), "{events:#?}");
    assert!(result.is_some(), "the card is closed: {events:#?}");
    // Both send the write to the host (`fs/write_text_file`; OpenCode writes it itself too).
    let delegated = events.iter().any(|e| e["nativeType"] == "fs/write_text_file");
    assert!(delegated, "{events:#?}");

    // A denied write: not written, and the model is told.
    s.mock.set_script(write_then_done(agent, &worktree.join("b.txt"), "never\n"));
    s.ok(&["session", "send", &id, "now write b.txt"]).await;
    let events = wait_for(&s.home, &id, 120, |ev| !open_asks(ev).is_empty()).await;
    let request = open_asks(&events)[0]["kind"]["requestID"].as_str().unwrap().to_owned();
    s.ok(&["session", "deny", &id, &request, "not b.txt"]).await;
    let events = wait_for(&s.home, &id, 120, turns(3)).await;
    assert!(!worktree.join("b.txt").exists(), "{events:#?}");
    let refused = of_type(&events, "approvalRequested")
        .into_iter()
        .find(|a| a["kind"]["requestID"] == request.as_str())
        .and_then(|a| a["kind"]["toolCallID"].as_str().map(str::to_owned));
    let closed = of_type(&events, "toolResult").into_iter().any(|r| {
        r["kind"]["isError"] == true
            && refused.as_deref().is_none_or(|c| r["kind"]["toolCallID"] == c)
    });
    assert!(closed, "the refused call's card is closed as failed: {events:#?}");
    let told = |requests: &[Value]| {
        requests.last().map(tool_messages).is_some_and(|answers| {
            answers.last().is_some_and(|a| a.contains("reject") || a.contains("cancel"))
        })
    };
    let requests = s.turn_requests();
    println!(
        "{}: the model got, after the deny: {:?}",
        agent.name,
        requests.last().map(tool_messages)
    );
    assert_eq!(told(&requests), !agent.deny_ends_turn, "{requests:#?}");

    // A command the invariant refuses: denied by the host, never run, whatever is answered.
    s.mock.set_script(Script::new(vec![
        Reply::ToolCalls { text: None, calls: vec![(agent.shell)("sudo touch pwned.txt")] },
        Reply::Text("done".into()),
    ]));
    s.ok(&["session", "send", &id, "run it"]).await;
    let events = wait_for(&s.home, &id, 120, turns(4)).await;
    let sudo = of_type(&events, "approvalResolved")
        .into_iter()
        .find(|r| r["kind"]["by"] == "invariant:sudo")
        .unwrap_or_else(|| panic!("no policy deny: {events:#?}"))
        .clone();
    assert_eq!(sudo["kind"]["decision"], "deny", "{sudo}");
    let sudo_request = sudo["kind"]["requestID"].as_str().unwrap().to_owned();
    let answered = s.cli(&["session", "approve", &id, &sudo_request]).await;
    assert_ne!(answered.0, 0, "an answered invariant deny is not re-opened");
    assert!(!worktree.join("pwned.txt").exists());
    if agent.deny_ends_turn {
        // The deny of b.txt reached the model with this turn's history.
        let requests = s.turn_requests();
        let history: Vec<String> = requests.iter().flat_map(tool_messages).collect();
        println!("{}: the refusal in the next turn's history: {history:?}", agent.name);
        assert!(
            history.iter().any(|a| a.contains("rejected") || a.contains("canceled")),
            "{history:?}"
        );
    }
    s.ok(&["session", "stop", &id]).await;
}

/// A model server that fails every request: the turn ends failed with the server's error.
async fn fails_clearly(agent: &'static Agent) {
    let s = Setup::new(agent, Script::text("never").with_fault(FaultKind::Http500, None)).await;
    let _guard = DaemonGuard(s.home.clone());
    let (id, _) = s.session("say something").await;
    let events = wait_for(&s.home, &id, 240, turns(1)).await;
    let end = of_type(&events, "turnCompleted")[0]["kind"].clone();
    let errors: Vec<String> =
        of_type(&events, "error").iter().map(|e| e["kind"]["message"].to_string()).collect();
    println!(
        "{}: 500 always: {end} {errors:?} after {} requests",
        agent.name,
        s.turn_requests().len()
    );
    assert_eq!(end["isError"], true, "{end}");
    let said = format!("{end} {errors:?}");
    assert!(said.contains("mock internal error") || said.contains("500"), "{said}");
    // Nothing lost: the prompt reached the model, and the session takes the next one.
    assert!(s.turn_requests()[0].to_string().contains("say something"));
    s.mock.set_script(Script::text("back again"));
    s.ok(&["session", "send", &id, "and now"]).await;
    wait_for(&s.home, &id, 120, turns(2)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_opencode_in_the_daemon_asks_writes_denies_and_refuses_sudo() {
    if isolated!("real_opencode_in_the_daemon_asks_writes_denies_and_refuses_sudo") {
        return;
    }
    asks_writes_denies(&OPENCODE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_qwen_in_the_daemon_asks_writes_denies_and_refuses_sudo() {
    if isolated!("real_qwen_in_the_daemon_asks_writes_denies_and_refuses_sudo") {
        return;
    }
    asks_writes_denies(&QWEN).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_opencode_turn_fails_clearly_when_the_model_server_does() {
    if isolated!("real_opencode_turn_fails_clearly_when_the_model_server_does") {
        return;
    }
    fails_clearly(&OPENCODE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_qwen_turn_fails_clearly_when_the_model_server_does() {
    if isolated!("real_qwen_turn_fails_clearly_when_the_model_server_does") {
        return;
    }
    fails_clearly(&QWEN).await;
}
