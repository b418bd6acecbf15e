//! The `codex app-server` decoder: JSON-RPC lines from the CLI in, normalized event kinds out.
//!
//! Responses to our requests, notifications and server requests (approvals) all arrive on
//! stdout. The decoder remembers what later lines need: each file change's diff from its
//! `item/started` (the approval request carries none), streamed command output (codex leaves
//! `aggregatedOutput` null for unified-exec commands) and the thread's token total (turn usage
//! is the difference across the turn).

use std::collections::HashMap;

use nucleic_protocol::{
    ApprovalRequested, ErrorCode, ErrorEvent, EventKind, RawJson, SessionStarted, TextBlock,
    TurnCompleted, Usage,
};
use serde_json::Value;
use serde_json::value::RawValue;

use super::item::{Item, PATCH_TOOL, SHELL_TOOL, ToolKind, command_input, patch_input};
use super::retry::provider_error;
use super::wire::{Breakdown, Envelope, Params, RpcErrorBody, ThreadInfo, ThreadResult};
use super::{ApprovalKind, ControlIn, DecodedLine, RequestId, RpcError, unknown_events};

/// Notifications with a normalized meaning (their `params` are parsed).
const MAPPED: &[&str] = &[
    "thread/started",
    "turn/started",
    "turn/completed",
    "item/started",
    "item/completed",
    "item/agentMessage/delta",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/textDelta",
    "item/commandExecution/outputDelta",
    "thread/tokenUsage/updated",
    "serverRequest/resolved",
    "error",
    "warning",
];

/// Notifications that are known but have no normalized meaning: kept raw, not counted unknown.
const KNOWN_RAW: &[&str] = &[
    "thread/status/changed",
    "thread/name/updated",
    "thread/settings/updated",
    "thread/goal/updated",
    "thread/goal/cleared",
    "thread/compacted",
    "thread/closed",
    "thread/archived",
    "thread/unarchived",
    "turn/diff/updated",
    "turn/plan/updated",
    "item/reasoning/summaryPartAdded",
    "item/plan/delta",
    "item/fileChange/outputDelta",
    "item/fileChange/patchUpdated",
    "item/mcpToolCall/progress",
    "item/commandExecution/terminalInteraction",
    "account/rateLimits/updated",
    "account/updated",
    "mcpServer/startupStatus/updated",
    "remoteControl/status/changed",
    "configWarning",
    "deprecationNotice",
    "guardianWarning",
    "model/rerouted",
    "skills/changed",
    "hook/started",
    "hook/completed",
];

/// Item types that are known but are not tool calls, messages or reasoning.
const KNOWN_RAW_ITEMS: &[&str] = &[
    "userMessage",
    "plan",
    "contextCompaction",
    "imageView",
    "imageGeneration",
    "enteredReviewMode",
    "exitedReviewMode",
    "hookPrompt",
    "sleep",
    "dynamicToolCall",
    "collabAgentToolCall",
    "subAgentActivity",
    "functionCallOutput",
];

/// Server requests answered through [`ControlIn::ApprovalAsked`].
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
const FILE_APPROVAL: &str = "item/fileChange/requestApproval";

/// Streamed command output kept per item, at most this many bytes.
const OUTPUT_CAP: usize = 1 << 20;

/// Stateful decoder for one `codex app-server` process.
#[derive(Debug, Default)]
pub struct AppServerDecoder {
    unknown_lines: u64,
    backend_session_id: Option<String>,
    turn_id: Option<String>,
    /// Tool item id → whether its final input was emitted (`toolCallCompleted`).
    calls: HashMap<String, bool>,
    /// File-change item id → its `changes` (with diffs), for the approval request.
    file_changes: HashMap<String, Value>,
    /// Command item id → output streamed so far.
    command_output: HashMap<String, String>,
    last_message: Option<String>,
    usage_total: Breakdown,
    usage_at_turn_start: Breakdown,
}

impl AppServerDecoder {
    pub fn new() -> AppServerDecoder {
        AppServerDecoder::default()
    }

    /// Lines that were not valid JSON, or of a method or item type this decoder does not know.
    pub fn unknown_lines(&self) -> u64 {
        self.unknown_lines
    }

    /// The thread id, once a `thread/start`/`thread/resume` result or `thread/started` was seen.
    pub fn backend_session_id(&self) -> Option<&str> {
        self.backend_session_id.as_deref()
    }

    /// The turn in progress (between `turn/started` and `turn/completed`).
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// Decodes one line (without its newline).
    pub fn decode(&mut self, line: &str) -> DecodedLine {
        let envelope = match serde_json::from_str::<Envelope<'_>>(line) {
            Ok(e) => e,
            Err(e) => return self.unknown(line, None, Some(e.to_string())),
        };
        match (envelope.method.as_deref(), envelope.id) {
            (Some(method), Some(id)) => self.server_request(line, method, id, envelope.params),
            (Some(method), None) => self.notification(line, method, envelope.params),
            (None, Some(id)) => self.response(line, id, envelope.result, envelope.error),
            (None, None) => self.unknown(line, None, None),
        }
    }

    fn unknown(
        &mut self,
        line: &str,
        native_type: Option<&str>,
        error: Option<String>,
    ) -> DecodedLine {
        self.unknown_lines += 1;
        let not_json = serde_json::from_str::<serde::de::IgnoredAny>(line).is_err();
        let native_type = native_type.unwrap_or(if not_json { "invalid" } else { "unknown" });
        DecodedLine {
            native_type: native_type.to_owned(),
            events: unknown_events(line, not_json, error),
            control: None,
        }
    }

    fn session_started(
        &mut self,
        thread: ThreadInfo,
        result: Option<&ThreadResult>,
    ) -> Option<EventKind> {
        if self.backend_session_id.as_deref() == Some(thread.id.as_str()) {
            return None;
        }
        self.backend_session_id = Some(thread.id.clone());
        let policy = result.and_then(|r| r.approval_policy.as_ref()).map(|p| match p {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        Some(EventKind::SessionStarted(SessionStarted {
            backend_session_id: thread.id,
            cwd: result.and_then(|r| r.cwd.clone()).or(thread.cwd).unwrap_or_default(),
            model: result.and_then(|r| r.model.clone()).or(thread.model).unwrap_or_default(),
            tool_names: Vec::new(),
            permission_mode: policy,
            agent_version: thread.cli_version,
        }))
    }

    fn response(
        &mut self,
        line: &str,
        id: RequestId,
        result: Option<&RawValue>,
        error: Option<RpcErrorBody>,
    ) -> DecodedLine {
        if let Some(err) = error {
            let event = EventKind::Error(ErrorEvent {
                code: ErrorCode::Protocol,
                message: format!("codex refused request {id}: {} (code {})", err.message, err.code),
                http_status: None,
            });
            let outcome = Err(RpcError { code: err.code, message: err.message });
            let control = Some(ControlIn::Response { id, outcome });
            return DecodedLine {
                native_type: "response/error".into(),
                events: vec![event],
                control,
            };
        }
        let text = result.map_or("null", RawValue::get);
        let value = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
        let thread = serde_json::from_str::<ThreadResult>(text).ok();
        let started = thread.and_then(|mut t| {
            let info = t.thread.take()?;
            self.session_started(info, Some(&t))
        });
        let event = started.unwrap_or_else(|| EventKind::raw(RawJson::from_any_text(line)));
        let control = Some(ControlIn::Response { id, outcome: Ok(value) });
        DecodedLine { native_type: "response".into(), events: vec![event], control }
    }

    fn server_request(
        &mut self,
        line: &str,
        method: &str,
        id: RequestId,
        raw_params: Option<&RawValue>,
    ) -> DecodedLine {
        let kind = match method {
            COMMAND_APPROVAL => ApprovalKind::Command,
            FILE_APPROVAL => ApprovalKind::FileChange,
            _ => {
                self.unknown_lines += 1;
                let control = ControlIn::Unsupported { request_id: id, method: method.to_owned() };
                return DecodedLine {
                    native_type: method.to_owned(),
                    events: vec![EventKind::raw(RawJson::from_any_text(line))],
                    control: Some(control),
                };
            }
        };
        // A request codex waits on must reach the adapter even if its params are odd.
        let p: Params = parse_params(raw_params).unwrap_or_default();
        let item_id = p.item_id.clone().unwrap_or_default();
        let (tool_name, input, blocked_path) = match kind {
            ApprovalKind::Command => {
                (SHELL_TOOL, command_input(p.command.as_deref(), p.cwd.as_deref()), None)
            }
            ApprovalKind::FileChange => {
                (PATCH_TOOL, patch_input(self.file_changes.get(&item_id)), p.grant_root.clone())
            }
        };
        let event = EventKind::ApprovalRequested(ApprovalRequested {
            request_id: id.to_string(),
            tool_call_id: p.item_id,
            tool_name: tool_name.to_owned(),
            input,
            description: p.reason,
            blocked_path,
            risk: None,
            risk_reasons: Vec::new(),
        });
        let control = ControlIn::ApprovalAsked {
            request_id: id,
            kind,
            item_id,
            thread_id: p.thread_id,
            turn_id: p.turn_id,
        };
        DecodedLine { native_type: method.to_owned(), events: vec![event], control: Some(control) }
    }

    fn notification(
        &mut self,
        line: &str,
        method: &str,
        raw_params: Option<&RawValue>,
    ) -> DecodedLine {
        let raw = || EventKind::raw(RawJson::from_any_text(line));
        if !MAPPED.contains(&method) {
            if !KNOWN_RAW.contains(&method) {
                self.unknown_lines += 1;
            }
            return DecodedLine {
                native_type: method.to_owned(),
                events: vec![raw()],
                control: None,
            };
        }
        let Ok(p) = parse_params(raw_params) else {
            return self.unknown(line, Some(method), None);
        };
        let mut native_type = method.to_owned();
        let mut control = None;
        let events = match method {
            "thread/started" => {
                let started = p.thread.and_then(|t| self.session_started(t, None));
                vec![started.unwrap_or_else(raw)]
            }
            "turn/started" => {
                let turn_id = p.turn.map(|t| t.id).unwrap_or_default();
                self.turn_id = Some(turn_id.clone());
                self.usage_at_turn_start = self.usage_total;
                self.last_message = None;
                control = Some(ControlIn::TurnStarted { thread_id: p.thread_id, turn_id });
                vec![raw()]
            }
            "turn/completed" => {
                let (events, status) = self.turn_completed(p);
                control = Some(ControlIn::TurnEnded { status });
                events
            }
            "item/started" | "item/completed" => match p.item {
                Some(item) => {
                    native_type = format!("{method}:{}", item.kind.as_deref().unwrap_or_default());
                    self.item(line, method == "item/completed", item)
                }
                None => return self.unknown(line, Some(method), None),
            },
            "item/agentMessage/delta" => vec![EventKind::AssistantText(TextBlock {
                is_partial: true,
                message_id: p.item_id.unwrap_or_default(),
                text: p.delta.unwrap_or_default(),
            })],
            "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta" => {
                vec![EventKind::Thinking(TextBlock {
                    is_partial: true,
                    message_id: p.item_id.unwrap_or_default(),
                    text: p.delta.unwrap_or_default(),
                })]
            }
            "item/commandExecution/outputDelta" => {
                if let (Some(id), Some(delta)) = (p.item_id, p.delta) {
                    let out = self.command_output.entry(id).or_default();
                    if out.len() + delta.len() <= OUTPUT_CAP {
                        out.push_str(&delta);
                    }
                }
                vec![raw()]
            }
            "thread/tokenUsage/updated" => {
                if let Some(usage) = p.token_usage {
                    self.usage_total = usage.total;
                }
                vec![raw()]
            }
            "serverRequest/resolved" => {
                control = p.request_id.map(|request_id| ControlIn::RequestResolved { request_id });
                vec![raw()]
            }
            "error" => match p.error {
                Some(e) => {
                    let (info, status) = e.info();
                    vec![provider_error(&e.full_message(), status, info, p.will_retry)]
                }
                None => return self.unknown(line, Some(method), None),
            },
            // "warning": a non-fatal problem (e.g. unknown model metadata), same as exec's
            // error items.
            _ => vec![EventKind::Error(ErrorEvent {
                code: ErrorCode::ApiError,
                message: p.message.unwrap_or_default(),
                http_status: None,
            })],
        };
        DecodedLine { native_type, events, control }
    }

    fn turn_completed(&mut self, p: Params) -> (Vec<EventKind>, String) {
        let turn = p.turn;
        let status =
            turn.as_ref().and_then(|t| t.status.clone()).unwrap_or_else(|| "completed".into());
        let spent = self.usage_total.minus(self.usage_at_turn_start);
        self.usage_at_turn_start = self.usage_total;
        let usage = Usage {
            input_tokens: spent.input_tokens,
            output_tokens: spent.output_tokens,
            cached_input_tokens: spent.cached_input_tokens,
            cost_usd: None,
        };
        let is_error = status == "failed";
        let error = turn.as_ref().and_then(|t| t.error.as_ref()).map(|e| e.full_message());
        let result = if is_error { error } else { self.last_message.take() };
        let completed = TurnCompleted {
            stop_reason: None,
            usage: usage.clone(),
            is_error,
            terminal_reason: Some(status.clone()),
            result,
            duration_ms: turn.and_then(|t| t.duration_ms),
        };
        self.turn_id = None;
        self.last_message = None;
        self.calls.clear();
        self.file_changes.clear();
        self.command_output.clear();
        (vec![EventKind::Usage(usage), EventKind::TurnCompleted(completed)], status)
    }

    fn item(&mut self, line: &str, completed: bool, item: Item) -> Vec<EventKind> {
        let raw = || EventKind::raw(RawJson::from_any_text(line));
        let item_type = item.kind.as_deref().unwrap_or_default();
        if let Some(kind) = ToolKind::of(item_type) {
            return self.tool_item(line, completed, kind, &item);
        }
        let kind = match (item_type, completed) {
            ("agentMessage", true) => {
                let text = item.text.clone().unwrap_or_default();
                self.last_message = Some(text.clone());
                EventKind::AssistantText(TextBlock {
                    is_partial: false,
                    message_id: item.id(),
                    text,
                })
            }
            ("reasoning", true) => {
                let text = item.reasoning_text();
                if text.is_empty() {
                    raw()
                } else {
                    EventKind::Thinking(TextBlock {
                        is_partial: false,
                        message_id: item.id(),
                        text,
                    })
                }
            }
            ("agentMessage" | "reasoning", false) => raw(),
            (other, _) => {
                if !KNOWN_RAW_ITEMS.contains(&other) {
                    self.unknown_lines += 1;
                }
                raw()
            }
        };
        vec![kind]
    }

    fn tool_item(
        &mut self,
        line: &str,
        completed: bool,
        kind: ToolKind,
        item: &Item,
    ) -> Vec<EventKind> {
        let id = item.id();
        if let (ToolKind::FileChange, false, Some(changes)) = (kind, completed, &item.changes) {
            self.file_changes.insert(id.clone(), changes.clone());
        }
        let mut events = Vec::new();
        let call = item.tool_call(kind);
        let input_final = completed || kind.input_final_at_start();
        match self.calls.get(&id).copied() {
            None => {
                events.push(EventKind::ToolCallStarted(call.clone()));
                if input_final {
                    events.push(EventKind::ToolCallCompleted(call));
                }
                self.calls.insert(id.clone(), input_final);
            }
            Some(false) if input_final => {
                events.push(EventKind::ToolCallCompleted(call));
                self.calls.insert(id.clone(), true);
            }
            Some(_) => {}
        }
        if completed {
            let streamed = self.command_output.remove(&id);
            events.push(EventKind::ToolResult(item.tool_result(kind, streamed.as_deref())));
            self.file_changes.remove(&id);
        }
        if events.is_empty() {
            events.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        events
    }
}

fn parse_params(raw: Option<&RawValue>) -> Result<Params, serde_json::Error> {
    match raw {
        Some(raw) => serde_json::from_str(raw.get()),
        None => Ok(Params::default()),
    }
}

#[cfg(test)]
#[path = "appserver_tests.rs"]
mod tests;
