//! Integration tests for the mock Messages API, over a hand-written HTTP/1.1 client.
// Helpers here and in `support` are test code too: a malformed response fails the test loudly.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use nucleic_testkit::mock_anthropic::{FaultKind, MockAnthropic, SIDE_QUERY_ANSWER, Script};
use serde_json::{Value, json};
use support::{RawResponse, read_all, receive};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio::net::TcpStream;

fn host_port(base_url: &str) -> String {
    base_url.strip_prefix("http://").unwrap().to_owned()
}

async fn send(mock: &MockAnthropic, method: &str, path: &str, body: Option<&Value>) -> TcpStream {
    let addr = host_port(&mock.base_url());
    support::send(&addr, "x-api-key: sk-test\r\n", method, path, body).await
}

async fn request(
    mock: &MockAnthropic,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> RawResponse {
    receive(&mut send(mock, method, path, body).await).await
}

/// The tools Claude Code's conversation requests carry (the mock plays its script only there).
fn tools() -> Value {
    json!([{"name": "Write", "input_schema": {"type": "object"}}])
}

fn first_turn(stream: bool) -> Value {
    json!({
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": stream,
        "tools": tools(),
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "create hello.txt"}]},
            {"role": "system", "content": "environment"}
        ]
    })
}

fn second_turn(tool_use: &Value) -> Value {
    let mut body = first_turn(true);
    let id = tool_use["id"].clone();
    let msgs = body["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "assistant", "content": [tool_use]}));
    msgs.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": "File created successfully"}
    ]}));
    body
}

/// Rebuild the content blocks of a streamed message from its events.
fn assemble(events: &[(String, Value)]) -> (Vec<Value>, Value) {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut stop_reason = Value::Null;
    for (event, data) in events {
        assert_eq!(data["type"], event.as_str());
        match event.as_str() {
            "content_block_start" => {
                assert_eq!(data["index"], blocks.len());
                blocks.push(data["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = data["index"].as_u64().unwrap() as usize;
                let d = &data["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => {
                        let t = format!(
                            "{}{}",
                            blocks[i]["text"].as_str().unwrap(),
                            d["text"].as_str().unwrap()
                        );
                        blocks[i]["text"] = t.into();
                    }
                    "thinking_delta" => {
                        let t = format!(
                            "{}{}",
                            blocks[i]["thinking"].as_str().unwrap(),
                            d["thinking"].as_str().unwrap()
                        );
                        blocks[i]["thinking"] = t.into();
                    }
                    "signature_delta" => blocks[i]["signature"] = d["signature"].clone(),
                    "input_json_delta" => partial[i].push_str(d["partial_json"].as_str().unwrap()),
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let i = data["index"].as_u64().unwrap() as usize;
                if blocks[i]["type"] == "tool_use" {
                    blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                }
            }
            "message_delta" => stop_reason = data["delta"]["stop_reason"].clone(),
            _ => {}
        }
    }
    (blocks, stop_reason)
}

#[tokio::test]
async fn streaming_write_then_done() {
    let mock =
        MockAnthropic::start(Script::write_then_done("/tmp/ws/hello.txt", "hello")).await.unwrap();
    let resp = request(&mock, "POST", "/v1/messages?beta=true", Some(&first_turn(true))).await;
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let events = resp.events();
    let names = resp.names();
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let start = &events[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_mock_"));
    assert_eq!(start["model"], "claude-opus-5-5");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["usage"]["input_tokens"], 100);
    let json_deltas =
        events.iter().filter(|(_, d)| d["delta"]["type"] == "input_json_delta").count();
    assert!(json_deltas >= 2, "input split in 2+ chunks");
    let text_deltas = events.iter().filter(|(_, d)| d["delta"]["type"] == "text_delta").count();
    assert!((2..=3).contains(&text_deltas));

    let (blocks, stop) = assemble(&events);
    assert_eq!(stop, "tool_use");
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0], json!({"type": "text", "text": "I'll write the file."}));
    assert_eq!(blocks[1]["name"], "Write");
    assert_eq!(blocks[1]["input"], json!({"file_path": "/tmp/ws/hello.txt", "content": "hello"}));
    let id = blocks[1]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_") && id.len() == 30, "{id}");

    let resp =
        request(&mock, "POST", "/v1/messages?beta=true", Some(&second_turn(&blocks[1]))).await;
    let (blocks, stop) = assemble(&resp.events());
    assert_eq!(stop, "end_turn");
    assert_eq!(blocks, vec![json!({"type": "text", "text": "done"})]);
}

#[tokio::test]
async fn non_streaming_json_shape() {
    let mock = MockAnthropic::start(Script::write_then_done("/w/a.txt", "x")).await.unwrap();
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(false))).await;
    assert_eq!(resp.status, 200);
    assert!(resp.header("content-type").unwrap().starts_with("application/json"));
    let msg = resp.json();
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["role"], "assistant");
    assert_eq!(msg["model"], "claude-opus-5-5");
    assert_eq!(msg["stop_reason"], "tool_use");
    assert_eq!(msg["stop_sequence"], Value::Null);
    assert_eq!(msg["usage"]["input_tokens"], 100);
    assert!(msg["usage"]["output_tokens"].as_u64().unwrap() >= 1);
    assert_eq!(msg["content"][0]["type"], "text");
    assert_eq!(msg["content"][1]["type"], "tool_use");
    assert_eq!(msg["content"][1]["input"], json!({"file_path": "/w/a.txt", "content": "x"}));

    // Without "stream" at all: JSON too.
    let mut body = first_turn(false);
    body.as_object_mut().unwrap().remove("stream");
    mock.set_script(Script::text("hi"));
    let msg = request(&mock, "POST", "/v1/messages", Some(&body)).await.json();
    assert_eq!(msg["content"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(msg["stop_reason"], "end_turn");
}

#[tokio::test]
async fn thinking_stream() {
    let mock = MockAnthropic::start(Script::thinking("let me think", "answer")).await.unwrap();
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    let events = resp.events();
    let kinds: Vec<&str> = events.iter().filter_map(|(_, d)| d["delta"]["type"].as_str()).collect();
    let sig = kinds.iter().position(|k| *k == "signature_delta").unwrap();
    assert!(kinds[..sig].iter().all(|k| *k == "thinking_delta") && sig >= 1);
    let (blocks, stop) = assemble(&events);
    assert_eq!(stop, "end_turn");
    assert_eq!(blocks[0]["type"], "thinking");
    assert_eq!(blocks[0]["thinking"], "let me think");
    assert!(!blocks[0]["signature"].as_str().unwrap().is_empty());
    assert_eq!(blocks[1], json!({"type": "text", "text": "answer"}));
}

#[tokio::test]
async fn http500_twice_then_success_and_reset() {
    let script = Script::text("ok").with_fault(FaultKind::Http500, Some(2));
    let mock = MockAnthropic::start(script.clone()).await.unwrap();
    for _ in 0..2 {
        let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
        assert_eq!(resp.status, 500);
        assert_eq!(
            resp.json(),
            json!({"type": "error", "error": {"type": "api_error", "message": "mock: internal error"}})
        );
    }
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    assert_eq!(resp.status, 200);
    // count_tokens is not subject to faults, set_script resets the counter.
    mock.set_script(script);
    let resp = request(&mock, "POST", "/v1/messages/count_tokens", Some(&first_turn(false))).await;
    assert_eq!(resp.json(), json!({"input_tokens": 100}));
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(false))).await;
    assert_eq!(resp.status, 500);
}

#[tokio::test]
async fn http429_and_529() {
    let mock = MockAnthropic::start(Script::text("ok").with_fault(FaultKind::Http429, None))
        .await
        .unwrap();
    for _ in 0..2 {
        let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
        assert_eq!(resp.status, 429);
        assert_eq!(resp.header("retry-after"), Some("1"));
        assert_eq!(resp.json()["error"]["type"], "rate_limit_error");
    }
    mock.set_script(Script::text("ok").with_fault(FaultKind::Http529, Some(1)));
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    assert_eq!(resp.status, 529);
    assert_eq!(resp.json()["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn drop_mid_stream_breaks_the_connection() {
    let script = Script::text("ok").with_fault(FaultKind::DropMidStream, Some(1));
    let mock = MockAnthropic::start(script).await.unwrap();
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    assert_eq!(resp.status, 200);
    assert!(!resp.complete, "no chunked terminator");
    let text = String::from_utf8_lossy(&resp.body);
    assert!(text.contains("event: message_start"));
    assert!(text.contains("event: content_block_start"));
    assert!(text.contains("text_delta"));
    assert!(!text.contains("message_stop"));
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    assert!(resp.complete);

    mock.set_script(Script::text("ok").with_fault(FaultKind::DropMidStream, None));
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(false))).await;
    assert!(!resp.complete);
    assert!(serde_json::from_slice::<Value>(&resp.body).is_err());
}

#[tokio::test]
async fn hang_until_dropped() {
    let mock =
        MockAnthropic::start(Script::text("ok").with_fault(FaultKind::Hang, None)).await.unwrap();
    let mut stream = send(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    let mut buf = [0u8; 16];
    let early = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await;
    assert!(early.is_err(), "no response while hanging");
    assert_eq!(mock.requests().len(), 1);
    drop(mock);
    let raw = tokio::time::timeout(Duration::from_secs(5), read_all(&mut stream)).await.unwrap();
    assert!(raw.is_empty(), "closed without a response: {:?}", String::from_utf8_lossy(&raw));
}

#[tokio::test]
async fn unknown_paths_are_404_and_everything_is_recorded() {
    let mock = MockAnthropic::start(Script::text("hi")).await.unwrap();
    let resp = request(&mock, "GET", "/nope?x=1", None).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json()["type"], "error");
    assert_eq!(resp.json()["error"]["type"], "not_found_error");
    let resp = request(&mock, "HEAD", "/api/hello", None).await;
    assert_eq!(resp.status, 404);
    let resp = request(&mock, "GET", "/v1/messages", None).await;
    assert_eq!(resp.status, 404);
    let models = request(&mock, "GET", "/v1/models?limit=5", None).await.json();
    assert_eq!(models["data"][0]["id"], "claude-opus-5-5");
    assert_eq!(models["has_more"], false);
    let body = first_turn(true);
    request(&mock, "POST", "/v1/messages?beta=true", Some(&body)).await;

    let reqs = mock.requests();
    let seen: Vec<(&str, &str)> =
        reqs.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("GET", "/nope?x=1"),
            ("HEAD", "/api/hello"),
            ("GET", "/v1/messages"),
            ("GET", "/v1/models?limit=5"),
            ("POST", "/v1/messages?beta=true"),
        ]
    );
    assert_eq!(reqs[0].body, Value::Null);
    assert_eq!(reqs[4].body, body);
    assert!(reqs[4].headers.iter().any(|(k, v)| k == "x-api-key" && v == "sk-test"));
}

#[tokio::test]
async fn chunk_delay_spaces_frames() {
    let script = Script::text("abc").with_chunk_delay(Duration::from_millis(20));
    let mock = MockAnthropic::start(script).await.unwrap();
    let started = std::time::Instant::now();
    let resp = request(&mock, "POST", "/v1/messages", Some(&first_turn(true))).await;
    // message_start, ping, block start, 3 deltas, block stop, message_delta, message_stop.
    assert_eq!(resp.events().len(), 9);
    assert!(started.elapsed() >= Duration::from_millis(8 * 20));
}

// ----- the standalone binary: one JSON line with its URL, a `Write` of the file the prompt
// names in the working directory of the system prompt, a closing message, SIGTERM.

fn bin_turn(messages: Value) -> Value {
    json!({
        "model": "claude-opus-5-5",
        "max_tokens": 1000,
        "stream": false,
        "system": [{"type": "text", "text": "You are Claude Code.\n<env>\nPrimary working directory: /work/tree\n</env>"}],
        "tools": tools(),
        "messages": messages,
    })
}

#[tokio::test]
async fn the_binary_prints_its_url_and_writes_the_named_file_then_closes() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-anthropic"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let printed: Value = serde_json::from_str(&line).unwrap();
    let url = printed["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let addr = url.strip_prefix("http://").unwrap();

    let prompt = json!([{"role": "user", "content": [{"type": "text", "text": "create notes/hi.md containing hello there"}]}]);
    let mut stream = support::send(
        addr,
        "x-api-key: sk-test\r\n",
        "POST",
        "/v1/messages",
        Some(&bin_turn(prompt.clone())),
    )
    .await;
    let first = support::receive(&mut stream).await.json();
    assert_eq!(first["stop_reason"], "tool_use", "{first}");
    let call = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()
        .clone();
    assert_eq!(call["name"], "Write");
    assert_eq!(
        call["input"],
        json!({"file_path": "/work/tree/notes/hi.md", "content": "hello there\n"})
    );

    let mut messages = prompt.as_array().unwrap().clone();
    messages.push(json!({"role": "assistant", "content": [call.clone()]}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "File created successfully"}]}));
    let mut stream = support::send(
        addr,
        "x-api-key: sk-test\r\n",
        "POST",
        "/v1/messages",
        Some(&bin_turn(Value::Array(messages))),
    )
    .await;
    let second = support::receive(&mut stream).await.json();
    assert_eq!(second["stop_reason"], "end_turn");
    assert_eq!(second["content"][0]["text"], "Done: I wrote the file.");

    let pid = i32::try_from(child.id().unwrap()).unwrap();
    let killed =
        std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status().unwrap();
    assert!(killed.success());
    let status =
        tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_side_query_without_tools_gets_a_plain_answer_not_the_script() {
    let mock = MockAnthropic::start(Script::write_then_done("/w/a.txt", "x")).await.unwrap();
    let mut body = first_turn(false);
    body.as_object_mut().unwrap().remove("tools");
    let resp = request(&mock, "POST", "/v1/messages", Some(&body)).await;
    assert_eq!(resp.status, 200);
    let reply = resp.json();
    assert_eq!(reply["content"][0]["text"], SIDE_QUERY_ANSWER, "{reply}");
    assert_eq!(reply["stop_reason"], "end_turn");
}
