//! Parsing a stdout line into [`Line`] in one pass. Each JSON object is read into a flat struct
//! holding every field any line kind uses, then sorted by its `type` tag. (serde's internally
//! tagged enums buffer each object into an intermediate tree first, which made typed decoding
//! slower than a bare `serde_json::Value` parse.) Fields whose type differs between line kinds
//! (`message`: an object, or a string in `permission_denied`) are captured as raw JSON and
//! parsed once the kind is known.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{
    Block, Content, ControlRequestBody, ControlRequestLine, ControlResponseBody,
    ControlResponseLine, Delta, Line, Message, MessageLine, ModelUsage, RateLimitInfo,
    RateLimitLine, ResultLine, ResultUsage, StartBlock, StreamEvent, StreamEventLine, SystemLine,
};

#[derive(Deserialize)]
struct FlatLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    subtype: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
    tools: Option<Vec<String>>,
    #[serde(rename = "permissionMode")]
    permission_mode: Option<String>,
    claude_code_version: Option<String>,
    attempt: Option<u32>,
    max_retries: Option<u32>,
    retry_delay_ms: Option<u64>,
    error_status: Option<u16>,
    error: Option<Value>,
    tool_name: Option<String>,
    tool_use_id: Option<String>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    parent_tool_use_id: Option<String>,
    #[serde(default)]
    is_api_error_message: bool,
    #[serde(default, rename = "isReplay")]
    is_replay: bool,
    event: Option<FlatEvent>,
    api_message_id: Option<String>,
    #[serde(default)]
    is_error: bool,
    result: Option<String>,
    stop_reason: Option<String>,
    terminal_reason: Option<String>,
    api_error_status: Option<u16>,
    total_cost_usd: Option<f64>,
    duration_ms: Option<u64>,
    usage: Option<ResultUsage>,
    model_usage_since_last_result: Option<BTreeMap<String, ModelUsage>>,
    #[serde(default)]
    errors: Vec<String>,
    request_id: Option<String>,
    request: Option<ControlRequestBody>,
    response: Option<ControlResponseBody>,
    rate_limit_info: Option<RateLimitInfo>,
}

#[derive(Deserialize)]
struct FlatMessage<'a> {
    id: Option<String>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FlatBlock {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
    tool_use_id: Option<String>,
    content: Option<Value>,
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct FlatEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    index: Option<u32>,
    content_block: Option<FlatBlock>,
    delta: Option<FlatDelta>,
}

#[derive(Deserialize)]
struct FlatDelta {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    partial_json: Option<String>,
}

/// A line of a known `type` whose fields do not fit what that type should carry.
fn shape(what: &str) -> serde_json::Error {
    serde::de::Error::custom(format!("unexpected shape: {what}"))
}

/// Parses one stdout line.
pub(crate) fn parse_line(line: &str) -> Result<Line, serde_json::Error> {
    let f: FlatLine<'_> = serde_json::from_str(line)?;
    let Some(kind) = f.kind.as_deref() else { return Ok(Line::Unknown) };
    Ok(match kind {
        "system" => Line::System(SystemLine {
            subtype: f.subtype.unwrap_or_default(),
            session_id: f.session_id,
            cwd: f.cwd,
            model: f.model,
            tools: f.tools,
            permission_mode: f.permission_mode,
            claude_code_version: f.claude_code_version,
            attempt: f.attempt,
            max_retries: f.max_retries,
            retry_delay_ms: f.retry_delay_ms,
            error_status: f.error_status,
            error: f.error.and_then(|e| e.as_str().map(str::to_owned)),
            tool_name: f.tool_name,
            tool_use_id: f.tool_use_id,
            message: f.message.and_then(|m| serde_json::from_str(m.get()).ok()),
        }),
        "assistant" | "user" => {
            let raw = f.message.ok_or_else(|| shape("message line without message"))?;
            let message = parse_message(raw)?;
            let line = MessageLine {
                message,
                parent_tool_use_id: f.parent_tool_use_id,
                is_api_error_message: f.is_api_error_message,
                is_replay: f.is_replay,
            };
            if kind == "assistant" { Line::Assistant(line) } else { Line::User(line) }
        }
        "stream_event" => Line::StreamEvent(StreamEventLine {
            event: stream_event(f.event.ok_or_else(|| shape("stream_event without event"))?),
            api_message_id: f.api_message_id,
            parent_tool_use_id: f.parent_tool_use_id,
        }),
        "result" => Line::Result(ResultLine {
            subtype: f.subtype.unwrap_or_default(),
            is_error: f.is_error,
            result: f.result,
            stop_reason: f.stop_reason,
            terminal_reason: f.terminal_reason,
            api_error_status: f.api_error_status,
            total_cost_usd: f.total_cost_usd,
            duration_ms: f.duration_ms,
            usage: f.usage.unwrap_or_default(),
            model_usage_since_last_result: f.model_usage_since_last_result,
            errors: f.errors,
        }),
        "control_request" => Line::ControlRequest(ControlRequestLine {
            request_id: f.request_id.ok_or_else(|| shape("control_request without request_id"))?,
            request: f.request.ok_or_else(|| shape("control_request without request"))?,
        }),
        "control_response" => Line::ControlResponse(ControlResponseLine {
            response: f.response.ok_or_else(|| shape("control_response without response"))?,
        }),
        "rate_limit_event" => {
            Line::RateLimitEvent(RateLimitLine { rate_limit_info: f.rate_limit_info })
        }
        _ => Line::Unknown,
    })
}

fn parse_message(raw: &RawValue) -> Result<Message, serde_json::Error> {
    let m: FlatMessage<'_> = serde_json::from_str(raw.get())?;
    let content = m.content.ok_or_else(|| shape("message without content"))?;
    let content = if content.get().starts_with('"') {
        Content::Text(serde_json::from_str(content.get())?)
    } else {
        let blocks: Vec<FlatBlock> = serde_json::from_str(content.get())?;
        Content::Blocks(blocks.into_iter().map(block).collect())
    };
    Ok(Message { id: m.id, content })
}

fn block(b: FlatBlock) -> Block {
    let kind = b.kind.unwrap_or_default();
    match (kind.as_str(), b.text, b.id, b.name, b.tool_use_id) {
        ("text", Some(text), ..) => Block::Text { text },
        ("thinking", ..) => Block::Thinking { thinking: b.thinking.unwrap_or_default() },
        ("tool_use", _, Some(id), Some(name), _) => {
            Block::ToolUse { id, name, input: b.input.unwrap_or(Value::Null) }
        }
        ("tool_result", .., Some(tool_use_id)) => Block::ToolResult {
            tool_use_id,
            content: b.content.unwrap_or(Value::Null),
            is_error: b.is_error,
        },
        _ => Block::Other,
    }
}

fn stream_event(e: FlatEvent) -> StreamEvent {
    match e.kind.as_deref() {
        Some("message_start") => StreamEvent::MessageStart,
        Some("content_block_start") => StreamEvent::ContentBlockStart {
            index: e.index.unwrap_or(0),
            content_block: match e.content_block {
                Some(FlatBlock { kind: Some(k), id: Some(id), name: Some(name), .. })
                    if k == "tool_use" =>
                {
                    StartBlock::ToolUse { id, name }
                }
                _ => StartBlock::Other,
            },
        },
        Some("content_block_delta") => StreamEvent::ContentBlockDelta {
            index: e.index.unwrap_or(0),
            delta: match e.delta {
                Some(d) => delta(d),
                None => Delta::Other,
            },
        },
        Some("content_block_stop") => StreamEvent::ContentBlockStop,
        Some("message_delta") => StreamEvent::MessageDelta,
        Some("message_stop") => StreamEvent::MessageStop,
        Some("ping") => StreamEvent::Ping,
        _ => StreamEvent::Other,
    }
}

fn delta(d: FlatDelta) -> Delta {
    match (d.kind.as_deref().unwrap_or_default(), d.text, d.thinking, d.partial_json) {
        ("text_delta", Some(text), ..) => Delta::TextDelta { text },
        ("thinking_delta", _, Some(thinking), _) => Delta::ThinkingDelta { thinking },
        ("input_json_delta", .., Some(partial_json)) => Delta::InputJsonDelta { partial_json },
        _ => Delta::Other,
    }
}
