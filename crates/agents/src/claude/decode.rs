//! The Claude Code decoder: one stdout line in, normalized event kinds out. Never panics and
//! never drops a line: anything it cannot map becomes a `raw` event (and unknown ones are counted).

use std::collections::{HashMap, HashSet};

use nucleic_protocol::{
    ApiRetry, ApprovalRequested, ErrorCode, ErrorEvent, EventKind, PermissionDenied, RateLimit,
    RawJson, SessionStarted, SettingsChanged, TextBlock, Timestamp, ToolCall, ToolInputDelta,
    ToolResult, TurnCompleted, Usage,
};
use serde_json::Value;

use super::flat::parse_line;
use super::wire::{
    Block, Content, ControlRequestLine, ControlResponseLine, Delta, Line, MessageLine,
    RateLimitLine, ResultLine, StartBlock, StreamEvent, StreamEventLine, SystemLine,
};

/// `system` subtypes that are known but have no normalized meaning: kept raw, not counted unknown.
const KNOWN_RAW_SYSTEM: &[&str] = &[
    "status",
    "task_started",
    "task_progress",
    "task_notification",
    "thinking_tokens",
    "post_turn_summary",
    "compact_boundary",
    "hook_started",
    "hook_response",
    "files_persisted",
];

/// What one line decoded to; native types are `system/init`, `assistant`,
/// `control_request/can_use_tool`, …
pub type DecodedLine = crate::supervisor::DecodedLine<ControlIn>;

/// Control-protocol traffic the adapter must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlIn {
    /// The CLI asks permission; it waits until we answer this id.
    PermissionAsked { request_id: String, tool_name: String, input: Value },
    /// The CLI's PreToolUse hook asks the host about a tool call before its own permission
    /// rules; it waits until we answer this id (allow, deny, or ask a person).
    HookAsked { request_id: String },
    /// The CLI sent a request we do not serve; it must get an error reply, not silence.
    Unsupported { request_id: String, subtype: String },
    /// The CLI answered one of our requests.
    Answered { request_id: String },
    /// A turn ended (`result`): permission asks still open are void.
    TurnEnded,
}

/// How the last turn ended, kept for classifying the process exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    pub is_error: bool,
    pub subtype: String,
    pub terminal_reason: Option<String>,
    pub api_error_status: Option<u16>,
    pub result: Option<String>,
}

/// Stateful decoder for one Claude Code process.
#[derive(Debug, Default)]
pub struct ClaudeDecoder {
    tool_ids_by_index: HashMap<u32, String>,
    started_tool_calls: HashSet<String>,
    cumulative_cost: f64,
    unknown_lines: u64,
    backend_session_id: Option<String>,
    last_turn: Option<TurnSummary>,
    turn_open: bool,
}

impl ClaudeDecoder {
    pub fn new() -> ClaudeDecoder {
        ClaudeDecoder::default()
    }

    /// Lines that were not valid JSON or of a type/subtype this decoder does not know.
    pub fn unknown_lines(&self) -> u64 {
        self.unknown_lines
    }

    /// The CLI's session id, once `system/init` was seen.
    pub fn backend_session_id(&self) -> Option<&str> {
        self.backend_session_id.as_deref()
    }

    /// How the last `result` ended, if there was one.
    pub fn last_turn(&self) -> Option<&TurnSummary> {
        self.last_turn.as_ref()
    }

    /// A turn started (`system/init`) and has not produced its `result` yet.
    pub fn turn_open(&self) -> bool {
        self.turn_open
    }

    /// Decodes one line (without its newline).
    pub fn decode(&mut self, line: &str) -> DecodedLine {
        match parse_line(line) {
            Ok(Line::System(s)) => self.system(line, s),
            Ok(Line::Assistant(m)) => self.assistant(line, m),
            Ok(Line::User(m)) => self.user(line, m),
            Ok(Line::StreamEvent(s)) => self.stream_event(line, s),
            Ok(Line::Result(r)) => self.result(r),
            Ok(Line::ControlRequest(r)) => self.control_request(line, r),
            Ok(Line::ControlResponse(r)) => self.control_response(line, r),
            Ok(Line::RateLimitEvent(r)) => rate_limit(line, r),
            Ok(Line::Unknown) => self.unknown(line, None),
            Err(e) => self.unknown(line, Some(e.to_string())),
        }
    }

    fn unknown(&mut self, line: &str, error: Option<String>) -> DecodedLine {
        self.unknown_lines += 1;
        let value: Option<Value> = serde_json::from_str(line).ok();
        let native_type = value
            .as_ref()
            .and_then(|v| {
                let t = v.get("type")?.as_str()?;
                Some(match v.get("subtype").and_then(Value::as_str) {
                    Some(sub) => format!("{t}/{sub}"),
                    None => t.to_owned(),
                })
            })
            .unwrap_or_else(|| "invalid".to_owned());
        let mut events = vec![EventKind::raw(RawJson::from_any_text(line))];
        if value.is_none() {
            let detail = error.unwrap_or_default();
            events.push(EventKind::Error(ErrorEvent {
                code: ErrorCode::Decode,
                message: format!(
                    "agent wrote a line that is not JSON ({} bytes): {detail}",
                    line.len()
                ),
                http_status: None,
            }));
        }
        DecodedLine { native_type, events, control: None }
    }

    fn system(&mut self, line: &str, s: SystemLine) -> DecodedLine {
        let native_type = format!("system/{}", s.subtype);
        let kind = match s.subtype.as_str() {
            "init" => {
                self.turn_open = true;
                let id = s.session_id.unwrap_or_default();
                self.backend_session_id = Some(id.clone());
                EventKind::SessionStarted(SessionStarted {
                    backend_session_id: id,
                    cwd: s.cwd.unwrap_or_default(),
                    model: s.model.unwrap_or_default(),
                    tool_names: s.tools.unwrap_or_default(),
                    permission_mode: s.permission_mode,
                    agent_version: s.claude_code_version,
                })
            }
            "api_retry" => EventKind::ApiRetry(ApiRetry {
                attempt: s.attempt.unwrap_or(0),
                max_retries: s.max_retries.unwrap_or(0),
                retry_delay_ms: s.retry_delay_ms.unwrap_or(0),
                http_status: s.error_status,
                error: s.error.unwrap_or_else(|| "unknown".into()),
            }),
            "permission_denied" => EventKind::PermissionDenied(PermissionDenied {
                tool_name: s.tool_name.unwrap_or_default(),
                tool_call_id: s.tool_use_id,
                message: s.message.unwrap_or_default(),
            }),
            "status" if s.permission_mode.is_some() => {
                EventKind::SettingsChanged(SettingsChanged {
                    model: None,
                    permission_mode: s.permission_mode,
                })
            }
            other => {
                if !KNOWN_RAW_SYSTEM.contains(&other) {
                    self.unknown_lines += 1;
                }
                EventKind::raw(RawJson::from_any_text(line))
            }
        };
        DecodedLine { native_type, events: vec![kind], control: None }
    }

    fn assistant(&mut self, line: &str, m: MessageLine) -> DecodedLine {
        let message_id = m.message.id.clone().unwrap_or_default();
        let mut events = Vec::new();
        let blocks = match m.message.content {
            Content::Blocks(b) => b,
            Content::Text(text) => vec![Block::Text { text }],
        };
        for block in blocks {
            match block {
                Block::Text { text } if m.is_api_error_message => {
                    events.push(EventKind::Error(ErrorEvent {
                        code: ErrorCode::ApiError,
                        message: text,
                        http_status: None,
                    }));
                }
                Block::Text { text } => events.push(EventKind::AssistantText(TextBlock {
                    is_partial: false,
                    message_id: message_id.clone(),
                    text,
                })),
                Block::Thinking { thinking } => events.push(EventKind::Thinking(TextBlock {
                    is_partial: false,
                    message_id: message_id.clone(),
                    text: thinking,
                })),
                Block::ToolUse { id, name, input } => {
                    let call = ToolCall {
                        tool_call_id: id.clone(),
                        name,
                        input,
                        parent_tool_call_id: m.parent_tool_use_id.clone(),
                    };
                    if self.started_tool_calls.insert(id) {
                        events.push(EventKind::ToolCallStarted(call.clone()));
                    }
                    events.push(EventKind::ToolCallCompleted(call));
                }
                Block::ToolResult { .. } | Block::Other => {
                    events.push(EventKind::raw(RawJson::from_any_text(line)));
                }
            }
        }
        if events.is_empty() {
            events.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        DecodedLine { native_type: "assistant".into(), events, control: None }
    }

    fn user(&mut self, line: &str, m: MessageLine) -> DecodedLine {
        let mut events = Vec::new();
        if let Content::Blocks(blocks) = m.message.content {
            for block in blocks {
                match block {
                    Block::ToolResult { tool_use_id, content, is_error } => {
                        events.push(EventKind::ToolResult(ToolResult {
                            tool_call_id: tool_use_id,
                            content,
                            is_error: is_error.unwrap_or(false),
                        }));
                    }
                    Block::Text { .. } | Block::Thinking { .. } | Block::ToolUse { .. } => {}
                    Block::Other => {}
                }
            }
        }
        // Text the CLI puts in the user role ("[Request interrupted by user]", sub-agent prompts,
        // replays) is not something the person typed: keep the whole line raw.
        if events.is_empty() || m.is_replay {
            events.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        DecodedLine { native_type: "user".into(), events, control: None }
    }

    fn stream_event(&mut self, line: &str, s: StreamEventLine) -> DecodedLine {
        let message_id = s.api_message_id.unwrap_or_default();
        let kind = match s.event {
            StreamEvent::MessageStart => {
                self.tool_ids_by_index.clear();
                None
            }
            StreamEvent::ContentBlockStart { index, content_block } => match content_block {
                StartBlock::ToolUse { id, name } => {
                    self.tool_ids_by_index.insert(index, id.clone());
                    self.started_tool_calls.insert(id.clone());
                    Some(EventKind::ToolCallStarted(ToolCall {
                        tool_call_id: id,
                        name,
                        input: Value::Object(serde_json::Map::new()),
                        parent_tool_call_id: s.parent_tool_use_id,
                    }))
                }
                StartBlock::Other => None,
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                Delta::TextDelta { text } => {
                    Some(EventKind::AssistantText(TextBlock { is_partial: true, message_id, text }))
                }
                Delta::ThinkingDelta { thinking } => Some(EventKind::Thinking(TextBlock {
                    is_partial: true,
                    message_id,
                    text: thinking,
                })),
                Delta::InputJsonDelta { partial_json } => {
                    self.tool_ids_by_index.get(&index).map(|id| {
                        EventKind::ToolInputDelta(ToolInputDelta {
                            tool_call_id: id.clone(),
                            partial_json,
                        })
                    })
                }
                Delta::Other => None,
            },
            StreamEvent::ContentBlockStop
            | StreamEvent::MessageDelta
            | StreamEvent::MessageStop
            | StreamEvent::Ping => None,
            StreamEvent::Other => {
                self.unknown_lines += 1;
                None
            }
        };
        let kind = kind.unwrap_or_else(|| EventKind::raw(RawJson::from_any_text(line)));
        DecodedLine { native_type: "stream_event".into(), events: vec![kind], control: None }
    }

    fn result(&mut self, r: ResultLine) -> DecodedLine {
        let turn_cost = match &r.model_usage_since_last_result {
            Some(models) => models.values().fold(0.0, |sum, m| sum + m.cost_usd),
            None => r.total_cost_usd.map_or(0.0, |t| (t - self.cumulative_cost).max(0.0)),
        };
        self.turn_open = false;
        if let Some(total) = r.total_cost_usd {
            self.cumulative_cost = total;
        }
        let usage = Usage {
            input_tokens: r.usage.input_tokens,
            output_tokens: r.usage.output_tokens,
            cached_input_tokens: r.usage.cache_read_input_tokens
                + r.usage.cache_creation_input_tokens,
            cost_usd: Some(turn_cost),
        };
        let result_text = if r.is_error && r.result.is_none() && !r.errors.is_empty() {
            Some(r.errors.join("; "))
        } else {
            r.result.clone()
        };
        self.last_turn = Some(TurnSummary {
            is_error: r.is_error,
            subtype: r.subtype.clone(),
            terminal_reason: r.terminal_reason.clone(),
            api_error_status: r.api_error_status,
            result: result_text.clone(),
        });
        let turn = TurnCompleted {
            stop_reason: r.stop_reason,
            usage: usage.clone(),
            is_error: r.is_error,
            terminal_reason: r.terminal_reason,
            result: result_text,
            duration_ms: r.duration_ms,
        };
        DecodedLine {
            native_type: "result".into(),
            events: vec![EventKind::Usage(usage), EventKind::TurnCompleted(turn)],
            control: Some(ControlIn::TurnEnded),
        }
    }

    fn control_request(&mut self, line: &str, r: ControlRequestLine) -> DecodedLine {
        let native_type = format!("control_request/{}", r.request.subtype);
        if r.request.subtype == "can_use_tool" {
            let tool_name = r.request.tool_name.unwrap_or_default();
            let input = r.request.input.unwrap_or(Value::Null);
            let kind = EventKind::ApprovalRequested(ApprovalRequested {
                request_id: r.request_id.clone(),
                tool_call_id: r.request.tool_use_id,
                tool_name: tool_name.clone(),
                input: input.clone(),
                description: r.request.description,
                blocked_path: r.request.blocked_path,
                risk: None,
                risk_reasons: Vec::new(),
            });
            let control = ControlIn::PermissionAsked { request_id: r.request_id, tool_name, input };
            return DecodedLine { native_type, events: vec![kind], control: Some(control) };
        }
        if r.request.subtype == "hook_callback"
            && let Some(hook) =
                r.request.input.as_ref().filter(|i| {
                    i.get("hook_event_name").and_then(Value::as_str) == Some("PreToolUse")
                })
        {
            let text = |key: &str| hook.get(key).and_then(Value::as_str).map(str::to_owned);
            let kind = EventKind::ApprovalRequested(ApprovalRequested {
                request_id: r.request_id.clone(),
                tool_call_id: r.request.tool_use_id.or_else(|| text("tool_use_id")),
                tool_name: text("tool_name").unwrap_or_default(),
                input: hook.get("tool_input").cloned().unwrap_or(Value::Null),
                description: None,
                blocked_path: None,
                risk: None,
                risk_reasons: Vec::new(),
            });
            let control = ControlIn::HookAsked { request_id: r.request_id };
            return DecodedLine { native_type, events: vec![kind], control: Some(control) };
        }
        self.unknown_lines += 1;
        DecodedLine {
            native_type,
            events: vec![EventKind::raw(RawJson::from_any_text(line))],
            control: Some(ControlIn::Unsupported {
                request_id: r.request_id,
                subtype: r.request.subtype,
            }),
        }
    }

    fn control_response(&mut self, line: &str, r: ControlResponseLine) -> DecodedLine {
        let native_type = format!("control_response/{}", r.response.subtype);
        let body = r.response.response.as_ref();
        let kind = if r.response.subtype == "error" {
            EventKind::Error(ErrorEvent {
                code: ErrorCode::Protocol,
                message: format!(
                    "agent refused a control request: {}",
                    r.response.error.as_deref().unwrap_or("no reason given")
                ),
                http_status: None,
            })
        } else if let Some(model) = body.and_then(|b| b.get("model")).and_then(Value::as_str) {
            EventKind::SettingsChanged(SettingsChanged {
                model: Some(model.to_owned()),
                permission_mode: None,
            })
        } else {
            EventKind::raw(RawJson::from_any_text(line))
        };
        let control = r.response.request_id.map(|request_id| ControlIn::Answered { request_id });
        DecodedLine { native_type, events: vec![kind], control }
    }
}

fn rate_limit(line: &str, r: RateLimitLine) -> DecodedLine {
    let kind = match r.rate_limit_info {
        Some(info) => EventKind::RateLimit(RateLimit {
            status: info.status.unwrap_or_else(|| "unknown".into()),
            rate_limit_type: info.rate_limit_type,
            resets_at: info.resets_at.and_then(|v| match v {
                Value::String(s) => Some(s),
                Value::Number(n) => {
                    n.as_i64().map(|secs| Timestamp::from_unix_millis(secs * 1000).to_string())
                }
                _ => None,
            }),
            is_using_overage: info.is_using_overage,
            overage_status: info.overage_status,
        }),
        None => EventKind::raw(RawJson::from_any_text(line)),
    };
    DecodedLine { native_type: "rate_limit_event".into(), events: vec![kind], control: None }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
