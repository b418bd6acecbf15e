//! The daemon's network face: the sync protocol (`docs/protocol.md`) over a WebSocket (`/ws`)
//! and one-shot HTTP (`POST /api/message`), bound to loopback, behind a bearer token and
//! Host/Origin checks. All behaviour lives in `nucleic_host::Host`; this crate only frames,
//! authenticates and routes.

mod auth;
mod connection;
mod dispatch;
mod http;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use nucleic_host::Host;

pub use auth::{TOKEN_FILE, load_or_create_token};

/// What every request handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub host: Arc<Host>,
    token: Arc<str>,
    /// `Host` header values accepted (the bound address under its names).
    allowed_hosts: Arc<Vec<String>>,
}

impl AppState {
    /// State for a server bound to `addr`, accepting `token`.
    pub fn new(host: Arc<Host>, token: String, addr: SocketAddr) -> AppState {
        let port = addr.port();
        let mut allowed =
            vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        if !addr.ip().is_loopback() {
            allowed.push(addr.to_string());
        }
        AppState { host, token: token.into(), allowed_hosts: Arc::new(allowed) }
    }
}

/// The routes, behind the auth layer.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/ws", get(connection::upgrade))
        .route("/api/message", post(http::message))
        .route("/api/health", get(http::health))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(axum::extract::DefaultBodyLimit::max(nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES))
        .with_state(state)
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // Events are small and latency-sensitive: without TCP_NODELAY, Nagle plus delayed ACKs
    // added ~40 ms stalls (see docs/benchmarks.md).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await
}
