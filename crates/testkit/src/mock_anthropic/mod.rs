//! A scriptable mock of the Anthropic Messages API on loopback, for driving the real `claude` CLI.
//!
//! Endpoints: `POST /v1/messages` (SSE when `stream: true`, JSON otherwise), `POST
//! /v1/messages/count_tokens`, `GET /v1/models`; anything else is a recorded 404. Which scripted
//! reply answers a request is decided by [`reply_index`] from the conversation in its body.

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

pub use script::{Fault, FaultKind, Reply, Script, ToolCall, reply_index};
pub use server::RecordedRequest;

use listener::GuardedListener;
use server::Shared;

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    /// Dropping it breaks every open connection and wakes the requests that hang.
    _shutdown: watch::Sender<()>,
}

impl MockAnthropic {
    /// Bind `127.0.0.1:0` and serve `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockAnthropic> {
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
        Ok(MockAnthropic { addr, shared, task, _shutdown: shutdown_tx })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
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

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        // Stops accepting; `_shutdown` is dropped right after, which breaks open connections.
        self.task.abort();
    }
}
