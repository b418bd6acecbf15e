//! Wire format: builds the stdout JSON lines (shapes copied from Claude Code 2.1.332).

use serde_json::{Value, json};
use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// The version string reported in `system/init` and `initialize`.
pub const SIM_VERSION: &str = "0.1.0-sim";

/// Writes one JSON object per line and flushes after each.
#[derive(Debug)]
pub struct Wire<W: Write> {
    out: W,
}

impl<W: Write> Wire<W> {
    /// Wraps a writer.
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Writes `value` as one line and flushes.
    pub fn emit(&mut self, value: &Value) -> io::Result<()> {
        let mut line = serde_json::to_string(value).map_err(io::Error::other)?;
        line.push('\n');
        self.raw(&line)
    }

    /// Writes raw text (used for the deliberately malformed line) and flushes.
    pub fn raw(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

/// A fresh random UUID (v4) as text.
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A prefixed random id like `toolu_0123…` (24 hex digits, as the real ids).
pub fn prefixed_id(prefix: &str) -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}{}", &hex[..24])
}

/// The current time as `2026-11-29T19:54:40.117Z`.
pub fn timestamp() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format_timestamp(since.as_secs(), since.subsec_millis())
}

/// Formats seconds since the Unix epoch (UTC) plus milliseconds.
pub fn format_timestamp(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// The small, fixed usage block carried by assistant lines and stream events.
pub fn message_usage(input_tokens: u64, output_tokens: u64) -> Value {
    json!({
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

/// Session-wide values every line needs.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The session id.
    pub session_id: String,
    /// The current model name.
    pub model: String,
}

impl Ctx {
    /// A `stream_event` line wrapping `event`.
    pub fn stream_event(&self, api_message_id: &str, event: Value) -> Value {
        let mut line = json!({
            "type": "stream_event",
            "event": event,
            "session_id": self.session_id,
            "parent_tool_use_id": null,
            "uuid": uuid(),
            "api_message_id": api_message_id,
        });
        if line["event"]["type"] == "message_start" {
            line["ttft_ms"] = json!(1);
            line["thinking_display"] = json!("updates");
        }
        line
    }

    /// The `message_start` event for a simulated API message.
    pub fn message_start(&self, api_message_id: &str, input_tokens: u64) -> Value {
        self.stream_event(
            api_message_id,
            json!({
                "type": "message_start",
                "message": {
                    "id": api_message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": message_usage(input_tokens, 1),
                },
            }),
        )
    }

    /// The `message_delta` event closing a simulated API message.
    pub fn message_delta(
        &self,
        api_message_id: &str,
        stop_reason: Option<&str>,
        out: u64,
    ) -> Value {
        self.stream_event(
            api_message_id,
            json!({
                "type": "message_delta",
                "context_management": null,
                "delta": {"container": null, "stop_details": null, "stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": out, "input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            }),
        )
    }

    /// One `assistant` line carrying a single content block.
    pub fn assistant(
        &self,
        api_message_id: &str,
        request_id: &str,
        block: Value,
        input_tokens: u64,
    ) -> Value {
        json!({
            "type": "assistant",
            "message": {
                "id": api_message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": message_usage(input_tokens, 1),
                "context_management": null,
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid(),
            "timestamp": timestamp(),
            "request_id": request_id,
        })
    }

    /// The synthetic assistant line the real CLI emits after an API failure.
    pub fn api_error_assistant(&self, text: &str) -> Value {
        json!({
            "type": "assistant",
            "message": {
                "diagnostics": null,
                "id": uuid(),
                "container": null,
                "model": "<synthetic>",
                "role": "assistant",
                "stop_details": null,
                "stop_reason": "stop_sequence",
                "stop_sequence": "",
                "type": "message",
                "usage": {
                    "output_tokens_details": null, "input_tokens": 0, "output_tokens": 0,
                    "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                    "service_tier": null,
                    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
                    "inference_geo": null, "iterations": null, "speed": null, "fallback_credit": null,
                },
                "content": [{"type": "text", "text": text}],
                "context_management": null,
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid(),
            "timestamp": timestamp(),
            "error": "server_error",
            "is_api_error_message": true,
            "api_error": "server_error",
        })
    }

    /// A `user` line with plain text content (interrupt markers).
    pub fn user_text(&self, text: &str) -> Value {
        json!({
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid(),
            "timestamp": timestamp(),
        })
    }

    /// A `user` line carrying one tool result.
    pub fn user_tool_result(&self, out: &ToolResultLine) -> Value {
        let mut block = json!({
            "tool_use_id": out.tool_use_id,
            "type": "tool_result",
            "content": out.content,
        });
        if out.is_error {
            block["is_error"] = json!(true);
        }
        json!({
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid(),
            "timestamp": timestamp(),
            "tool_use_result": out.tool_use_result,
            "tool_result_meta": [{"id": out.tool_use_id, "permission_decision": out.decision}],
        })
    }

    /// A `system` line of the given subtype with extra fields merged in.
    pub fn system(&self, subtype: &str, fields: Value) -> Value {
        let mut line = json!({"type": "system", "subtype": subtype});
        if let (Some(line_map), Value::Object(extra)) = (line.as_object_mut(), fields) {
            line_map.extend(extra);
            line_map.insert("uuid".into(), json!(uuid()));
            line_map.insert("session_id".into(), json!(self.session_id));
        }
        line
    }
}

/// What goes into a tool-result `user` line.
#[derive(Debug, Clone)]
pub struct ToolResultLine {
    /// The tool_use id answered.
    pub tool_use_id: String,
    /// The text the model sees.
    pub content: String,
    /// Whether the call failed or was denied.
    pub is_error: bool,
    /// The structured `tool_use_result` (an error string for failures).
    pub tool_use_result: Value,
    /// `tool_result_meta[].permission_decision`.
    pub decision: Value,
}

/// Fields of a `result` line.
#[derive(Debug, Clone)]
pub struct ResultLine {
    /// `success`, `error_during_execution`, ...
    pub subtype: &'static str,
    /// Whether the turn failed.
    pub is_error: bool,
    /// The final text (`None` for error subtypes, which carry `errors` instead).
    pub result: Option<String>,
    /// Simulated API calls in the turn.
    pub num_turns: u64,
    /// Tokens in / out for the turn.
    pub usage: (u64, u64),
    /// `permission_denials` entries.
    pub permission_denials: Vec<Value>,
    /// `completed`, `aborted_streaming`, `aborted_tools`, `api_error`.
    pub terminal_reason: &'static str,
    /// `end_turn`, `stop_sequence` or null.
    pub stop_reason: Option<&'static str>,
    /// Set for API errors.
    pub api_error_status: Option<u16>,
    /// Wall time of the turn.
    pub duration_ms: u64,
    /// `errors` for error subtypes.
    pub errors: Vec<String>,
    /// Index of this result within the process.
    pub result_index: u64,
}

impl Ctx {
    /// A `result` line. Costs are always 0: there is no model.
    pub fn result(&self, r: &ResultLine) -> Value {
        let mut line = json!({
            "type": "result",
            "subtype": r.subtype,
            "is_error": r.is_error,
            "num_turns": r.num_turns,
            "session_id": self.session_id,
            "total_cost_usd": 0,
            "usage": {
                "input_tokens": r.usage.0,
                "output_tokens": r.usage.1,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "output_tokens_details": {"thinking_tokens": 0},
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {},
            "model_usage_since_last_result": {},
            "permission_denials": r.permission_denials,
            "terminal_reason": r.terminal_reason,
            "stop_reason": r.stop_reason,
            "api_error_status": r.api_error_status,
            "duration_ms": r.duration_ms,
            "duration_api_ms": 0,
            "fast_mode_state": "off",
            "queued_turn_count": 0,
            "result_index": r.result_index,
            "uuid": uuid(),
        });
        if let Some(text) = &r.result {
            line["result"] = json!(text);
        }
        if r.subtype != "success" {
            line["errors"] = json!(r.errors);
        }
        line
    }
}

/// A successful `control_response`.
pub fn control_ok(request_id: &Value, response: Value) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
}

/// An error `control_response`.
pub fn control_err(request_id: &Value, error: &str, code: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error, "error_code": code},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_utc() {
        assert_eq!(format_timestamp(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_timestamp(1_795_982_080, 117), "2026-11-29T19:54:40.117Z");
        assert_eq!(format_timestamp(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(timestamp().len(), 24);
    }

    #[test]
    fn ids_look_real() {
        let id = prefixed_id("toolu_");
        assert_eq!(id.len(), 6 + 24);
        assert_ne!(id, prefixed_id("toolu_"));
    }

    #[test]
    fn lines_are_flushed_json() {
        let mut buf = Vec::new();
        let mut wire = Wire::new(&mut buf);
        let ctx = Ctx { session_id: "s".into(), model: "m".into() };
        wire.emit(&ctx.system("status", json!({"status": null, "permissionMode": "plan"})))
            .unwrap();
        let line: Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(line["subtype"], "status");
        assert_eq!(line["permissionMode"], "plan");
        assert_eq!(line["session_id"], "s");
        assert!(buf.ends_with(b"\n"));
    }
}
