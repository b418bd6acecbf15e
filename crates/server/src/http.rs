//! One-shot HTTP: `POST /api/message` takes one `ClientMessage` and returns its reply.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use nucleic_protocol::HostMessage;

use crate::AppState;
use crate::dispatch::{Client, Principal, answer, parse};

/// `GET /api/health`.
pub async fn health() -> &'static str {
    "ok\n"
}

/// `POST /api/message` (token only). The client names itself with `X-Nucleic-Client-Id`.
pub async fn message(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, Json<HostMessage>) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let client = Client {
        id: header("x-nucleic-client-id").unwrap_or_else(|| "http".into()),
        principal: Principal::Token,
    };
    match parse(&body) {
        Ok(message) => {
            let reply = answer(&state.host, &client, message).await;
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
