//! The ACP decoder: JSON-RPC lines from the agent in, normalized event kinds out.
//!
//! Agents differ in what they send before a permission request (Gemini CLI sends no `tool_call`
//! in its ask modes, and nothing at all after a rejection), so the decoder opens a tool call's
//! card from whichever comes first — `tool_call`, `tool_call_update` or the request's
//! `toolCall` — and closes the cards still open when the prompt's response ends the turn.

use std::collections::HashMap;

use nucleic_protocol::{
    ApprovalRequested, ErrorCode, ErrorEvent, EventKind, RawJson, SessionStarted, TextBlock,
    ToolCall, ToolResult, TurnCompleted, Usage,
};
use serde_json::{Value, json};

use super::profile::AcpProfile;
use super::wire::{Envelope, FileParams, PermissionParams, ToolCallFields, Update};
use super::{AcpControl, DecodedLine, PermissionOption, RequestId, RpcError};

/// `session/update` kinds that are known but have no normalized meaning (kept raw, not counted).
const KNOWN_RAW_UPDATES: &[&str] = &[
    "user_message_chunk",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
];

/// What a closed-without-result tool call reports.
const NO_RESULT: &str = "the agent reported no result for this call (rejected or cancelled)";

/// Stateful decoder for one ACP agent process.
#[derive(Debug)]
pub struct AcpDecoder {
    profile: &'static AcpProfile,
    unknown_lines: u64,
    agent_version: Option<String>,
    /// Turns ended so far (message ids are per turn).
    turns: u64,
    /// Tool calls whose card is open (started, no result yet), in order.
    open_calls: Vec<String>,
    /// Tool calls that had a card in this process (a result needs no second start).
    seen_calls: HashMap<String, bool>,
    /// Usage this turn's message chunks carried (Qwen: one empty chunk per model reply, its
    /// `_meta.usage`), summed; the turn's when its result has none.
    chunk_usage: Option<Usage>,
}

impl AcpDecoder {
    pub fn new(profile: &'static AcpProfile) -> AcpDecoder {
        AcpDecoder {
            profile,
            unknown_lines: 0,
            agent_version: None,
            turns: 0,
            open_calls: Vec::new(),
            seen_calls: HashMap::new(),
            chunk_usage: None,
        }
    }

    /// Lines that were not JSON-RPC, or of a method or update kind this decoder does not know.
    pub fn unknown_lines(&self) -> u64 {
        self.unknown_lines
    }

    /// Decodes one line (without its newline).
    pub fn decode(&mut self, line: &str) -> DecodedLine {
        let envelope = match serde_json::from_str::<Envelope>(line) {
            Ok(e) => e,
            Err(e) => return self.unknown(line, None, Some(e.to_string())),
        };
        let Envelope { id, method, params, result, error } = envelope;
        match (method, id) {
            (Some(method), Some(id)) => self.request(line, &method, id, params),
            (Some(method), None) => self.notification(line, &method, params),
            (None, Some(id)) => self.response(line, id, result, error),
            (None, None) => self.unknown(line, None, None),
        }
    }

    fn unknown(&mut self, line: &str, native: Option<&str>, error: Option<String>) -> DecodedLine {
        self.unknown_lines += 1;
        let not_json = serde_json::from_str::<serde::de::IgnoredAny>(line).is_err();
        let native = native.unwrap_or(if not_json { "invalid" } else { "unknown" });
        DecodedLine {
            native_type: native.to_owned(),
            events: crate::codex::unknown_events(line, not_json, error),
            control: None,
        }
    }

    fn raw(line: &str, native: &str, control: Option<AcpControl>) -> DecodedLine {
        let events = vec![EventKind::raw(RawJson::from_any_text(line))];
        DecodedLine { native_type: native.to_owned(), events, control }
    }

    fn request(
        &mut self,
        line: &str,
        method: &str,
        id: RequestId,
        params: Option<Value>,
    ) -> DecodedLine {
        let params = params.unwrap_or(Value::Null);
        match method {
            "session/request_permission" => self.permission(method, id, params),
            "fs/read_text_file" | "fs/write_text_file" => {
                let p: FileParams = serde_json::from_value(params).unwrap_or_default();
                let control = match p.content {
                    Some(content) if method == "fs/write_text_file" => {
                        AcpControl::WriteFile { id, path: p.path, content }
                    }
                    _ if method == "fs/read_text_file" => {
                        AcpControl::ReadFile { id, path: p.path, line: p.line, limit: p.limit }
                    }
                    // A write without content: refused as bad params by the adapter.
                    _ => AcpControl::WriteFile { id, path: p.path, content: String::new() },
                };
                Self::raw(line, method, Some(control))
            }
            _ => {
                self.unknown_lines += 1;
                let control = AcpControl::Unsupported { id, method: method.to_owned() };
                Self::raw(line, method, Some(control))
            }
        }
    }

    fn permission(&mut self, method: &str, id: RequestId, params: Value) -> DecodedLine {
        // A request the agent waits on must reach the adapter even if its params are odd.
        let p: PermissionParams = serde_json::from_value(params).unwrap_or_default();
        let call_value = p.tool_call.unwrap_or(Value::Null);
        let call: ToolCallFields = serde_json::from_value(call_value.clone()).unwrap_or_default();
        let call_id = call.tool_call_id.clone().unwrap_or_else(|| format!("permission-{id}"));
        let mut events = self.open_card(&call_id, &call, &call_value);
        let (tool_name, input) = tool_of(&call, &call_value);
        events.push(EventKind::ApprovalRequested(ApprovalRequested {
            request_id: id.to_string(),
            tool_call_id: Some(call_id),
            tool_name,
            input,
            description: call.title.clone(),
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }));
        let options = p
            .options
            .into_iter()
            .map(|o| PermissionOption { option_id: o.option_id, kind: o.kind })
            .collect();
        let control = Some(AcpControl::PermissionAsked { id, options });
        DecodedLine { native_type: method.to_owned(), events, control }
    }

    /// `ToolCallStarted` for a call not seen before in this process.
    fn open_card(&mut self, call_id: &str, call: &ToolCallFields, value: &Value) -> Vec<EventKind> {
        if self.seen_calls.contains_key(call_id) {
            return Vec::new();
        }
        self.seen_calls.insert(call_id.to_owned(), false);
        self.open_calls.push(call_id.to_owned());
        let (name, input) = tool_of(call, value);
        vec![EventKind::ToolCallStarted(ToolCall {
            tool_call_id: call_id.to_owned(),
            name,
            input,
            parent_tool_call_id: None,
        })]
    }

    fn close_card(&mut self, call_id: &str, content: Value, is_error: bool) -> EventKind {
        self.open_calls.retain(|c| c != call_id);
        self.seen_calls.insert(call_id.to_owned(), true);
        EventKind::ToolResult(ToolResult { tool_call_id: call_id.to_owned(), content, is_error })
    }

    fn notification(&mut self, line: &str, method: &str, params: Option<Value>) -> DecodedLine {
        if method != "session/update" {
            return self.unknown(line, Some(method), None);
        }
        let update_value = params.and_then(|mut p| p.get_mut("update").map(Value::take));
        let Some(update_value) = update_value else {
            return self.unknown(line, Some(method), None);
        };
        let Ok(update) = serde_json::from_value::<Update>(update_value.clone()) else {
            return self.unknown(line, Some(method), None);
        };
        let native = format!("session/update:{}", update.session_update);
        let events = match update.session_update.as_str() {
            kind @ ("agent_message_chunk" | "agent_thought_chunk") => {
                if let Some(u) = update_value.pointer("/_meta/usage") {
                    let sum = self.chunk_usage.get_or_insert_with(Usage::default);
                    let add = acp_usage(u);
                    sum.input_tokens += add.input_tokens;
                    sum.output_tokens += add.output_tokens;
                    sum.cached_input_tokens += add.cached_input_tokens;
                }
                let text = update.content.as_ref().and_then(text_of);
                let filtered = text.is_some_and(|t| {
                    self.profile.hidden_text_prefixes.iter().any(|p| t.starts_with(p))
                });
                match text {
                    // Qwen closes each message with an empty chunk carrying usage in `_meta`.
                    Some(text) if !filtered && !text.is_empty() => {
                        let thought = kind == "agent_thought_chunk";
                        let block = TextBlock {
                            is_partial: true,
                            message_id: self.message_id(thought),
                            text: text.to_owned(),
                        };
                        vec![if thought {
                            EventKind::Thinking(block)
                        } else {
                            EventKind::AssistantText(block)
                        }]
                    }
                    _ => Vec::new(),
                }
            }
            "tool_call" | "tool_call_update" => self.tool_update(&update, &update_value),
            known if KNOWN_RAW_UPDATES.contains(&known) => Vec::new(),
            _ => return self.unknown(line, Some(&native), None),
        };
        if events.is_empty() {
            return Self::raw(line, &native, None);
        }
        DecodedLine { native_type: native, events, control: None }
    }

    fn tool_update(&mut self, update: &Update, value: &Value) -> Vec<EventKind> {
        let call = &update.call;
        let Some(call_id) = call.tool_call_id.clone() else { return Vec::new() };
        let mut events = self.open_card(&call_id, call, value);
        let done = matches!(call.status.as_deref(), Some("completed" | "failed"));
        if done && self.seen_calls.get(&call_id) == Some(&false) {
            let content = match (value.get("content"), &call.raw_output) {
                (Some(c), _) if c.as_array().is_some_and(|a| !a.is_empty()) => c.clone(),
                (_, Some(out)) => out.clone(),
                (Some(c), None) => c.clone(),
                (None, None) => Value::Array(Vec::new()),
            };
            let failed = call.status.as_deref() == Some("failed");
            events.push(self.close_card(&call_id, content, failed));
        }
        events
    }

    fn message_id(&self, thought: bool) -> String {
        let what = if thought { "thought" } else { "message" };
        format!("acp-turn{}-{what}", self.turns + 1)
    }

    fn response(
        &mut self,
        line: &str,
        id: RequestId,
        result: Option<Value>,
        error: Option<super::wire::RpcErrorBody>,
    ) -> DecodedLine {
        if let Some(err) = error {
            let detail = err
                .data
                .as_ref()
                .and_then(|d| d.get("details").and_then(Value::as_str))
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let message = format!("{}{detail}", err.message);
            let event = EventKind::Error(ErrorEvent {
                code: ErrorCode::Protocol,
                message: format!("the agent refused request {id}: {message} (code {})", err.code),
                http_status: None,
            });
            let control =
                AcpControl::Response { id, outcome: Err(RpcError { code: err.code, message }) };
            return DecodedLine {
                native_type: "response/error".into(),
                events: vec![event],
                control: Some(control),
            };
        }
        let result = result.unwrap_or(Value::Null);
        let mut events = Vec::new();
        if let Some(stop) = result.get("stopReason").and_then(Value::as_str) {
            // The turn is over: cards the agent left open are closed (Gemini says nothing after
            // a rejected permission).
            for call_id in std::mem::take(&mut self.open_calls) {
                events.push(self.close_card(&call_id, json!(NO_RESULT), true));
            }
            events.push(EventKind::TurnCompleted(TurnCompleted {
                stop_reason: Some(stop.to_owned()),
                usage: usage_of(&result, self.chunk_usage.take()),
                is_error: false,
                terminal_reason: Some(stop.to_owned()),
                result: None,
                duration_ms: None,
            }));
            self.turns += 1;
        } else if let Some(session) = result.get("sessionId").and_then(Value::as_str) {
            let model = result.pointer("/models/currentModelId").and_then(Value::as_str);
            events.push(EventKind::SessionStarted(SessionStarted {
                backend_session_id: session.to_owned(),
                cwd: String::new(),
                model: model.unwrap_or_default().to_owned(),
                tool_names: Vec::new(),
                permission_mode: result
                    .pointer("/modes/currentModeId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                agent_version: self.agent_version.clone(),
            }));
        } else if let Some(version) = result.pointer("/agentInfo/version").and_then(Value::as_str) {
            self.agent_version = Some(version.to_owned());
        }
        if events.is_empty() {
            events.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        let control = Some(AcpControl::Response { id, outcome: Ok(result) });
        DecodedLine { native_type: "response".into(), events, control }
    }
}

/// The text of a `{type: "text", text}` content block.
fn text_of(content: &Value) -> Option<&str> {
    (content.get("type").and_then(Value::as_str) == Some("text"))
        .then(|| content.get("text").and_then(Value::as_str))
        .flatten()
}

/// ACP's usage object (`inputTokens`, `outputTokens`, `cachedReadTokens`).
fn acp_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n(u.get("inputTokens")),
        output_tokens: n(u.get("outputTokens")),
        cached_input_tokens: n(u.get("cachedReadTokens")),
        cost_usd: None,
    }
}

/// Usage from a prompt result: ACP's `usage` (OpenCode, Copilot), Gemini's `_meta.quota`, else
/// what the turn's chunks carried (Qwen).
fn usage_of(result: &Value, from_chunks: Option<Usage>) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    if let Some(u) = result.get("usage") {
        return acp_usage(u);
    }
    let t = result.pointer("/_meta/quota/token_count");
    if let (None, Some(usage)) = (t, from_chunks) {
        return usage;
    }
    Usage {
        input_tokens: n(t.and_then(|t| t.get("input_tokens"))),
        output_tokens: n(t.and_then(|t| t.get("output_tokens"))),
        cached_input_tokens: 0,
        cost_usd: None,
    }
}

/// The tool call as the host's policy reads it (Claude Code's tool names): an edit is a
/// `Write` (a new file) or an `Edit` of its path, a command `Bash`, a read `Read`; other kinds
/// keep the ACP kind as name with the title, input and locations.
fn tool_of(call: &ToolCallFields, value: &Value) -> (String, Value) {
    let diff = value
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("diff")));
    let path = call
        .locations
        .as_ref()
        .and_then(|l| l.first())
        .map(|l| l.path.clone())
        .or_else(|| diff.and_then(|d| d.get("path")).and_then(Value::as_str).map(str::to_owned))
        .or_else(|| {
            let raw = call.raw_input.as_ref()?;
            ["file_path", "path", "filepath"]
                .iter()
                .find_map(|k| raw.get(*k)?.as_str().map(str::to_owned))
        });
    let text = |key: &str| diff.and_then(|d| d.get(key)).and_then(Value::as_str);
    match (call.kind.as_deref(), path) {
        (Some("edit"), Some(path)) => match text("oldText") {
            Some(old) if !old.is_empty() => (
                "Edit".into(),
                json!({"file_path": path, "old_string": old, "new_string": text("newText").unwrap_or_default()}),
            ),
            _ => (
                "Write".into(),
                json!({"file_path": path, "content": text("newText").unwrap_or_default()}),
            ),
        },
        (Some("execute"), _) => {
            let command = call
                .raw_input
                .as_ref()
                .and_then(|r| r.get("command"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| call.title.clone())
                .unwrap_or_default();
            ("Bash".into(), json!({"command": command}))
        }
        (Some("read"), Some(path)) => ("Read".into(), json!({"file_path": path})),
        (kind, _) => (
            kind.unwrap_or("other").to_owned(),
            json!({
                "title": call.title,
                "rawInput": call.raw_input,
                "locations": call.locations.as_ref().map(|l| l.iter().map(|l| l.path.clone()).collect::<Vec<_>>()),
            }),
        ),
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
