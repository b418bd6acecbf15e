//! Real `claude` (pinned, against the mock Anthropic server, offline, in a loopback-only
//! namespace) as an MCP client of `nucleic mcp`: two servers in its `--mcp-config`, one per
//! grant. Through tool calls it starts a simulated Nucleic session, waits until it needs
//! attention, reads its pending approval, tries to allow it with the grant that lacks
//! `approve` (refused, saying why; the command does not run), then with the grant that has it
//! (the command runs, recorded as that grant). Then a second session asks a critical command:
//! the grant with `approve` is refused too, and the command does not run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{
    Computed, MockAnthropic, Reply, Script, ToolCall, last_tool_result,
};
use serde_json::{Value, json};

use crate::chat_bridge::setup;
use crate::mcp_stdio::{Mcp, grant};
use crate::support::nucleic;

/// A tool call as the model's whole reply.
fn call(name: &str, input: Value) -> Reply {
    Reply::ToolUses { text: None, calls: vec![ToolCall::new(name, input)] }
}

/// The last tool result of `body`, as JSON (null when it is not JSON).
fn last_json(body: &Value) -> Value {
    last_tool_result(body).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_starts_a_session_through_mcp_and_its_approval_is_held_to_the_grant() {
    if isolated!("real_claude_starts_a_session_through_mcp_and_its_approval_is_held_to_the_grant") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let starter = grant(&home, "claude-starter", "start,steer").await;
    let approver = grant(&home, "claude-approver", "approve").await;
    let observer = grant(&home, "test-observer", "observe").await;
    let mut watch = Mcp::start(&home, &observer).await;
    let projects = watch.call("list_projects", json!({})).await;
    let project = projects[0]["projectID"].as_str().unwrap().to_owned();

    // The model's turns: each tool call quotes what the previous results said.
    let session: Arc<Mutex<String>> = Arc::default();
    let request: Arc<Mutex<String>> = Arc::default();
    let critical: Arc<Mutex<String>> = Arc::default();
    let (s1, s2, s3, s4, r1, r2, s5) = (
        session.clone(),
        session.clone(),
        session.clone(),
        session.clone(),
        request.clone(),
        request.clone(),
        session.clone(),
    );
    let (c1, c2, c3) = (critical.clone(), critical.clone(), critical.clone());
    let script = Script::new(vec![
        call(
            "mcp__nucleic__start_session",
            json!({"project_id": project, "prompt": "run echo via-claude-mcp", "backend": "simulated"}),
        ),
        Computed::reply(move |body| {
            let id = last_json(body)["sessionID"].as_str().unwrap_or("no-session").to_owned();
            *s1.lock().unwrap() = id.clone();
            call("mcp__nucleic__wait_for_session", json!({"session_id": id, "timeout_secs": 30}))
        }),
        Computed::reply(move |_| {
            let id = s2.lock().unwrap().clone();
            call("mcp__nucleic__pending_approvals", json!({"session_id": id}))
        }),
        Computed::reply(move |body| {
            let pending = last_json(body);
            let id = pending[0]["requestID"].as_str().unwrap_or("no-request").to_owned();
            *r1.lock().unwrap() = id.clone();
            let session = s3.lock().unwrap().clone();
            call(
                "mcp__nucleic__answer_approval",
                json!({"session_id": session, "request_id": id, "decision": "allow"}),
            )
        }),
        Computed::reply(move |_| {
            let (session, id) = (s4.lock().unwrap().clone(), r2.lock().unwrap().clone());
            call(
                "mcp__nucleic_approver__answer_approval",
                json!({"session_id": session, "request_id": id, "decision": "allow"}),
            )
        }),
        Computed::reply(move |_| {
            let id = s5.lock().unwrap().clone();
            call("mcp__nucleic__wait_for_session", json!({"session_id": id, "timeout_secs": 30}))
        }),
        // A second session, whose command breaks the `sudo` invariant: critical.
        call(
            "mcp__nucleic__start_session",
            json!({"project_id": project, "prompt": "run touch critical-via-claude; sudo -n true",
                "backend": "simulated"}),
        ),
        Computed::reply(move |body| {
            let id = last_json(body)["sessionID"].as_str().unwrap_or("no-session").to_owned();
            *c1.lock().unwrap() = id.clone();
            call("mcp__nucleic__wait_for_session", json!({"session_id": id, "timeout_secs": 30}))
        }),
        Computed::reply(move |_| {
            let id = c2.lock().unwrap().clone();
            call("mcp__nucleic_approver__pending_approvals", json!({"session_id": id}))
        }),
        Computed::reply(move |body| {
            let pending = last_json(body);
            let request = pending[0]["requestID"].as_str().unwrap_or("no-request").to_owned();
            let session = c3.lock().unwrap().clone();
            call(
                "mcp__nucleic_approver__answer_approval",
                json!({"session_id": session, "request_id": request, "decision": "allow"}),
            )
        }),
        Reply::Text("The first session ran; the second waits for a person.".into()),
    ]);
    let mock = MockAnthropic::start(script).await.unwrap();
    let server = |credential: &str| {
        json!({"command": nucleic(), "args": ["mcp"],
            "env": {"NUCLEIC_HOME": home, "NUCLEIC_MCP_CREDENTIAL": credential}})
    };
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        "nucleic": server(&starter), "nucleic_approver": server(&approver)}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let scratch = dir.path().join(".scratch");
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new(real_claude())
            .args(["-p", "Start a Nucleic session and see it through.", "--output-format"])
            .args(["stream-json", "--verbose", "--strict-mcp-config", "--mcp-config"])
            .arg(&config)
            .args(["--allowedTools", "mcp__nucleic,mcp__nucleic_approver"])
            .envs(claude_offline_env(&mock.base_url(), &scratch))
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("claude did not finish within 180 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    // What each tool answered the model, in order (the requests after each call).
    let results: Vec<String> =
        mock.requests().iter().filter_map(|q| last_tool_result(&q.body)).collect();
    let id = session.lock().unwrap().clone();
    assert!(!id.is_empty() && id != "no-session", "no session started: {results:#?}\n{stdout}");
    let all = results.join("\n");
    assert!(all.contains("needs-approval"), "{all}");
    // Without `approve`: refused, saying why; with it: allowed, recorded as that grant.
    assert!(all.contains("`approve` scope") && all.contains("claude-starter"), "{all}");
    assert!(all.contains("\"by\":\"mcp:claude-approver\""), "{all}");
    assert!(all.contains("turn-over"), "{all}");

    // The effect, read through an observer grant: the command ran once, after the approver.
    let transcript =
        watch.call("read_transcript", json!({"session_id": id, "limit": 200})).await.to_string();
    assert!(transcript.contains("via-claude-mcp"), "{transcript}");
    assert!(transcript.contains("mcp:claude-approver"), "{transcript}");
    assert!(transcript.contains("mcp:claude-starter"), "created by the starter: {transcript}");

    // Critical: refused even with `approve`, saying so; still pending, the command not run.
    assert!(all.contains("is critical") && all.contains("only a person may allow it"), "{all}");
    let critical = critical.lock().unwrap().clone();
    let sessions = watch.call("list_sessions", json!({})).await;
    let second = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionID"] == json!(critical))
        .unwrap_or_else(|| panic!("no second session {critical}: {sessions}"))
        .clone();
    assert_eq!(second["pendingApprovals"], 1, "{second}");
    let worktree = std::path::Path::new(second["worktree"]["path"].as_str().unwrap());
    assert!(!worktree.join("critical-via-claude").exists(), "the critical command ran");
    watch.finish().await;
}
