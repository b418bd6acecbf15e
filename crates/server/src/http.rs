//! One-shot HTTP: `POST /api/message` takes one `ClientMessage` and returns its reply.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use nucleic_protocol::HostMessage;

use crate::AppState;
use crate::dispatch::{Client, Principal, parse};

/// `GET /api/health`.
pub async fn health() -> &'static str {
    "ok\n"
}

/// `POST /api/message`. Token only. The client names itself with `X-Nucleic-Client-Id`. With a
/// client id its message ids are remembered like a WebSocket client's (a resent change is not
/// carried out twice); without one every request is its own scope and nothing is remembered,
/// so unrelated callers never receive each other's replies.
pub async fn message(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, Json<HostMessage>) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let client_id = header("x-nucleic-client-id");
    // Only the token opens this route.
    let principal = Principal::Token;
    match parse(&body) {
        Ok(message) => {
            let reply = match client_id {
                Some(id) => state.host.answer(&Client::new(&id, principal), message).await,
                None => {
                    let client = Client { id: String::new(), principal };
                    state.host.answer_once(&client, message).await
                }
            };
            let status = if matches!(reply, HostMessage::Error { .. }) {
                StatusCode::UNPROCESSABLE_ENTITY
            } else {
                StatusCode::OK
            };
            (status, Json(reply))
        }
        Err(reply) => (StatusCode::BAD_REQUEST, Json(*reply)),
    }
}
