//! Claude Code's stdout lines as typed values: only the fields Nucleic reads (everything else is
//! kept verbatim in `raw` events). Every enum ends in a catch-all so that a new CLI version
//! cannot break decoding. [`super::flat`] parses lines into these.

use std::collections::BTreeMap;

use serde_json::Value;

/// One stdout line, by its `type`.
#[derive(Debug)]
pub(crate) enum Line {
    System(SystemLine),
    Assistant(MessageLine),
    User(MessageLine),
    StreamEvent(StreamEventLine),
    Result(ResultLine),
    ControlRequest(ControlRequestLine),
    ControlResponse(ControlResponseLine),
    RateLimitEvent(RateLimitLine),
    Unknown,
}

/// `type: system`, all subtypes in one struct (fields are per subtype).
#[derive(Debug, Default)]
pub(crate) struct SystemLine {
    pub subtype: String,
    // init
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub tools: Option<Vec<String>>,
    pub permission_mode: Option<String>,
    pub claude_code_version: Option<String>,
    // api_retry
    pub attempt: Option<u32>,
    pub max_retries: Option<u32>,
    pub retry_delay_ms: Option<u64>,
    pub error_status: Option<u16>,
    pub error: Option<String>,
    // permission_denied
    pub tool_name: Option<String>,
    pub tool_use_id: Option<String>,
    pub message: Option<String>,
}

/// `type: assistant` and `type: user`: one API message (assistant lines carry one block each).
#[derive(Debug)]
pub(crate) struct MessageLine {
    pub message: Message,
    pub parent_tool_use_id: Option<String>,
    pub is_api_error_message: bool,
    pub is_replay: bool,
}

#[derive(Debug)]
pub(crate) struct Message {
    pub id: Option<String>,
    pub content: Content,
}

/// Message content: a plain string or content blocks.
#[derive(Debug)]
pub(crate) enum Content {
    Blocks(Vec<Block>),
    Text(String),
}

#[derive(Debug)]
pub(crate) enum Block {
    Text { text: String },
    Thinking { thinking: String },
    ToolUse { id: String, name: String, input: Value },
    ToolResult { tool_use_id: String, content: Value, is_error: Option<bool> },
    Other,
}

/// `type: stream_event` (with `--include-partial-messages`).
#[derive(Debug)]
pub(crate) struct StreamEventLine {
    pub event: StreamEvent,
    pub api_message_id: Option<String>,
    pub parent_tool_use_id: Option<String>,
}

#[derive(Debug)]
pub(crate) enum StreamEvent {
    MessageStart,
    ContentBlockStart { index: u32, content_block: StartBlock },
    ContentBlockDelta { index: u32, delta: Delta },
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Ping,
    Other,
}

#[derive(Debug)]
pub(crate) enum StartBlock {
    ToolUse { id: String, name: String },
    Other,
}

#[derive(Debug)]
#[allow(clippy::enum_variant_names)] // the names are the wire's
pub(crate) enum Delta {
    TextDelta { text: String },
    ThinkingDelta { thinking: String },
    InputJsonDelta { partial_json: String },
    Other,
}

/// `type: result`: the end of a turn. API errors arrive as `subtype: success` + `is_error: true`.
#[derive(Debug)]
pub(crate) struct ResultLine {
    pub subtype: String,
    pub is_error: bool,
    pub result: Option<String>,
    pub stop_reason: Option<String>,
    pub terminal_reason: Option<String>,
    pub api_error_status: Option<u16>,
    pub total_cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    pub usage: ResultUsage,
    pub model_usage_since_last_result: Option<BTreeMap<String, ModelUsage>>,
    pub errors: Vec<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct ResultUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ModelUsage {
    #[serde(default, rename = "costUSD")]
    pub cost_usd: f64,
}

/// `type: control_request` from the CLI (permission asks, hook callbacks, SDK MCP messages).
#[derive(Debug)]
pub(crate) struct ControlRequestLine {
    pub request_id: String,
    pub request: ControlRequestBody,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ControlRequestBody {
    pub subtype: String,
    pub tool_name: Option<String>,
    pub input: Option<Value>,
    pub description: Option<String>,
    pub tool_use_id: Option<String>,
    pub blocked_path: Option<String>,
}

/// `type: control_response`: the CLI's answer to one of our control requests.
#[derive(Debug)]
pub(crate) struct ControlResponseLine {
    pub response: ControlResponseBody,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ControlResponseBody {
    pub subtype: String,
    pub request_id: Option<String>,
    pub error: Option<String>,
    pub response: Option<Value>,
}

/// `type: rate_limit_event` (seen on subscription accounts; shape as in the seed export).
#[derive(Debug)]
pub(crate) struct RateLimitLine {
    pub rate_limit_info: Option<RateLimitInfo>,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct RateLimitInfo {
    pub status: Option<String>,
    #[serde(rename = "resetsAt")]
    pub resets_at: Option<Value>,
    #[serde(rename = "rateLimitType")]
    pub rate_limit_type: Option<String>,
    #[serde(rename = "overageStatus")]
    pub overage_status: Option<String>,
    #[serde(rename = "isUsingOverage")]
    pub is_using_overage: Option<bool>,
}
