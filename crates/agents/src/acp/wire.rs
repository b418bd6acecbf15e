//! ACP JSON-RPC lines as typed values: only the fields Nucleic reads. The envelope is split
//! first; `params` and `result` stay JSON until the method says what they are.

use serde::Deserialize;
use serde_json::Value;

use super::RequestId;

/// Any line from the agent: a response (`id` + `result`/`error`), a notification (`method`),
/// or a request of the agent's (`method` + `id`).
#[derive(Deserialize)]
pub(crate) struct Envelope {
    pub id: Option<RequestId>,
    pub method: Option<String>,
    pub params: Option<Value>,
    pub result: Option<Value>,
    pub error: Option<RpcErrorBody>,
}

#[derive(Deserialize)]
pub(crate) struct RpcErrorBody {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
    pub data: Option<Value>,
}

/// `session/update`'s `params.update`, flattened over the kinds Nucleic maps.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Update {
    pub session_update: String,
    pub content: Option<Value>,
    #[serde(flatten)]
    pub call: ToolCallFields,
}

/// A tool call or its update (also `request_permission`'s `toolCall`).
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallFields {
    pub tool_call_id: Option<String>,
    pub title: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub raw_input: Option<Value>,
    pub raw_output: Option<Value>,
    pub locations: Option<Vec<Location>>,
}

#[derive(Deserialize, Default, Clone)]
pub(crate) struct Location {
    pub path: String,
}

/// `session/request_permission`'s params.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionParams {
    pub tool_call: Option<Value>,
    #[serde(default)]
    pub options: Vec<OptionBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OptionBody {
    pub option_id: String,
    #[serde(default)]
    pub kind: String,
}

/// `fs/read_text_file` and `fs/write_text_file` params.
#[derive(Deserialize, Default)]
pub(crate) struct FileParams {
    #[serde(default)]
    pub path: String,
    pub content: Option<String>,
    pub line: Option<u64>,
    pub limit: Option<u64>,
}
