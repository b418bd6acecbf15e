//! The daemon's network face: the sync protocol (`docs/protocol.md`) over a WebSocket (`/ws`)
//! and one-shot HTTP (`POST /api/message`), the embedded web app, and device sign-in, bound to
//! loopback, behind the host's bearer token or a device key proven in `hello`, and Host/Origin
//! checks. All behaviour
//! lives in `nucleic_host::Host`; this crate only frames, authenticates and routes.
//!
//! - `auth`: bearer-token auth and the Host/Origin checks on every route.
//! - `devices` (`devices.rs`): device proofs in `hello`: single-use challenges, ECDSA P-256 keys
//!   registered with one-time links; revoked connections closed.
//! - `connection` (`connection.rs`, over `wire.rs`): one connection loop for every carrier (a
//!   WebSocket, or a device's Noise channel): the hello handshake, `unsupported` / `badMessage` /
//!   `tooLarge` replies, verbosity filtering, `sessionChanged` pushes.
//! - `wire`: what a connection is carried on, whatever carries it.
//! - `dispatch`: parsing a text frame into a `ClientMessage`; the answer (the one host call
//!   behind it, idempotent message ids for changes) is `nucleic_host::api`'s.
//! - `http`: one-shot `POST /api/message`.
//! - `follow`: one client's stream of one session, catch-up then live, across resumes.
//! - `batch` (`batch.rs`): event frames: a client's [`EventRun`] of a shared batch, framed as
//!   `event` messages or, for clients that announce `eventBatches`, `events` messages of up to 512.
//! - [`remote`] (`remote/`): remote access: the relay connection with backoff and its status file,
//!   its TCP/TLS dialling (`dial.rs`: rustls on ring, Mozilla's roots plus `--relay-ca`, `ws://`
//!   only to loopback), device streams, pairing links, the host's remote identity, the opt-in LAN
//!   listener serving only the channel.
//! - `accept` (`accept.rs`): its own accept loop ([`Listener`]): TCP or the daemon's Unix socket,
//!   connection cap, header-read timeout.
//! - `limits` (`limits.rs`): per-connection bounds ([`ServerLimits`]); `outbox` (`outbox.rs`): a
//!   byte-bounded outbox, pings, slow readers dropped.
//! - `headers` (`headers.rs`): hardening headers: CSP, no framing.
//! - `web` (`web.rs`): the web app's assets: `build.rs` copies `web/dist` — or a "not built" page
//!   — into `OUT_DIR` with gzipped twins, `rust-embed` puts them in the binary.
//! - `signin` (`signin.rs`): sign-in links: one-time tokens a browser trades for a device
//!   registration, `/api/login-link`.

mod accept;
mod auth;
mod batch;
mod connection;
mod devices;
mod dispatch;
mod follow;
mod headers;
mod http;
mod limits;
mod outbox;
pub mod remote;
mod signin;
mod web;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use nucleic_host::Host;

pub use accept::Listener;
pub use auth::{TOKEN_FILE, load_or_create_token};
/// A client's share of a session's written batch, and the frames its connection sends for
/// queued shares (for the fan-out bench).
pub use batch::{EventRun, each_frame as each_event_frame};
pub use devices::{CHALLENGE_TTL, device_name};
/// Parses a client's text frame (for fuzzing the parser that reads untrusted frames).
pub use dispatch::parse as parse_client_frame;
pub use headers::CONTENT_SECURITY_POLICY;
pub use limits::ServerLimits;
pub use signin::LOGIN_LINK_TTL;
pub use web::app_is_built;

/// What every request handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub host: Arc<Host>,
    /// `Host` header values accepted (the bound address under its names).
    allowed_hosts: Arc<Vec<String>>,
    addr: SocketAddr,
    signin: Arc<signin::SignIn>,
    /// Single-use challenges for device proofs in `hello`.
    challenges: Arc<devices::Challenges>,
    /// Becomes true when the server shuts down: open WebSockets close.
    closing: Arc<tokio::sync::watch::Sender<bool>>,
    /// Connection cap, timeouts, per-client bounds.
    limits: ServerLimits,
    /// Remote access through a relay (`nucleic serve --relay`), if on.
    remote: Option<Arc<remote::Remote>>,
}

impl AppState {
    /// State for a server bound to `addr`, accepting the host's token and devices.
    pub fn new(host: Arc<Host>, addr: SocketAddr) -> AppState {
        let port = addr.port();
        let mut allowed =
            vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        if !addr.ip().is_loopback() {
            allowed.push(addr.to_string());
        }
        AppState {
            host,
            allowed_hosts: Arc::new(allowed),
            addr,
            signin: Arc::default(),
            challenges: Arc::default(),
            closing: Arc::new(tokio::sync::watch::Sender::new(false)),
            limits: ServerLimits::default(),
            remote: None,
        }
    }

    /// The same state with remote access on: pairing links can be opened, and
    /// [`AppState::run_relay`] serves devices through the relay.
    pub fn with_remote(mut self, remote: Arc<remote::Remote>) -> AppState {
        self.remote = Some(remote);
        self
    }

    /// Turns true when the server shuts down (other listeners stop with it).
    pub fn closing_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Remote access, if on.
    pub fn remote(&self) -> Option<&Arc<remote::Remote>> {
        self.remote.as_ref()
    }

    /// Keeps the daemon connected to its relay (reconnecting with backoff) until `stop` turns
    /// true; returns at once when remote access is off.
    pub async fn run_relay(self, stop: tokio::sync::watch::Receiver<bool>) {
        if let Some(remote) = self.remote.clone() {
            remote::run_relay(remote, self, stop).await;
        }
    }

    /// The same state with other bounds (tests shorten the timeouts).
    pub fn with_limits(mut self, limits: ServerLimits) -> AppState {
        self.limits = limits;
        self
    }

    /// The server's bounds.
    pub fn limits(&self) -> ServerLimits {
        self.limits
    }

    /// Where browsers reach this server (`http://127.0.0.1:PORT`).
    pub fn base_url(&self) -> String {
        if self.addr.ip().is_unspecified() {
            format!("http://127.0.0.1:{}", self.addr.port())
        } else {
            format!("http://{}", self.addr)
        }
    }
}

/// The routes: the one-shot API needs the token; the WebSocket authenticates in `hello` (the
/// token, or a device proof); the web app, challenges and device registration (which spends a
/// one-time sign-in token) need none; everything passes the Host/Origin check.
pub fn router(state: AppState) -> Router {
    let private = Router::new()
        .route("/api/message", post(http::message))
        .route("/api/health", get(http::health))
        .route("/api/login-link", post(signin::login_link))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_auth));
    Router::new()
        .merge(private)
        .route("/ws", get(connection::upgrade))
        .route("/api/challenge", post(devices::challenge))
        .route("/api/devices", post(devices::register))
        .fallback(web::serve)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::check_host))
        .layer(axum::extract::DefaultBodyLimit::max(nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES))
        .layer(axum::middleware::from_fn(headers::harden))
        .with_state(state)
}

/// Serves the LAN listener (`nucleic serve --lan`): the Noise channel only, for `Host` values in
/// `allowed_hosts`; until `shutdown` resolves.
pub async fn serve_lan(
    listener: impl Listener,
    state: AppState,
    allowed_hosts: Vec<String>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (limits, closing) = (state.limits, Arc::clone(&state.closing));
    accept::serve(listener, remote::lan::router(state, allowed_hosts), limits, closing, shutdown)
        .await
}

/// Serves until `shutdown` resolves; then open WebSockets are closed ("going away"), requests
/// in flight finish, and connections get a few seconds to end. Connections beyond the cap are
/// refused with `503`; headers that do not arrive in time close the connection.
pub async fn serve(
    listener: impl Listener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (limits, closing) = (state.limits, Arc::clone(&state.closing));
    // Web Push to subscribed devices while the server runs (ends with it).
    let push = state.host.start_push(nucleic_push::RetryPolicy::default(), None);
    let served = accept::serve(listener, router(state), limits, closing, shutdown).await;
    push.abort();
    served
}
