//! The event envelope: `seq`, `at`, `sessionID`, `backend`, `nativeType` around one `kind`.

use serde::{Deserialize, Serialize};

use crate::kind::EventKind;
use crate::timestamp::Timestamp;

/// One normalized event of one session. `seq` starts at 1 and grows by exactly 1 per event; it is
/// assigned by the session's single writer, never by a backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Event {
    pub seq: u64,
    #[cfg_attr(test, ts(type = "string"), schemars(with = "String"))]
    pub at: Timestamp,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub backend: Backend,
    /// The native line's type (`system/init`, `assistant`, `result`, …); absent for events the
    /// host makes itself (user input, status changes, the end of a run).
    #[serde(rename = "nativeType", default, skip_serializing_if = "Option::is_none")]
    pub native_type: Option<String>,
    pub kind: EventKind,
    /// Where in the agent's output this event came from: `<run>/<stream><offset>.<index>`
    /// (`o` stdout or `e` stderr, the byte offset just past its line, its place among that
    /// line's events). A restarted host resumes an agent it re-adopts right after the last
    /// origin written, so nothing is lost or repeated. Absent for events the host makes and
    /// for agents not run by a keeper. Clients may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// Which agent backend produced a session's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Backend {
    /// Anthropic's Claude Code CLI (stream-json + stdio control protocol).
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Nucleic's built-in simulated agent (speaks the Claude Code wire protocol, no model).
    Simulated,
    /// Google's Gemini CLI, over the Agent Client Protocol (`gemini --acp`).
    Gemini,
    /// OpenCode, over the Agent Client Protocol (`opencode acp`).
    OpenCode,
    /// Qwen Code, over the Agent Client Protocol (`qwen --acp`).
    Qwen,
}

impl Backend {
    /// The wire name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::ClaudeCode => "claudeCode",
            Backend::Codex => "codex",
            Backend::Simulated => "simulated",
            Backend::Gemini => "gemini",
            Backend::OpenCode => "openCode",
            Backend::Qwen => "qwen",
        }
    }
}
