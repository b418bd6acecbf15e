//! `nucleic mcp` end to end over stdio against a real daemon: the MCP handshake, `tools/list`,
//! `tools/call` reading the home's project, and bad input (a malformed line, an unknown method,
//! an unknown tool) answered with JSON-RPC errors while the server keeps serving.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::chat_bridge::setup;
use crate::support::nucleic;

/// The next JSON-RPC message on `lines` that answers `id`, within 30 s.
async fn reply_to(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    id: i64,
) -> Value {
    let within = Duration::from_secs(30);
    loop {
        let line = tokio::time::timeout(within, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no reply to request {id} within {within:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("nucleic mcp closed stdout before replying to {id}"));
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == json!(id) {
            return message;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_stdio_lists_tools_and_projects_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mut child = tokio::process::Command::new(nucleic())
        .arg("mcp")
        .env("NUCLEIC_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    macro_rules! send {
        ($line:expr) => {{
            stdin.write_all(format!("{}\n", $line).as_bytes()).await.unwrap();
            stdin.flush().await.unwrap();
        }};
    }

    send!(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}));
    let init = reply_to(&mut lines, 1).await;
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
    send!(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    send!(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let list = reply_to(&mut lines, 2).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"list_projects") && names.contains(&"list_sessions"), "{list}");

    send!(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_projects", "arguments": {}}}));
    let call = reply_to(&mut lines, 3).await;
    let text = call["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{call}"));
    let projects: Value = serde_json::from_str(text).unwrap();
    let root = dir.path().join("repo");
    let roots: Vec<&str> =
        projects.as_array().unwrap().iter().filter_map(|p| p["root"].as_str()).collect();
    assert_eq!(roots.len(), 1, "{projects}");
    assert!(roots[0].ends_with("repo"), "{projects} (root {})", root.display());

    send!(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "list_sessions", "arguments": {}}}));
    let sessions = reply_to(&mut lines, 4).await;
    let text =
        sessions["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{sessions}"));
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!([]),
        "a new home has no session"
    );

    // Bad input: the server answers with JSON-RPC errors and keeps serving.
    send!("{this is not json");
    send!(json!("a JSON string, not a JSON-RPC message"));
    send!(json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}));
    let unknown = reply_to(&mut lines, 5).await;
    assert_eq!(
        unknown["error"]["code"],
        json!(-32601),
        "unknown method → method not found: {unknown}"
    );
    send!(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "approve_everything", "arguments": {}}}));
    let no_tool = reply_to(&mut lines, 6).await;
    assert!(
        no_tool["error"].is_object() || no_tool["result"]["isError"] == json!(true),
        "{no_tool}"
    );
    send!(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    let again = reply_to(&mut lines, 7).await;
    assert!(again["result"]["tools"].is_array(), "still serving after bad input: {again}");

    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("nucleic mcp exits within 20 s of its stdin closing")
        .unwrap();
    assert!(status.success(), "{status}");
}
