//! Chat Completions (`POST /v1/chat/completions`): the scripted reply streamed as
//! `chat.completion.chunk`s, and the agents' side requests (titles, memory extraction,
//! suggestions, classifiers) answered apart so they never consume a scripted step.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde_json::{Value, json};

use super::script::{FaultKind, Reply, Script, ToolCall};
use super::server::{MODEL, REQUEST_ID, error};
use super::sse::{fresh_id, split};
use crate::mock_http::{CONTENT_TYPE_SSE, End, Shared, add_request_id, streamed};

/// What a side request's system prompt says, as the agents word it: OpenCode's title
/// generator, Qwen Code's memory extraction, prompt suggestion and auto-mode classifier.
const SIDE_MARKERS: &[&str] = &[
    "title generator",
    "memory extraction",
    "prompt suggestion",
    "suggest the next",
    "security classifier",
];

/// How a side request's last user message starts when its system prompt is the turn's own
/// (Qwen Code's prompt suggestion: "[SUGGESTION MODE: Suggest what the user might naturally
/// type next.]", with every tool offered).
const SIDE_PROMPT_MARKERS: &[&str] = &["[SUGGESTION MODE"];

/// The answer to a side request.
const SIDE_ANSWER: &str = "Mock side answer";

/// Whether a request is an agent's side request (not the conversation's turn): it offers no
/// tools, its system prompt is one of [`SIDE_MARKERS`], or its last user message starts with
/// one of [`SIDE_PROMPT_MARKERS`]; returns what gave it away.
pub fn side_request(body: &Value) -> Option<&'static str> {
    let no_tools = body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if no_tools {
        return Some("no tools");
    }
    let messages = body.get("messages").and_then(Value::as_array)?;
    let system: String = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| content_text(&m["content"]).to_lowercase())
        .collect();
    let last_user =
        messages.iter().rev().find(|m| m["role"] == "user").map(|m| content_text(&m["content"]));
    let prompted = last_user.and_then(|text| {
        SIDE_PROMPT_MARKERS.iter().copied().find(|marker| text.trim_start().starts_with(marker))
    });
    SIDE_MARKERS.iter().copied().find(|marker| system.contains(marker)).or(prompted)
}

/// A message's content as text (a string, or the text parts of an array).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

/// The `tool` messages (tool results) of a request, in order, as text.
pub fn tool_messages(body: &Value) -> Vec<String> {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    messages.iter().filter(|m| m["role"] == "tool").map(|m| content_text(&m["content"])).collect()
}

/// The conversation as Responses `input` items, so the script picks replies the same way:
/// user messages, and tool results as `function_call_output`s.
fn as_input(body: &Value) -> Vec<Value> {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    messages
        .iter()
        .map(|m| match m["role"].as_str() {
            Some("tool") => json!({
                "type": "function_call_output",
                "call_id": m["tool_call_id"],
                "output": content_text(&m["content"]),
            }),
            role => {
                json!({"type": "message", "role": role, "content": content_text(&m["content"])})
            }
        })
        .collect()
}

/// Answers one Chat Completions request.
pub(crate) async fn completions(shared: &Shared<Script>, body: &Value) -> HttpResponse {
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = body.get("model").and_then(Value::as_str).unwrap_or(MODEL).to_owned();
    if side_request(body).is_some() {
        let chunks = Chunks::new(&Reply::Text(SIDE_ANSWER.to_owned()), &model);
        return respond(&chunks, stream, shared.peek().chunk_delay);
    }
    let (script, fault) = shared.next();
    let chunks = Chunks::new(&script.reply_for(&as_input(body)), &model);
    let delay = script.chunk_delay;
    match fault {
        Some(FaultKind::Http500) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "mock internal error")
        }
        Some(FaultKind::Http429) => {
            let mut response =
                error(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded", "mock rate limit");
            response
                .headers_mut()
                .insert(HeaderName::from_static("retry-after"), HeaderValue::from_static("1"));
            response
        }
        Some(FaultKind::Http400) => {
            error(StatusCode::BAD_REQUEST, "invalid_request_error", "Bad request (mock)")
        }
        Some(FaultKind::Hang) => {
            shared.until_shutdown().await;
            error(StatusCode::SERVICE_UNAVAILABLE, "server_error", "mock: shutting down")
        }
        // Chat Completions has no failed event: the stream carries an error object.
        Some(FaultKind::ResponseFailed) => {
            let frame =
                data(&json!({"error": {"message": "mock stream error", "type": "server_error"}}));
            streamed(CONTENT_TYPE_SSE, vec![frame], delay, End::Finish, REQUEST_ID)
        }
        Some(FaultKind::DropMidStream) => {
            streamed(CONTENT_TYPE_SSE, chunks.truncated(), delay, End::Break, REQUEST_ID)
        }
        Some(FaultKind::StallMidStream) => {
            let end = End::Stall(shared.shutdown());
            streamed(CONTENT_TYPE_SSE, chunks.truncated(), delay, end, REQUEST_ID)
        }
        None => respond(&chunks, stream, delay),
    }
}

fn respond(chunks: &Chunks, stream: bool, delay: Duration) -> HttpResponse {
    if stream {
        return streamed(CONTENT_TYPE_SSE, chunks.frames(), delay, End::Finish, REQUEST_ID);
    }
    let mut http = axum::Json(chunks.completion()).into_response();
    add_request_id(&mut http, REQUEST_ID);
    http
}

/// One SSE `data:` frame (Chat Completions names no events).
fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// A reply as Chat Completions deltas.
struct Chunks {
    id: String,
    model: String,
    reasoning: Option<String>,
    text: Option<String>,
    /// `(call id, name, arguments as JSON text)`.
    calls: Vec<(String, String, String)>,
}

impl Chunks {
    fn new(reply: &Reply, model: &str) -> Chunks {
        let mut chunks = Chunks {
            id: fresh_id("chatcmpl-", 24),
            model: model.to_owned(),
            reasoning: None,
            text: None,
            calls: Vec::new(),
        };
        match reply {
            Reply::Text(text) => chunks.text = Some(text.clone()),
            Reply::ReasoningThenText { reasoning, text } => {
                chunks.reasoning = Some(reasoning.clone());
                chunks.text = Some(text.clone());
            }
            Reply::ToolCalls { text, calls } => {
                chunks.text = text.clone();
                chunks.calls = calls.iter().map(call).collect();
            }
            // `reply_for` makes computed replies; one made twice is not made again.
            Reply::Computed(_) => chunks.text = Some("(computed twice)".to_owned()),
        }
        chunks
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        data(&json!({
            "id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    }

    fn finish_reason(&self) -> &'static str {
        if self.calls.is_empty() { "stop" } else { "tool_calls" }
    }

    /// The deltas before the finish: role, reasoning, text in pieces, each call.
    fn deltas(&self) -> Vec<String> {
        let mut out = vec![self.chunk(json!({"role": "assistant", "content": ""}), None)];
        for piece in self.reasoning.iter().flat_map(|r| split(r, 3)) {
            out.push(self.chunk(json!({"reasoning_content": piece}), None));
        }
        for piece in self.text.iter().flat_map(|t| split(t, 3)) {
            out.push(self.chunk(json!({"content": piece}), None));
        }
        for (index, (id, name, arguments)) in self.calls.iter().enumerate() {
            let call = json!({"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments}});
            out.push(self.chunk(json!({"tool_calls": [call]}), None));
        }
        out
    }

    /// The whole stream: deltas, the finish, the usage chunk, `[DONE]`.
    fn frames(&self) -> Vec<String> {
        let mut out = self.deltas();
        out.push(self.chunk(json!({}), Some(self.finish_reason())));
        out.push(data(&json!({
            "id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
            "choices": [], "usage": usage(),
        })));
        out.push("data: [DONE]\n\n".to_owned());
        out
    }

    /// The first half of the deltas, no finish.
    fn truncated(&self) -> Vec<String> {
        let deltas = self.deltas();
        let keep = deltas.len().div_ceil(2);
        deltas.into_iter().take(keep).collect()
    }

    /// The non-streamed `chat.completion`.
    fn completion(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": self.text});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        json!({
            "id": self.id, "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason()}],
            "usage": usage(),
        })
    }
}

fn call(call: &ToolCall) -> (String, String, String) {
    let id = fresh_id("call_", 24);
    match call {
        ToolCall::Function { name, namespace, arguments } => {
            let name = match namespace {
                Some(ns) => format!("{ns}__{name}"),
                None => name.clone(),
            };
            (id, name, arguments.to_string())
        }
        ToolCall::Custom { name, input } => (id, name.clone(), json!({"input": input}).to_string()),
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_requests_are_told_apart_from_turns() {
        let tools = json!([{"type": "function", "function": {"name": "write"}}]);
        let title =
            json!({"messages": [{"role": "system", "content": "You are a title generator"}]});
        assert_eq!(side_request(&title), Some("no tools"));
        let memory = json!({"tools": tools, "messages": [
            {"role": "system", "content": [{"type": "text", "text": "You are the managed Memory Extraction subagent"}]},
        ]});
        assert_eq!(side_request(&memory), Some("memory extraction"));
        let suggestion = json!({"tools": tools, "messages": [
            {"role": "system", "content": "You are Qwen Code, a CLI agent"},
            {"role": "user", "content": "say hi"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [{"type": "text", "text": "[SUGGESTION MODE: Suggest what the user might naturally type next.]"}]},
        ]});
        assert_eq!(side_request(&suggestion), Some("[SUGGESTION MODE"));
        let turn = json!({"tools": tools, "messages": [
            {"role": "system", "content": "You are an interactive CLI agent"},
            {"role": "user", "content": "write a.txt"},
        ]});
        assert_eq!(side_request(&turn), None);
    }

    #[test]
    fn tool_results_pick_the_next_scripted_reply() {
        let script = Script::new(vec![
            Reply::ToolCalls { text: None, calls: vec![ToolCall::function("write", json!({}))] },
            Reply::Text("done".to_owned()),
        ]);
        let first = json!({"messages": [{"role": "user", "content": "go"}]});
        assert!(matches!(script.reply_for(&as_input(&first)), Reply::ToolCalls { .. }));
        let second = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]});
        assert!(matches!(script.reply_for(&as_input(&second)), Reply::Text(t) if t == "done"));
        assert_eq!(tool_messages(&second), ["ok"]);
        // A new prompt starts the script again.
        let third = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "user", "content": "again"},
        ]});
        assert!(matches!(script.reply_for(&as_input(&third)), Reply::ToolCalls { .. }));
    }

    #[test]
    fn a_stream_ends_with_finish_usage_and_done() {
        let reply = Reply::ToolCalls {
            text: Some("I'll write it.".to_owned()),
            calls: vec![ToolCall::function("write", json!({"filePath": "a.txt"}))],
        };
        let frames = Chunks::new(&reply, "mock-model").frames();
        let wire = frames.concat();
        assert!(wire.contains(r#""finish_reason":"tool_calls""#), "{wire}");
        assert!(wire.contains(r#"\"filePath\":\"a.txt\""#), "{wire}");
        assert_eq!(frames.last().unwrap(), "data: [DONE]\n\n");
        assert!(frames.iter().all(|f| f.starts_with("data: ")));
    }
}
