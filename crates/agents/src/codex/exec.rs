//! The `codex exec --json` decoder: one stdout line in, normalized event kinds out.
//!
//! exec runs one turn per process and emits whole items only (no deltas). Its `turn.completed`
//! usage is the THREAD's running total (a resumed thread reports earlier turns too), so the
//! per-turn usage is that total minus [`ExecDecoder::with_usage_baseline`].

use std::borrow::Cow;
use std::collections::HashMap;

use nucleic_protocol::{
    ErrorCode, ErrorEvent, EventKind, RawJson, SessionStarted, TextBlock, TurnCompleted, Usage,
};
use serde::Deserialize;
use serde_json::Value;

use super::item::{Item, ToolKind};
use super::retry::provider_error;
use super::{ControlIn, DecodedLine, unknown_events};

#[derive(Deserialize)]
struct FlatLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    thread_id: Option<String>,
    item: Option<Item>,
    usage: Option<ExecUsage>,
    error: Option<ErrorBody>,
    message: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct ExecUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
}

/// Stateful decoder for one `codex exec --json` process.
#[derive(Debug, Default)]
pub struct ExecDecoder {
    unknown_lines: u64,
    backend_session_id: Option<String>,
    cwd: String,
    model: String,
    /// Tool item id → whether its final input was emitted (`toolCallCompleted`).
    calls: HashMap<String, bool>,
    last_message: Option<String>,
    baseline: Usage,
    thread_usage: Option<Usage>,
}

impl ExecDecoder {
    pub fn new() -> ExecDecoder {
        ExecDecoder::default()
    }

    /// The cwd and model reported in `sessionStarted` (exec's `thread.started` has neither).
    #[must_use]
    pub fn with_session_info(mut self, cwd: impl Into<String>, model: impl Into<String>) -> Self {
        self.cwd = cwd.into();
        self.model = model.into();
        self
    }

    /// The thread's usage before this process (from [`ExecDecoder::thread_usage`] of the run
    /// being resumed), subtracted from exec's running total.
    #[must_use]
    pub fn with_usage_baseline(mut self, usage: Usage) -> Self {
        self.baseline = usage;
        self
    }

    /// Lines that were not valid JSON or of a type this decoder does not know.
    pub fn unknown_lines(&self) -> u64 {
        self.unknown_lines
    }

    /// The thread id, once `thread.started` was seen.
    pub fn backend_session_id(&self) -> Option<&str> {
        self.backend_session_id.as_deref()
    }

    /// The thread's running usage total from the last `turn.completed` (no cost: codex reports
    /// none).
    pub fn thread_usage(&self) -> Option<&Usage> {
        self.thread_usage.as_ref()
    }

    /// Decodes one line (without its newline).
    pub fn decode(&mut self, line: &str) -> DecodedLine {
        let parsed = match serde_json::from_str::<FlatLine<'_>>(line) {
            Ok(f) => f,
            Err(e) => return self.unknown(line, Some(e.to_string())),
        };
        let Some(kind) = parsed.kind.as_deref().map(str::to_owned) else {
            return self.unknown(line, None);
        };
        let raw = || EventKind::raw(RawJson::from_any_text(line));
        let (events, control) = match kind.as_str() {
            "thread.started" => {
                let id = parsed.thread_id.unwrap_or_default();
                self.backend_session_id = Some(id.clone());
                let started = SessionStarted {
                    backend_session_id: id,
                    cwd: self.cwd.clone(),
                    model: self.model.clone(),
                    tool_names: Vec::new(),
                    permission_mode: None,
                    agent_version: None,
                };
                (vec![EventKind::SessionStarted(started)], None)
            }
            "turn.started" => {
                self.calls.clear();
                self.last_message = None;
                (vec![raw()], None)
            }
            "item.started" | "item.updated" | "item.completed" => match parsed.item {
                Some(item) => {
                    let native_type =
                        format!("{kind}:{}", item.kind.as_deref().unwrap_or_default());
                    let events = self.item(line, &kind, item);
                    return DecodedLine { native_type, events, control: None };
                }
                None => return self.unknown(line, None),
            },
            "turn.completed" => {
                let total = parsed.usage.unwrap_or_default();
                let total = Usage {
                    input_tokens: total.input_tokens,
                    output_tokens: total.output_tokens,
                    cached_input_tokens: total.cached_input_tokens,
                    cost_usd: None,
                };
                let usage = Usage {
                    input_tokens: total.input_tokens.saturating_sub(self.baseline.input_tokens),
                    output_tokens: total.output_tokens.saturating_sub(self.baseline.output_tokens),
                    cached_input_tokens: total
                        .cached_input_tokens
                        .saturating_sub(self.baseline.cached_input_tokens),
                    cost_usd: None,
                };
                self.baseline = total.clone();
                self.thread_usage = Some(total);
                let turn = TurnCompleted {
                    stop_reason: None,
                    usage: usage.clone(),
                    is_error: false,
                    terminal_reason: Some("completed".into()),
                    result: self.last_message.take(),
                    duration_ms: None,
                };
                let events = vec![EventKind::Usage(usage), EventKind::TurnCompleted(turn)];
                (events, Some(ControlIn::TurnEnded { status: "completed".into() }))
            }
            "turn.failed" => {
                let message = parsed.error.and_then(|e| e.message);
                let turn = TurnCompleted {
                    stop_reason: None,
                    usage: Usage::default(),
                    is_error: true,
                    terminal_reason: Some("failed".into()),
                    result: message,
                    duration_ms: None,
                };
                let events = vec![EventKind::TurnCompleted(turn)];
                (events, Some(ControlIn::TurnEnded { status: "failed".into() }))
            }
            "error" => {
                let message = parsed.message.unwrap_or_default();
                (vec![provider_error(&message, None, None, false)], None)
            }
            _ => return self.unknown(line, None),
        };
        DecodedLine { native_type: kind, events, control }
    }

    fn item(&mut self, line: &str, phase: &str, item: Item) -> Vec<EventKind> {
        let raw = || EventKind::raw(RawJson::from_any_text(line));
        let completed = phase == "item.completed";
        let item_type = item.kind.as_deref().unwrap_or_default();
        if let Some(kind) = ToolKind::of(item_type) {
            return self.tool_item(line, completed, kind, &item);
        }
        let kind = match (item_type, completed) {
            ("agent_message", true) => {
                let text = item.text.clone().unwrap_or_default();
                self.last_message = Some(text.clone());
                EventKind::AssistantText(TextBlock {
                    is_partial: false,
                    message_id: item.id(),
                    text,
                })
            }
            ("reasoning", true) => EventKind::Thinking(TextBlock {
                is_partial: false,
                message_id: item.id(),
                text: item.reasoning_text(),
            }),
            // A non-fatal problem codex reports as an item (e.g. unknown model metadata).
            ("error", _) => EventKind::Error(ErrorEvent {
                code: ErrorCode::ApiError,
                message: item.message.unwrap_or_default(),
                http_status: None,
            }),
            ("agent_message" | "reasoning" | "todo_list", _) => raw(),
            _ => {
                self.unknown_lines += 1;
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
        let mut events = Vec::new();
        let call = item.tool_call(kind);
        let input_final = completed || kind.input_final_at_start();
        match self.calls.get(&id).copied() {
            None => {
                events.push(EventKind::ToolCallStarted(call.clone()));
                if input_final {
                    events.push(EventKind::ToolCallCompleted(call));
                }
                self.calls.insert(id, input_final);
            }
            Some(false) if input_final => {
                events.push(EventKind::ToolCallCompleted(call));
                self.calls.insert(id, true);
            }
            Some(_) => {}
        }
        if completed {
            events.push(EventKind::ToolResult(item.tool_result(kind, None)));
        }
        if events.is_empty() {
            events.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        events
    }

    fn unknown(&mut self, line: &str, error: Option<String>) -> DecodedLine {
        self.unknown_lines += 1;
        let value: Option<Value> = serde_json::from_str(line).ok();
        let native_type = value
            .as_ref()
            .and_then(|v| v.get("type")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| "invalid".to_owned());
        DecodedLine {
            native_type,
            events: unknown_events(line, value.is_none(), error),
            control: None,
        }
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
pub(super) mod tests;
