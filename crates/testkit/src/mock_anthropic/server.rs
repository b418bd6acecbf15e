//! HTTP side of the mock: routing, fault injection and response bodies.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::script::{FaultKind, Reply, Script};
use super::sse::{INPUT_TOKENS, Message};
use crate::mock_http::{
    CONTENT_TYPE_JSON, CONTENT_TYPE_SSE, End, Scenario, Shared, add_request_id, streamed,
};

/// The header carrying the request id, as the Anthropic API names it.
const REQUEST_ID: &str = "request-id";

impl Scenario for Script {
    type FaultKind = FaultKind;

    fn fault(&self) -> Option<(FaultKind, Option<u32>)> {
        self.fault.as_ref().map(|f| (f.kind, f.count))
    }
}

/// The single handler behind every route.
pub(crate) async fn handle(State(shared): State<Arc<Shared<Script>>>, req: Request) -> Response {
    let Some(req) = shared.record(req).await else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "mock: unreadable body");
    };
    match (&req.method, req.path.as_str()) {
        (&Method::POST, "/v1/messages") => messages(&shared, &req.body).await,
        (&Method::POST, "/v1/messages/count_tokens") => {
            axum::Json(json!({ "input_tokens": INPUT_TOKENS })).into_response()
        }
        (&Method::GET, "/v1/models") => axum::Json(json!({
            "data": [{"id": "claude-opus-5-5", "type": "model", "display_name": "Mock"}],
            "has_more": false,
        }))
        .into_response(),
        (method, path) => error(
            StatusCode::NOT_FOUND,
            "not_found_error",
            &format!("mock: no route for {method} {path}"),
        ),
    }
}

/// An Anthropic-style error response.
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// What a request without tools gets: the CLI's side queries (the small model reading a page
/// `WebFetch` fetched, a title) are not the conversation the script plays.
pub const SIDE_QUERY_ANSWER: &str = "MOCK-SIDE-ANSWER: the page says what it says.";

async fn messages(shared: &Shared<Script>, body: &Value) -> Response {
    let (script, fault) = shared.next();
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-opus-5-5");
    let empty = Vec::new();
    let history = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let reply = match body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty()) {
        true => super::prompted::resolve(&script.reply_for(history), body),
        // A side query of the CLI (a page `WebFetch` read, a title): no tools to call.
        false => Reply::Text(SIDE_QUERY_ANSWER.to_owned()),
    };
    let message = Message::from_reply(&reply, model);
    let delay = script.chunk_delay;
    match fault {
        Some(FaultKind::Http500) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "api_error", "mock: internal error")
        }
        Some(FaultKind::Http429) => {
            let mut response =
                error(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "mock: rate limited");
            response
                .headers_mut()
                .insert(HeaderName::from_static("retry-after"), HeaderValue::from_static("1"));
            response
        }
        Some(FaultKind::Http529) => error(
            StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            "overloaded_error",
            "mock: overloaded",
        ),
        Some(FaultKind::Hang) => {
            // Returns once the handle is dropped; the connection refuses to write from then on
            // (see `mock_http::listener`), so this error never reaches the client.
            shared.until_shutdown().await;
            error(StatusCode::SERVICE_UNAVAILABLE, "api_error", "mock: shutting down")
        }
        Some(FaultKind::DropMidStream) if stream => {
            let chunks = message.truncated_frames().iter().map(|f| f.to_wire()).collect();
            streamed(CONTENT_TYPE_SSE, chunks, delay, End::Break, REQUEST_ID)
        }
        Some(FaultKind::DropMidStream) => {
            let full = message.to_json().to_string();
            let half = full.get(..full.len() / 2).unwrap_or_default().to_owned();
            streamed(CONTENT_TYPE_JSON, vec![half], delay, End::Break, REQUEST_ID)
        }
        None if stream => {
            let chunks = message.frames().iter().map(|f| f.to_wire()).collect();
            streamed(CONTENT_TYPE_SSE, chunks, delay, End::Finish, REQUEST_ID)
        }
        None => {
            let mut response = axum::Json(message.to_json()).into_response();
            add_request_id(&mut response, REQUEST_ID);
            response
        }
    }
}
