//! Real `codex exec` (pinned, against the mock Responses API, offline, in a loopback-only
//! namespace) as an MCP client of `nucleic mcp`, two grants as two servers in its config: it
//! starts a simulated Nucleic session, waits, reads its pending approval, is refused allowing it
//! with the grant that lacks `approve`, and allows it with the one that has it (the command
//! runs, recorded as that grant).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_testkit::agents::{codex_offline_env, real_codex};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::{
    Computed, MockOpenAi, Reply, Script, ToolCall, codex_config_toml, last_tool_output,
};
use serde_json::{Value, json};

use crate::chat_bridge::setup;
use crate::mcp_stdio::{Mcp, grant};
use crate::support::nucleic;

/// A call of `tool` on MCP server `server`, as codex names it (a namespaced function).
fn call(server: &str, tool: &str, arguments: Value) -> Reply {
    let call = ToolCall::Function {
        name: tool.to_owned(),
        namespace: Some(format!("mcp__{server}")),
        arguments,
    };
    Reply::ToolCalls { text: None, calls: vec![call] }
}

/// The JSON an MCP tool answered, from codex's tool output (codex 0.171.0 hands the model
/// `Wall time: … seconds\nOutput:\n<the tool's text>`).
fn output_json(input: &[Value]) -> Value {
    let Some(text) = last_tool_output(input) else { return Value::Null };
    let body = text.split_once("Output:\n").map_or(text.as_str(), |(_, rest)| rest);
    serde_json::from_str(body.trim()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_starts_a_session_through_mcp_and_its_approval_is_held_to_the_grant() {
    if isolated!("real_codex_starts_a_session_through_mcp_and_its_approval_is_held_to_the_grant") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let starter = grant(&home, "codex-starter", "start,steer").await;
    let approver = grant(&home, "codex-approver", "approve").await;
    let observer = grant(&home, "test-observer", "observe").await;
    let mut watch = Mcp::start(&home, &observer).await;
    let projects = watch.call("list_projects", json!({})).await;
    let project = projects[0]["projectID"].as_str().unwrap().to_owned();

    let session: Arc<Mutex<String>> = Arc::default();
    let request: Arc<Mutex<String>> = Arc::default();
    let (s1, s2, s3, s4, r1, r2, s5) = (
        session.clone(),
        session.clone(),
        session.clone(),
        session.clone(),
        request.clone(),
        request.clone(),
        session.clone(),
    );
    let script = Script::new(vec![
        call(
            "nucleic",
            "start_session",
            json!({"project_id": project, "prompt": "run echo via-codex-mcp", "backend": "simulated"}),
        ),
        Computed::reply(1, move |input| {
            let id = output_json(input)["sessionID"].as_str().unwrap_or("no-session").to_owned();
            *s1.lock().unwrap() = id.clone();
            call("nucleic", "wait_for_session", json!({"session_id": id, "timeout_secs": 30}))
        }),
        Computed::reply(1, move |_| {
            let id = s2.lock().unwrap().clone();
            call("nucleic", "pending_approvals", json!({"session_id": id}))
        }),
        Computed::reply(1, move |input| {
            let id = output_json(input)[0]["requestID"].as_str().unwrap_or("no-request").to_owned();
            *r1.lock().unwrap() = id.clone();
            let session = s3.lock().unwrap().clone();
            call(
                "nucleic",
                "answer_approval",
                json!({"session_id": session, "request_id": id, "decision": "allow"}),
            )
        }),
        Computed::reply(1, move |_| {
            let (session, id) = (s4.lock().unwrap().clone(), r2.lock().unwrap().clone());
            call(
                "nucleic_approver",
                "answer_approval",
                json!({"session_id": session, "request_id": id, "decision": "allow"}),
            )
        }),
        Computed::reply(1, move |_| {
            let id = s5.lock().unwrap().clone();
            call("nucleic", "wait_for_session", json!({"session_id": id, "timeout_secs": 30}))
        }),
        Reply::Text("The session ran.".into()),
    ]);
    let mock = MockOpenAi::start(script).await.unwrap();
    let codex_home = dir.path().join(".codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    // An unknown model name: codex then offers MCP tools directly (namespaced), not behind
    // tool_search (docs: shared/reference/codex-cli.md).
    let mut config = codex_config_toml(&mock.base_url()).replacen(
        "model = \"",
        "model = \"mock-model\"\n# was: model = \"",
        1,
    );
    for (name, credential) in [("nucleic", &starter), ("nucleic_approver", &approver)] {
        config.push_str(&format!(
            "\n[mcp_servers.{name}]\ncommand = {:?}\nargs = [\"mcp\"]\ndefault_tools_approval_mode = \"approve\"\nenv = {{ NUCLEIC_HOME = {:?}, NUCLEIC_MCP_CREDENTIAL = {:?} }}\n",
            nucleic().to_string_lossy(),
            home.to_string_lossy(),
            credential
        ));
    }
    std::fs::write(codex_home.join("config.toml"), &config).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new(real_codex())
            .args(["exec", "--json", "--skip-git-repo-check", "Start a Nucleic session."])
            .envs(codex_offline_env(&codex_home, &codex_home))
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("codex did not finish within 180 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let requests = mock.requests();
    let tools = requests.first().map(|q| q.body["tools"].to_string()).unwrap_or_default();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    let outputs: Vec<String> = requests
        .iter()
        .filter_map(|q| q.body["input"].as_array().and_then(|i| last_tool_output(i)))
        .collect();
    let all = outputs.join("\n");
    let id = session.lock().unwrap().clone();
    assert!(
        !id.is_empty() && id != "no-session",
        "no session started: {all}\n{stdout}\ntools: {tools}"
    );
    assert!(all.contains("needs-approval"), "{all}");
    assert!(all.contains("`approve` scope") && all.contains("codex-starter"), "{all}");
    assert!(all.contains("mcp:codex-approver"), "{all}");
    let transcript =
        watch.call("read_transcript", json!({"session_id": id, "limit": 200})).await.to_string();
    assert!(transcript.contains("via-codex-mcp"), "{transcript}");
    assert!(transcript.contains("mcp:codex-approver"), "{transcript}");
    watch.finish().await;
}
