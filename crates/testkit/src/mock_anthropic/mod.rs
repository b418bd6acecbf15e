//! A scriptable mock of the Anthropic Messages API on loopback, for driving the real `claude` CLI.
//!
//! Endpoints: `POST /v1/messages` (SSE when `stream: true`, JSON otherwise), `POST
//! /v1/messages/count_tokens`, `GET /v1/models`; anything else is a recorded 404. Which scripted
//! reply answers a request is decided by [`reply_index`] from the conversation in its body; a
//! request without tools (a side query of the CLI) gets [`SIDE_QUERY_ANSWER`].

mod prompted;
mod script;
mod server;
mod sse;

pub use crate::mock_http::RecordedRequest;
pub use prompted::{DEFAULT_CONTENT, DEFAULT_PATH, named_file};
pub use script::{
    Computed, Fault, FaultKind, Reply, Script, ToolCall, last_tool_result, reply_index,
};
pub use server::SIDE_QUERY_ANSWER;

use crate::mock_http::MockServer;

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockAnthropic {
    server: MockServer<Script>,
}

impl MockAnthropic {
    /// Bind `127.0.0.1:0` and serve `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockAnthropic> {
        Ok(MockAnthropic { server: MockServer::start(script, server::handle).await? })
    }

    /// As [`MockAnthropic::start`], on `127.0.0.1:port` (0: any free port).
    pub async fn start_on(port: u16, script: Script) -> std::io::Result<MockAnthropic> {
        Ok(MockAnthropic { server: MockServer::start_on(port, script, server::handle).await? })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
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
