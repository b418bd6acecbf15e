//! Agents that speak the Agent Client Protocol (JSON-RPC 2.0 over stdio): one decoder and one
//! adapter for all of them, and a profile per agent (command, environment, mode names, quirks).
//!
//! - `backend`: Gemini CLI's row ([`GEMINI_CLI`]: launch, modes, models, confinement needs).
//! - `opencode`, `qwen`: OpenCode's and Qwen Code's profiles and rows.
//! - `profile`: [`AcpProfile`] (Gemini CLI: [`GEMINI`]) and the launch options ([`AcpOptions`]).
//! - `wire`: the ACP lines Nucleic reads, as serde types (our own: the `agent-client-protocol`
//!   crate's runtime kills the agent's process group when its guard drops, and agents here
//!   outlive the host under keepers; its types alone would add `schemars` and more to the build).
//! - `decode`: [`AcpDecoder`], one line in, events out: message and thought chunks, tool calls
//!   and their updates, permission requests, the prompt's stop reason; the rest kept `raw`.
//! - `session`: [`AcpHandle`], the client side: `initialize` (under a deadline) → `session/new`
//!   → `session/prompt`, `session/cancel`, permission replies; `protocol`: what the supervisor
//!   calls; `fs`: `fs/read_text_file` / `fs/write_text_file` answered inside the worktree only.

mod backend;
mod decode;
mod fs;
mod opencode;
mod profile;
mod qwen;
mod session;
mod wire;

pub use crate::codex::RequestId;
pub use backend::{GEMINI_CLI, GEMINI_READ_ONLY, GEMINI_READ_ONLY_DIRS};
pub use decode::AcpDecoder;
pub use opencode::{OPENCODE, OPENCODE_CLI, OPENCODE_PERMISSION, TESTED_OPENCODE};
pub use profile::{AcpOptions, AcpProfile, DEFAULT_SETUP_DEADLINE, GEMINI, TESTED_GEMINI};
pub use qwen::{QWEN, QWEN_CODE, TESTED_QWEN};
pub(crate) use session::run_acp;
pub use session::{ACP_CAPABILITIES, AcpHandle, spawn_acp};

/// What one line decoded to; native types are the method (`session/update:tool_call`,
/// `session/request_permission`, `fs/write_text_file`), `response`, `response/error`, or
/// `invalid` for a line that is not JSON.
pub type DecodedLine = crate::supervisor::DecodedLine<AcpControl>;

/// One option of a permission request, as the agent offered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    pub option_id: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`.
    pub kind: String,
}

/// Traffic the adapter must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum AcpControl {
    /// The agent answered one of our requests.
    Response { id: RequestId, outcome: Result<serde_json::Value, RpcError> },
    /// `session/request_permission`: the agent waits for one of `options`.
    PermissionAsked { id: RequestId, options: Vec<PermissionOption> },
    /// `fs/read_text_file`: the agent reads a file through us.
    ReadFile { id: RequestId, path: String, line: Option<u64>, limit: Option<u64> },
    /// `fs/write_text_file`: the agent writes a file through us.
    WriteFile { id: RequestId, path: String, content: String },
    /// A request we do not serve: answered "method not found", the turn goes on.
    Unsupported { id: RequestId, method: String },
}

/// A JSON-RPC error the agent returned for one of our requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}
