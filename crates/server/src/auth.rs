//! Who may talk to the host over HTTP: the bearer token (file 0600 in `$NUCLEIC_HOME`, owned by
//! the host), and only through the loopback names it is bound to (`Host`), from its own pages
//! (`Origin`). DNS rebinding and cross-site requests are refused before any handler runs.
//! Browsers hold no HTTP credential at all: they prove a device key in `hello` (`devices.rs`).
//! Nothing authenticates by cookie — browsers send `127.0.0.1` cookies to every local port.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;

pub use nucleic_host::{TOKEN_FILE, load_or_create_token};

/// The bearer credential of a request, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    v.strip_prefix("Bearer ").map(str::trim)
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, format!("{why}\n")).into_response()
}

/// What a request's `Authorization` header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bearer {
    /// The token in force.
    Valid,
    /// A token, but not the one in force (wrong or rotated out).
    Wrong,
    /// No bearer token at all.
    Absent,
}

/// Checks the bearer token against the host's (constant time).
pub(crate) fn bearer_token(state: &AppState, headers: &HeaderMap) -> Bearer {
    match bearer(headers) {
        Some(token) if state.host.token_matches(token) => Bearer::Valid,
        Some(_) => Bearer::Wrong,
        None => Bearer::Absent,
    }
}

/// Every request: only through the loopback names the server is bound to (`Host`, against DNS
/// rebinding), and only from its own pages (`Origin`, when a browser sends one).
pub async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| state.allowed_hosts.iter().any(|a| a == h));
    if !host_ok {
        return refuse(StatusCode::FORBIDDEN, "refused: unexpected Host header");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| state.allowed_hosts.iter().any(|a| a == o));
        if !ok {
            return refuse(StatusCode::FORBIDDEN, "refused: cross-origin request");
        }
    }
    next.run(request).await
}

/// The token-only API: authenticated requests only.
pub async fn require_auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match bearer_token(&state, request.headers()) {
        Bearer::Valid => next.run(request).await,
        Bearer::Wrong => refuse(StatusCode::UNAUTHORIZED, "refused: wrong or rotated token"),
        Bearer::Absent => refuse(
            StatusCode::UNAUTHORIZED,
            "refused: no token (Authorization: Bearer …); browsers connect to /ws and prove a device key in hello",
        ),
    }
}
