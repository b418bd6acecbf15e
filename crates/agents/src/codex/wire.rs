//! `codex app-server` JSON-RPC lines as typed values: only the fields Nucleic reads. A line is
//! split into its envelope first (`params`/`result` kept as raw JSON), and `params` is parsed
//! only for the methods that map to events.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::RequestId;
use super::item::Item;

/// Any line from the server: a response (`id` + `result`/`error`), a notification (`method`),
/// or a server request (`method` + `id`).
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    pub id: Option<RequestId>,
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub result: Option<&'a RawValue>,
    pub error: Option<RpcErrorBody>,
}

#[derive(Deserialize)]
pub(crate) struct RpcErrorBody {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
}

/// The `params` of every mapped notification and server request, in one flat struct.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Params {
    pub thread_id: Option<String>,
    pub turn_id: Option<String>,
    pub item_id: Option<String>,
    pub item: Option<Item>,
    pub delta: Option<String>,
    pub thread: Option<ThreadInfo>,
    pub turn: Option<TurnInfo>,
    pub token_usage: Option<TokenUsage>,
    pub error: Option<TurnError>,
    #[serde(default)]
    pub will_retry: bool,
    pub request_id: Option<RequestId>,
    pub reason: Option<String>,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub grant_root: Option<String>,
    pub message: Option<String>,
}

/// The `result` of `thread/start`, `thread/resume` and `thread/fork`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadResult {
    pub thread: Option<ThreadInfo>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    pub approval_policy: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadInfo {
    pub id: String,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub cli_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnInfo {
    pub id: String,
    pub status: Option<String>,
    pub error: Option<TurnError>,
    pub duration_ms: Option<u64>,
}

/// `error` notifications and failed turns: `codexErrorInfo` is a string (`"other"`) or a
/// one-key object (`{"responseStreamDisconnected": {"httpStatusCode": 429}}`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnError {
    #[serde(default)]
    pub message: String,
    pub codex_error_info: Option<Value>,
    pub additional_details: Option<String>,
}

impl TurnError {
    /// The `codexErrorInfo` variant name and its HTTP status, if any.
    pub(crate) fn info(&self) -> (Option<&str>, Option<u16>) {
        match &self.codex_error_info {
            Some(Value::String(s)) => (Some(s.as_str()), None),
            Some(Value::Object(o)) => match o.iter().next() {
                Some((name, body)) => {
                    let status = body
                        .get("httpStatusCode")
                        .and_then(Value::as_u64)
                        .and_then(|s| u16::try_from(s).ok());
                    (Some(name.as_str()), status)
                }
                None => (None, None),
            },
            _ => (None, None),
        }
    }

    /// The message, with codex's additional details when it gave some.
    pub(crate) fn full_message(&self) -> String {
        match self.additional_details.as_deref().filter(|d| !d.is_empty() && *d != self.message) {
            Some(details) => format!("{} ({details})", self.message),
            None => self.message.clone(),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct TokenUsage {
    pub total: Breakdown,
}

/// Token counts; the thread's running `total` is what the decoder tracks.
#[derive(Deserialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Breakdown {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

impl Breakdown {
    pub(crate) fn minus(self, earlier: Breakdown) -> Breakdown {
        Breakdown {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}
