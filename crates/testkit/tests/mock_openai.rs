//! Integration tests for the mock Responses API, over a hand-written HTTP/1.1 client.
// Helpers here and in `support` are test code too: a malformed response fails the test loudly.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use nucleic_testkit::mock_openai::{
    FaultKind, MockOpenAi, Reply, Script, ToolCall, add_file_patch, codex_config_toml,
};
use serde_json::{Value, json};
use support::{RawResponse, read_all, receive};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

fn host_port(mock: &MockOpenAi) -> String {
    let url = mock.base_url();
    url.strip_prefix("http://").unwrap().strip_suffix("/v1").unwrap().to_owned()
}

async fn send(mock: &MockOpenAi, method: &str, path: &str, body: Option<&Value>) -> TcpStream {
    support::send(
        &host_port(mock),
        "authorization: Bearer sk-mock\r\naccept: text/event-stream\r\n",
        method,
        path,
        body,
    )
    .await
}

async fn request(mock: &MockOpenAi, method: &str, path: &str, body: Option<&Value>) -> RawResponse {
    receive(&mut send(mock, method, path, body).await).await
}

async fn post(mock: &MockOpenAi, body: &Value) -> RawResponse {
    request(mock, "POST", "/v1/responses", Some(body)).await
}

/// A first request as codex sends it: developer messages, environment context, the prompt.
fn first_turn(stream: bool) -> Value {
    let msg = |role: &str, text: &str| json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]});
    json!({
        "model": "gpt-5.5",
        "stream": stream,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "store": false,
        "input": [
            msg("developer", "You are Codex."),
            msg("user", "<environment_context>…</environment_context>"),
            msg("user", "create the file"),
        ],
    })
}

/// The next request: the previous request's input, then `items` (the calls), then an output
/// for each call, as codex records them.
fn next_turn(previous: &Value, calls: &[Value]) -> Value {
    let mut body = previous.clone();
    let input = body["input"].as_array_mut().unwrap();
    input.extend(calls.iter().cloned());
    for call in calls {
        let kind = if call["type"] == "custom_tool_call" {
            "custom_tool_call_output"
        } else {
            "function_call_output"
        };
        input.push(json!({"type": kind, "call_id": call["call_id"], "output": "Exit code: 0"}));
    }
    body
}

/// Rebuild the output items of a streamed response from its events, checking that deltas add
/// up to what `output_item.done` carries; returns the done items and the completed response.
fn assemble(events: &[(String, Value)]) -> (Vec<Value>, Value) {
    let mut added: Vec<Value> = Vec::new();
    let mut streamed: Vec<String> = Vec::new();
    let mut done: Vec<Value> = Vec::new();
    let mut completed = Value::Null;
    for (event, data) in events {
        match event.as_str() {
            "response.created" => assert_eq!(data["response"]["status"], "in_progress"),
            "response.output_item.added" => {
                assert_eq!(data["output_index"], added.len());
                added.push(data["item"].clone());
                streamed.push(String::new());
            }
            "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta" => {
                let i = data["output_index"].as_u64().unwrap() as usize;
                assert_eq!(data["item_id"], added[i]["id"]);
                streamed[i].push_str(data["delta"].as_str().unwrap());
            }
            "response.reasoning_summary_part.added" => {}
            "response.output_item.done" => {
                let i = data["output_index"].as_u64().unwrap() as usize;
                let item = &data["item"];
                assert_eq!(item["id"], added[i]["id"]);
                let whole = match item["type"].as_str().unwrap() {
                    "message" => item["content"][0]["text"].clone(),
                    "reasoning" => item["summary"][0]["text"].clone(),
                    "function_call" => item["arguments"].clone(),
                    "custom_tool_call" => item["input"].clone(),
                    other => panic!("unexpected item {other}"),
                };
                assert_eq!(whole, streamed[i].as_str(), "deltas add up");
                done.push(item.clone());
            }
            "response.completed" => completed = data["response"].clone(),
            other => panic!("unexpected event {other}"),
        }
    }
    assert_eq!(completed["output"], Value::Array(done.clone()));
    (done, completed)
}

#[tokio::test]
async fn shell_then_done_streams_like_the_responses_api() {
    let mock = MockOpenAi::start(Script::shell_then_done("touch created.txt")).await.unwrap();
    assert!(mock.base_url().starts_with("http://127.0.0.1:") && mock.base_url().ends_with("/v1"));
    let first = first_turn(true);
    let resp = post(&mock, &first).await;
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let names = resp.names();
    assert_eq!(names.first().map(String::as_str), Some("response.created"));
    assert_eq!(names.last().map(String::as_str), Some("response.completed"));
    assert!(names.iter().filter(|n| *n == "response.output_text.delta").count() >= 2);
    let (items, completed) = assemble(&resp.events());
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["role"], "assistant");
    assert_eq!(items[0]["content"][0]["text"], "I'll run the command.");
    let call = &items[1];
    assert_eq!(
        (call["type"].as_str(), call["name"].as_str()),
        (Some("function_call"), Some("exec_command"))
    );
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"cmd": "touch created.txt"}));
    let call_id = call["call_id"].as_str().unwrap();
    assert!(call_id.starts_with("call_") && call_id.len() == 17, "{call_id}");
    assert!(completed["id"].as_str().unwrap().starts_with("resp_mock_"));
    assert_eq!(completed["model"], "gpt-5.5");
    let usage = &completed["usage"];
    assert_eq!(
        (usage["input_tokens"].as_u64(), usage["total_tokens"].as_u64()),
        (Some(123), Some(168))
    );
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 23);

    let resp = post(&mock, &next_turn(&first, &items[1..])).await;
    let (items, _) = assemble(&resp.events());
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["content"][0]["text"], "done");
    // The same history again (a retry or a resume) gets the same answer: the mock is stateless.
    let resp = post(&mock, &first).await;
    assert_eq!(assemble(&resp.events()).0[1]["name"], "exec_command");
}

#[tokio::test]
async fn patch_then_done_sends_a_freeform_apply_patch() {
    let mock = MockOpenAi::start(Script::patch_then_done("new.txt", "hello\n")).await.unwrap();
    let first = first_turn(true);
    let (items, _) = assemble(&post(&mock, &first).await.events());
    let call = &items[1];
    assert_eq!(
        (call["type"].as_str(), call["name"].as_str()),
        (Some("custom_tool_call"), Some("apply_patch"))
    );
    assert_eq!(call["input"], "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch");
    let (items, _) = assemble(&post(&mock, &next_turn(&first, &items[1..])).await.events());
    assert_eq!(items[0]["content"][0]["text"], "done");
}

#[tokio::test]
async fn both_tools_in_one_response_need_both_outputs() {
    let script = Script::shell_and_patch_then_done("echo hi", "b.txt", "b\n");
    let mock = MockOpenAi::start(script).await.unwrap();
    let first = first_turn(true);
    let (items, _) = assemble(&post(&mock, &first).await.events());
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["function_call", "custom_tool_call"]);
    assert_ne!(items[0]["call_id"], items[1]["call_id"]);
    // Only one output back: the same calls again, never skipping ahead.
    let (again, _) = assemble(&post(&mock, &next_turn(&first, &items[..1])).await.events());
    assert_eq!(again.len(), 2);
    let (last, _) = assemble(&post(&mock, &next_turn(&first, &items)).await.events());
    assert_eq!(last[0]["content"][0]["text"], "done");
}

#[tokio::test]
async fn reasoning_streams_a_summary_and_escalation_and_mcp_calls_have_their_shape() {
    let mock = MockOpenAi::start(Script::reasoning("thinking hard", "answer")).await.unwrap();
    let resp = post(&mock, &first_turn(true)).await;
    assert!(resp.names().contains(&"response.reasoning_summary_part.added".to_owned()));
    let (items, _) = assemble(&resp.events());
    assert_eq!(items[0]["type"], "reasoning");
    assert_eq!(items[0]["summary"], json!([{"type": "summary_text", "text": "thinking hard"}]));
    assert_eq!(items[1]["content"][0]["text"], "answer");

    let mcp = ToolCall::Function {
        name: "echo".into(),
        namespace: Some("mcp__echo".into()),
        arguments: json!({"text": "ping"}),
    };
    let calls = vec![ToolCall::exec_command_escalated("touch /x", "outside"), mcp];
    mock.set_script(Script::new(vec![Reply::ToolCalls { text: None, calls }]));
    let (items, _) = assemble(&post(&mock, &first_turn(true)).await.events());
    let args: Value = serde_json::from_str(items[0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["sandbox_permissions"], "require_escalated");
    assert_eq!(args["justification"], "outside");
    assert_eq!(
        (items[1]["namespace"].as_str(), items[1]["name"].as_str()),
        (Some("mcp__echo"), Some("echo"))
    );
}

#[tokio::test]
async fn non_streaming_requests_get_the_response_object() {
    let mock = MockOpenAi::start(Script::patch_then_done("a.txt", "x")).await.unwrap();
    let resp = post(&mock, &first_turn(false)).await;
    assert_eq!(resp.status, 200);
    assert!(resp.header("content-type").unwrap().starts_with("application/json"));
    let body = resp.json();
    assert_eq!(
        (body["object"].as_str(), body["status"].as_str()),
        (Some("response"), Some("completed"))
    );
    assert_eq!(body["output"][1]["input"], add_file_patch("a.txt", "x"));
    assert_eq!(body["usage"]["output_tokens"], 45);
}

#[tokio::test]
async fn http500_twice_then_success_and_set_script_resets_the_count() {
    let script = Script::text("ok").with_fault(FaultKind::Http500, Some(2));
    let mock = MockOpenAi::start(script.clone()).await.unwrap();
    for _ in 0..2 {
        let resp = post(&mock, &first_turn(true)).await;
        assert_eq!(resp.status, 500);
        assert_eq!(resp.json()["error"]["type"], "server_error");
    }
    assert_eq!(post(&mock, &first_turn(true)).await.status, 200);
    // /v1/models is not subject to faults; set_script resets the counter.
    mock.set_script(script);
    let models = request(&mock, "GET", "/v1/models", None).await;
    assert_eq!(models.status, 200);
    assert_eq!(models.json()["data"][0]["id"], "gpt-5.5");
    assert_eq!(post(&mock, &first_turn(true)).await.status, 500);
}

#[tokio::test]
async fn http429_with_retry_after_and_http400() {
    let mock =
        MockOpenAi::start(Script::text("ok").with_fault(FaultKind::Http429, None)).await.unwrap();
    for _ in 0..2 {
        let resp = post(&mock, &first_turn(true)).await;
        assert_eq!(resp.status, 429);
        assert_eq!(resp.header("retry-after"), Some("1"));
        assert_eq!(resp.json()["error"]["code"], "rate_limit_exceeded");
    }
    mock.set_script(Script::text("ok").with_fault(FaultKind::Http400, Some(1)));
    let resp = post(&mock, &first_turn(true)).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["message"], "Bad request (mock)");
    assert_eq!(post(&mock, &first_turn(true)).await.status, 200);
}

#[tokio::test]
async fn drop_mid_stream_breaks_the_connection() {
    let mock = MockOpenAi::start(Script::text("ok").with_fault(FaultKind::DropMidStream, Some(1)))
        .await
        .unwrap();
    let resp = post(&mock, &first_turn(true)).await;
    assert_eq!(resp.status, 200);
    assert!(!resp.complete, "no chunked terminator");
    let text = String::from_utf8_lossy(&resp.body);
    assert!(
        text.contains("event: response.created") && text.contains("response.output_text.delta")
    );
    assert!(!text.contains("response.completed"));
    assert!(post(&mock, &first_turn(true)).await.complete);

    mock.set_script(Script::text("ok").with_fault(FaultKind::DropMidStream, None));
    let resp = post(&mock, &first_turn(false)).await;
    assert!(!resp.complete);
    assert!(serde_json::from_slice::<Value>(&resp.body).is_err());
}

#[tokio::test]
async fn response_failed_ends_the_stream_without_completion() {
    let mock = MockOpenAi::start(Script::text("ok").with_fault(FaultKind::ResponseFailed, Some(1)))
        .await
        .unwrap();
    let resp = post(&mock, &first_turn(true)).await;
    assert!(resp.complete);
    assert_eq!(resp.names(), ["response.created", "response.failed"]);
    let failed = &resp.events()[1].1["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["message"], "mock: the model failed to respond");
}

#[tokio::test]
async fn stall_sends_a_few_frames_then_nothing_until_dropped() {
    let mock = MockOpenAi::start(Script::text("ok").with_fault(FaultKind::StallMidStream, None))
        .await
        .unwrap();
    let mut stream = send(&mock, "POST", "/v1/responses", Some(&first_turn(true))).await;
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let read = async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
    };
    let stalled = tokio::time::timeout(Duration::from_millis(500), read).await;
    assert!(stalled.is_err(), "the stream stays open");
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("200") && text.contains("response.output_text.delta"));
    assert!(!text.contains("response.completed"));
    drop(mock);
    let rest = tokio::time::timeout(Duration::from_secs(5), read_all(&mut stream)).await.unwrap();
    assert!(!String::from_utf8_lossy(&rest).contains("response.completed"));
}

#[tokio::test]
async fn hang_until_dropped() {
    let mock =
        MockOpenAi::start(Script::text("ok").with_fault(FaultKind::Hang, None)).await.unwrap();
    let mut stream = send(&mock, "POST", "/v1/responses", Some(&first_turn(true))).await;
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
    let mock = MockOpenAi::start(Script::text("hi")).await.unwrap();
    let resp = request(&mock, "GET", "/nope?x=1", None).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json()["error"]["type"], "invalid_request_error");
    assert_eq!(request(&mock, "GET", "/v1/responses", None).await.status, 404);
    // The legacy Completions API is not served (Chat Completions is: `mock_openai::chat`).
    assert_eq!(request(&mock, "POST", "/v1/completions", Some(&json!({}))).await.status, 404);
    let body = first_turn(true);
    post(&mock, &body).await;
    let reqs = mock.requests();
    let seen: Vec<(&str, &str)> =
        reqs.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("GET", "/nope?x=1"),
            ("GET", "/v1/responses"),
            ("POST", "/v1/completions"),
            ("POST", "/v1/responses"),
        ]
    );
    assert_eq!(reqs[0].body, Value::Null);
    assert_eq!(reqs[3].body, body);
    assert!(reqs[3].headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-mock"));
}

#[tokio::test]
async fn chunk_delay_spaces_frames_and_the_config_points_at_the_mock() {
    let script = Script::text("abc").with_chunk_delay(Duration::from_millis(20));
    let mock = MockOpenAi::start(script).await.unwrap();
    let started = std::time::Instant::now();
    let resp = post(&mock, &first_turn(true)).await;
    // created, item added, 3 deltas, item done, completed.
    assert_eq!(resp.events().len(), 7);
    assert!(started.elapsed() >= Duration::from_millis(6 * 20));
    let config = codex_config_toml(&mock.base_url());
    assert!(config.contains(&format!("base_url = \"{}\"", mock.base_url())));
    assert!(
        config.contains("model_provider = \"mock\"")
            && config.contains("env_key = \"MOCK_API_KEY\"")
    );
}
