//! The Codex CLI backend: decoders for `codex exec --json` and `codex app-server` output.
//!
//! Both decoders are pure (one line in, events out) and never panic or drop a line: anything
//! they cannot map becomes a `raw` event, and unknown lines are counted. Tool items map onto the
//! Claude adapter's kinds: commands are tool `shell` with input `{command, cwd}`, file changes
//! tool `apply_patch` with input `{changes}`, MCP calls `mcp__<server>__<tool>`.

pub mod appserver;
mod backend;
pub mod exec;
mod exec_session;
mod exit;
mod item;
mod launch;
mod leftovers;
mod retry;
mod sandbox;
mod session;
mod wire;

use std::fmt;

use nucleic_protocol::{ErrorCode, ErrorEvent, EventKind, RawJson};
use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use serde_json::Value;

pub use appserver::AppServerDecoder;
pub use backend::{CODEX, TESTED_CODEX};
pub use exec::ExecDecoder;
pub use exec_session::{
    CODEX_EXEC_CAPABILITIES, CodexExecHandle, CodexExecOptions, EXEC_SANDBOXES, spawn_codex_exec,
};
pub use exit::{CodexExit, classify_codex};
pub use item::{PATCH_TOOL, SHELL_TOOL};
pub use launch::{
    APPROVAL_POLICIES, CodexOptions, DEFAULT_PROVIDER_TIMEOUT, PERMISSION_MODES, SANDBOX_MODES,
    codex_policy,
};
pub use sandbox::{
    CREDENTIAL_FILES, CREDENTIAL_VARIABLES, CommandSandbox as CodexCommandSandbox, PROFILE,
};
pub use session::{CODEX_CAPABILITIES, CodexHandle, spawn_codex};
pub(crate) use {exec_session::run_codex_exec, session::run_codex};

/// What one line decoded to; native types are `thread.started`,
/// `item.completed:command_execution`, `turn/completed`, `item/started:fileChange`,
/// `response`, … (`invalid` for a line that is not JSON).
pub type DecodedLine = crate::supervisor::DecodedLine<ControlIn>;

/// A JSON-RPC id: codex numbers its own requests from 0 and accepts numbers or strings from us.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    Number(i64),
    Text(String),
}

impl RequestId {
    /// The id as it goes back on the wire.
    pub fn to_json(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::Text(s) => Value::String(s.clone()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::Text(s) => f.write_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC id (integer or string)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v).map(RequestId::Number).map_err(E::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::Text(v.to_owned()))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// Which approval codex asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKind {
    /// `item/commandExecution/requestApproval`: answer `{"decision": "accept" | "acceptForSession"
    /// | "decline" | "cancel" | {"acceptWithExecpolicyAmendment": …}}`.
    Command,
    /// `item/fileChange/requestApproval`: answer `{"decision": "accept" | "acceptForSession" |
    /// "decline" | "cancel"}`.
    FileChange,
}

/// A JSON-RPC error codex returned for one of our requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// Traffic the adapter must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlIn {
    /// codex waits for a decision on this server request; it never times out on its own.
    ApprovalAsked {
        request_id: RequestId,
        kind: ApprovalKind,
        /// The command or file-change item (the model's call id).
        item_id: String,
        thread_id: Option<String>,
        turn_id: Option<String>,
    },
    /// A server request we do not serve: answer it with a JSON-RPC error (codex then fails the
    /// call closed) rather than leaving it pending.
    Unsupported { request_id: RequestId, method: String },
    /// codex answered one of our requests (`initialize`, `thread/start`, `turn/start`, …).
    Response { id: RequestId, outcome: Result<Value, RpcError> },
    /// A server request was resolved (answered, or voided by an interrupt): stop offering it.
    RequestResolved { request_id: RequestId },
    /// A turn began (its id is what `turn/interrupt` needs).
    TurnStarted { thread_id: Option<String>, turn_id: String },
    /// A turn ended (`completed`, `interrupted` or `failed`): approvals still open are void.
    TurnEnded { status: String },
}

/// `raw`, plus a decode `error` when the line is not JSON at all.
pub(crate) fn unknown_events(line: &str, not_json: bool, error: Option<String>) -> Vec<EventKind> {
    let mut events = vec![EventKind::raw(RawJson::from_any_text(line))];
    if not_json {
        events.push(EventKind::Error(ErrorEvent {
            code: ErrorCode::Decode,
            message: format!(
                "agent wrote a line that is not JSON ({} bytes): {}",
                line.len(),
                error.unwrap_or_default()
            ),
            http_status: None,
        }));
    }
    events
}
