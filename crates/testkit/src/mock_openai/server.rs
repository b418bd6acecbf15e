//! HTTP side of the mock: routing, fault injection and response bodies.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde_json::{Value, json};

use super::script::{FaultKind, Script};
use super::sse::{Frame, Response};
use crate::mock_http::{
    CONTENT_TYPE_JSON, CONTENT_TYPE_SSE, End, Scenario, Shared, add_request_id, streamed,
};

/// The model `GET /v1/models` lists and responses report when the request names none.
pub(crate) const MODEL: &str = "gpt-5.5";

/// The header carrying the request id, as the OpenAI API names it.
pub(crate) const REQUEST_ID: &str = "x-request-id";

impl Scenario for Script {
    type FaultKind = FaultKind;

    fn fault(&self) -> Option<(FaultKind, Option<u32>)> {
        self.fault.as_ref().map(|f| (f.kind, f.count))
    }
}

/// The single handler behind every route.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared<Script>>>,
    req: Request,
) -> HttpResponse {
    let Some(req) = shared.record(req).await else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "mock: unreadable body");
    };
    match (&req.method, req.path.as_str()) {
        (&Method::POST, "/v1/responses") => responses(&shared, &req.body).await,
        (&Method::POST, "/v1/chat/completions") => {
            super::chat::completions(&shared, &req.body).await
        }
        (&Method::GET, "/v1/models") => axum::Json(json!({
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "mock"}],
        }))
        .into_response(),
        (method, path) => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            &format!("mock: no route for {method} {path}"),
        ),
    }
}

/// An OpenAI-style error response.
pub(crate) fn error(status: StatusCode, kind: &str, message: &str) -> HttpResponse {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": kind}});
    (status, axum::Json(body)).into_response()
}

async fn responses(shared: &Shared<Script>, body: &Value) -> HttpResponse {
    let (script, fault) = shared.next();
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = body.get("model").and_then(Value::as_str).unwrap_or(MODEL);
    let empty = Vec::new();
    let input = body.get("input").and_then(Value::as_array).unwrap_or(&empty);
    let response = Response::from_reply(&script.reply_for(input), model);
    let delay = script.chunk_delay;
    match fault {
        Some(FaultKind::Http500) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "mock: internal error")
        }
        Some(FaultKind::Http429) => {
            let mut response =
                error(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded", "mock: rate limited");
            response
                .headers_mut()
                .insert(HeaderName::from_static("retry-after"), HeaderValue::from_static("1"));
            response
        }
        Some(FaultKind::Http400) => {
            error(StatusCode::BAD_REQUEST, "invalid_request_error", "Bad request (mock)")
        }
        Some(FaultKind::Hang) => {
            // Returns once the handle is dropped; the connection refuses to write from then on
            // (see `mock_http::listener`), so this error never reaches the client.
            shared.until_shutdown().await;
            error(StatusCode::SERVICE_UNAVAILABLE, "server_error", "mock: shutting down")
        }
        Some(FaultKind::ResponseFailed) => sse(&response.failed_frames(), delay, End::Finish),
        Some(FaultKind::DropMidStream) if stream => {
            sse(&response.truncated_frames(), delay, End::Break)
        }
        Some(FaultKind::StallMidStream) => {
            sse(&response.truncated_frames(), delay, End::Stall(shared.shutdown()))
        }
        Some(FaultKind::DropMidStream) => {
            let full = response.to_json().to_string();
            let half = full.get(..full.len() / 2).unwrap_or_default().to_owned();
            streamed(CONTENT_TYPE_JSON, vec![half], delay, End::Break, REQUEST_ID)
        }
        None if stream => sse(&response.frames(), delay, End::Finish),
        None => {
            let mut http = axum::Json(response.to_json()).into_response();
            add_request_id(&mut http, REQUEST_ID);
            http
        }
    }
}

fn sse(frames: &[Frame], delay: Duration, end: End) -> HttpResponse {
    streamed(CONTENT_TYPE_SSE, frames.iter().map(Frame::to_wire).collect(), delay, end, REQUEST_ID)
}
