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
}

const OPENCODE: Agent = Agent {
    name: "opencode",
    bin: real_opencode,
    env: opencode_offline_env,
    write: |path, content| {
        ToolCall::function("write", json!({"filePath": path, "content": content}))
    },
    shell: |cmd| ToolCall::function("bash", json!({"command": cmd, "description": "run it"})),
};

const QWEN: Agent = Agent {
    name: "qwen",
    bin: real_qwen,
    env: qwen_offline_env,
    write: |path, content| {
        ToolCall::function("write_file", json!({"file_path": path, "content": content}))
    },
    shell: |cmd| ToolCall::function("run_shell_command", json!({"command": cmd})),
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
    dir: tempfile::TempDir,
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
        let mut s = Setup { dir, agent, mock, env, home, project: String::new() };
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

    /// A session of the agent, started without a prompt; its id and worktree.
    async fn idle_session(&self) -> (String, std::path::PathBuf) {
        let args = ["session", "new", "--project", &self.project, "--agent", self.agent.name];
        let id = self.ok(&args).await.split_whitespace().next().unwrap().to_owned();
        let events = transcript(&self.home, &id);
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
    let s = Setup::new(agent, Script::text("unused")).await;
    let _guard = DaemonGuard(s.home.clone());
    let started = Instant::now();
    let (id, worktree) = s.idle_session().await;

    // An allowed write: asked through the policy (rules ask for every write), then the CLI.
    s.mock.set_script(write_then_done(agent, &worktree.join("a.txt"), "from the agent\n"));
    s.ok(&["session", "send", &id, "write a.txt"]).await;
    let events = wait_for(&s.home, &id, 180, |ev| !open_asks(ev).is_empty()).await;
    println!("{}: first approval {:?} after the session was made", agent.name, started.elapsed());
    let ask = open_asks(&events)[0].clone();
    assert_eq!(ask["kind"]["risk"], "medium", "the policy classed it: {ask}");
    let request = ask["kind"]["requestID"].as_str().unwrap().to_owned();
    s.ok(&["session", "approve", &id, &request]).await;
    let events = wait_for(&s.home, &id, 120, turns(1)).await;
    assert_eq!(
        std::fs::read_to_string(worktree.join("a.txt")).ok().as_deref(),
        Some("from the agent\n"),
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e["backend"] == agent.name.replace("opencode", "openCode")));

    // A denied write: not written, and the model is told.
    s.mock.set_script(write_then_done(agent, &worktree.join("b.txt"), "never\n"));
    s.ok(&["session", "send", &id, "now write b.txt"]).await;
    let events = wait_for(&s.home, &id, 120, |ev| !open_asks(ev).is_empty()).await;
    let request = open_asks(&events)[0]["kind"]["requestID"].as_str().unwrap().to_owned();
    s.ok(&["session", "deny", &id, &request, "not b.txt"]).await;
    let events = wait_for(&s.home, &id, 120, turns(2)).await;
    assert!(!worktree.join("b.txt").exists(), "{events:#?}");
    let answers = tool_messages(s.turn_requests().last().unwrap());
    println!("{}: the model got, after the deny: {answers:?}", agent.name);
    assert!(answers.last().is_some_and(|a| a.contains("reject") || a.contains("cancel")));

    // A command the invariant refuses: denied by the host, never run, whatever is answered.
    s.mock.set_script(Script::new(vec![
        Reply::ToolCalls { text: None, calls: vec![(agent.shell)("sudo touch pwned.txt")] },
        Reply::Text("done".into()),
    ]));
    s.ok(&["session", "send", &id, "run it"]).await;
    let events = wait_for(&s.home, &id, 120, turns(3)).await;
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
    s.ok(&["session", "stop", &id]).await;
}

/// A model server that fails every request: the turn ends failed with the server's error.
async fn fails_clearly(agent: &'static Agent) {
    let s = Setup::new(agent, Script::text("never").with_fault(FaultKind::Http500, None)).await;
    let _guard = DaemonGuard(s.home.clone());
    let (id, _) = s.idle_session().await;
    s.ok(&["session", "send", &id, "say something"]).await;
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
