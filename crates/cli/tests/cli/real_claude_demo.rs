//! The launch the cockpit's browser suite uses for the real Claude CLI: `nucleic demo
//! --no-sessions --json --claude <pinned claude>` with the mock's offline environment in its own
//! environment (agents inherit it). A Claude Code session created over the WebSocket (signed in
//! with the cookie) asks to write the file its prompt names; allowed, the file is in the diff.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::nucleic;
use crate::web_signin::register_device;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(socket: &mut Socket, value: Value) {
    socket.send(Message::Text(value.to_string().into())).await.unwrap();
}

/// The next message that is not a summary broadcast.
async fn recv(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(90), socket.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Message::Text(t) = frame {
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["type"] != "sessionChanged" {
                return v;
            }
        }
    }
}

/// The reply to `messageID` (events that arrive first are skipped).
async fn reply(socket: &mut Socket, id: &str) -> Value {
    loop {
        let v = recv(socket).await;
        if v["messageID"] == id {
            return v;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_runs_real_claude_sessions_against_the_mock() {
    if isolated!("the_demo_runs_real_claude_sessions_against_the_mock") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mock = MockAnthropic::start(Script::write_named_file_then("Done: I wrote the file."))
        .await
        .unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let claude = real_claude();
    let mut demo = tokio::process::Command::new(nucleic())
        .args(["demo", "--no-sessions", "--json", "--claude"])
        .arg(&claude)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("NUCLEIC_HOME")
        // The browser suite's agents write files in their worktree, which the policy allows
        // without a person; this launch is about approving from the cockpit.
        .env(nucleic_host::HostConfig::POLICY_VARIABLE, "off")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(demo.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let info: Value = serde_json::from_str(&line).unwrap();
    let (status, body) = register_device(info["url"].as_str().unwrap(), "test browser").await;
    assert_eq!(status, 200, "{body}");
    let home = std::path::Path::new(info["home"].as_str().unwrap());
    let token = std::fs::read_to_string(home.join("token")).unwrap();

    let port = info["port"].as_u64().unwrap();
    let mut request = format!("ws://127.0.0.1:{port}/ws").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {}", token.trim()).parse().unwrap());
    request.headers_mut().insert("origin", format!("http://127.0.0.1:{port}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    send(&mut socket, json!({"type": "hello", "clientID": "browser-1", "clientName": "browser", "protocolVersion": 1})).await;
    let welcome = recv(&mut socket).await;
    let claude_info = welcome["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "claudeCode")
        .unwrap()
        .clone();
    assert_eq!(claude_info["available"], true, "{welcome}");

    send(&mut socket, json!({"type": "intent", "messageID": "new", "intent": {"kind": "newSession", "projectID": info["projectID"], "backend": "claudeCode", "prompt": "Create greeting.txt containing hello from the cockpit"}})).await;
    let created = reply(&mut socket, "new").await;
    assert_eq!(created["type"], "ack", "{created}");
    let id = created["result"]["sessionID"].as_str().unwrap().to_owned();
    send(
        &mut socket,
        json!({"type": "subscribe", "messageID": "sub", "sessionID": id, "fromSeq": 1}),
    )
    .await;
    let mut allowed = false;
    loop {
        let message = recv(&mut socket).await;
        let kind = &message["event"]["kind"];
        if kind["type"] == "approvalRequested" && !allowed {
            assert_eq!(kind["toolName"], "Write", "{message}");
            let request_id = kind["requestID"].clone();
            send(&mut socket, json!({"type": "decide", "messageID": "ok", "sessionID": id, "requestID": request_id, "decision": {"type": "allow"}})).await;
            allowed = true;
        }
        if kind["type"] == "turnCompleted" {
            break;
        }
    }
    assert!(allowed, "the Write was asked");
    send(&mut socket, json!({"type": "gitFacts", "messageID": "git", "sessionID": id})).await;
    let facts = reply(&mut socket, "git").await;
    assert_eq!(facts["facts"]["files"][0]["path"], "greeting.txt", "{facts}");
    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "read", "sessionID": id, "path": "greeting.txt"}),
    )
    .await;
    let file = reply(&mut socket, "read").await;
    assert_eq!(file["file"]["content"], "hello from the cockpit\n");

    let pid = i32::try_from(demo.id().unwrap()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), demo.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
}
