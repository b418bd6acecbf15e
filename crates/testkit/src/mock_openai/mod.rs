//! A scriptable mock of the OpenAI Responses and Chat Completions APIs on loopback, for driving
//! the real `codex` CLI (Responses) and OpenCode, Qwen Code and Copilot (Chat Completions).
//!
//! Endpoints: `POST /v1/responses` and `POST /v1/chat/completions` (SSE when `stream: true`,
//! JSON otherwise; the same script answers both) and `GET /v1/models`;
//! anything else is a recorded 404. Which scripted reply answers a request is decided by
//! [`Script::reply_index`] from the tool outputs in its `input`. Point codex at it with a
//! provider in `$CODEX_HOME/config.toml` (see [`codex_config_toml`]).

mod chat;
mod script;
mod server;
mod sse;

pub use crate::mock_http::RecordedRequest;
pub use chat::{side_request, tool_messages};
pub use script::{
    Computed, Fault, FaultKind, Reply, Script, ToolCall, add_file_patch, last_tool_output,
    tool_outputs_since_prompt,
};

use crate::mock_http::MockServer;

/// The environment variable [`codex_config_toml`] names for the provider's key.
pub const API_KEY_ENV: &str = "MOCK_API_KEY";

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockOpenAi {
    server: MockServer<Script>,
}

impl MockOpenAi {
    /// Bind `127.0.0.1:0` and serve `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockOpenAi> {
        Ok(MockOpenAi { server: MockServer::start(script, server::handle).await? })
    }

    /// `http://127.0.0.1:PORT/v1`, for the provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// Replace the scenario and reset the fault counter.
    pub fn set_script(&self, script: Script) {
        self.server.set_script(script);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

/// A `$CODEX_HOME/config.toml` that sends codex to `base_url` only: model `gpt-5.5` (a catalog
/// name, so codex advertises `exec_command` and the freeform `apply_patch`), provider `mock`
/// reading its key from [`API_KEY_ENV`], one retry per request and stream, a 10 s stream idle
/// timeout, and update checks, analytics and feedback off.
pub fn codex_config_toml(base_url: &str) -> String {
    format!(
        r#"model = "{model}"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock OpenAI"
base_url = "{base_url}"
env_key = "{API_KEY_ENV}"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 10000

[analytics]
enabled = false

[feedback]
enabled = false
"#,
        model = server::MODEL,
    )
}
