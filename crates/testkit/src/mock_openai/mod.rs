//! A scriptable mock of the OpenAI Responses API on loopback, for driving the real `codex` CLI.
//!
//! Endpoints: `POST /v1/responses` (SSE when `stream: true`, JSON otherwise) and `GET /v1/models`;
//! anything else is a recorded 404. Which scripted reply answers a request is decided by
//! [`Script::reply_index`] from the tool outputs in its `input`. Point codex at it with a
//! provider in `$CODEX_HOME/config.toml` (see [`codex_config_toml`]).

// The connection guard is the Anthropic mock's (private there): compiled again here rather than
// copied. Moving it to a shared testkit module would drop this `allow`.
#[allow(clippy::duplicate_mod)]
#[path = "../mock_anthropic/listener.rs"]
mod listener;
mod script;
mod server;
mod sse;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use crate::mock_anthropic::RecordedRequest;
pub use script::{
    Fault, FaultKind, Reply, Script, ToolCall, add_file_patch, tool_outputs_since_prompt,
};

use listener::GuardedListener;
use server::Shared;

/// The environment variable [`codex_config_toml`] names for the provider's key.
pub const API_KEY_ENV: &str = "MOCK_API_KEY";

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    /// Dropping it breaks every open connection and wakes the requests that hang.
    _shutdown: watch::Sender<()>,
}

impl MockOpenAi {
    /// Bind `127.0.0.1:0` and serve `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockOpenAi> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (shutdown_tx, shutdown_rx) = watch::channel(());
        let listener = GuardedListener::new(listener, shutdown_rx.clone());
        let shared = Arc::new(Shared::new(script, shutdown_rx));
        let app = Router::new().fallback(server::handle).with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            // serve only returns on an accept loop failure; nothing to report to anyone then.
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockOpenAi { addr, shared, task, _shutdown: shutdown_tx })
    }

    /// `http://127.0.0.1:PORT/v1`, for the provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Replace the scenario and reset the fault counter.
    pub fn set_script(&self, script: Script) {
        self.shared.set_script(script);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        // Stops accepting; `_shutdown` is dropped right after, which breaks open connections.
        self.task.abort();
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
