//! HTTP side of the mock: request recording, routing, fault injection and response bodies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::script::{FaultKind, Script};
use super::sse::{Frame, Response};
use crate::mock_anthropic::RecordedRequest;

/// Largest request body read (codex re-sends the whole history on every request).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// The model `GET /v1/models` lists and responses report when the request names none.
pub(crate) const MODEL: &str = "gpt-5.5";

/// The current scenario and how many faults it has served.
#[derive(Debug)]
struct Scenario {
    script: Script,
    faults_served: u32,
}

/// State shared by the server task and the [`super::MockOpenAi`] handle.
#[derive(Debug)]
pub(crate) struct Shared {
    scenario: Mutex<Scenario>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Resolves (`changed()` errors) when the handle is dropped.
    shutdown: watch::Receiver<()>,
}

/// Lock, ignoring poisoning (the data stays usable for a test mock).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(script: Script, shutdown: watch::Receiver<()>) -> Self {
        Self {
            scenario: Mutex::new(Scenario { script, faults_served: 0 }),
            requests: Mutex::new(Vec::new()),
            shutdown,
        }
    }

    pub(crate) fn set_script(&self, script: Script) {
        *lock(&self.scenario) = Scenario { script, faults_served: 0 };
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }

    /// The script, and the fault this request gets (counting it).
    fn next(&self) -> (Script, Option<FaultKind>) {
        let mut scenario = lock(&self.scenario);
        let fault = match &scenario.script.fault {
            Some(f) if f.count.is_none_or(|n| scenario.faults_served < n) => Some(f.kind),
            _ => None,
        };
        if fault.is_some() {
            scenario.faults_served = scenario.faults_served.saturating_add(1);
        }
        (scenario.script.clone(), fault)
    }
}

/// The single handler behind every route.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> HttpResponse {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT).await;
    let body_json = bytes
        .as_ref()
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        .unwrap_or(Value::Null);
    let path = parts.uri.path().to_owned();
    lock(&shared.requests).push(RecordedRequest {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path_and_query().map_or_else(|| path.clone(), |pq| pq.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_owned(), value)
            })
            .collect(),
        body: body_json.clone(),
    });
    if bytes.is_err() {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "mock: unreadable body");
    }
    match (&parts.method, path.as_str()) {
        (&Method::POST, "/v1/responses") => responses(&shared, &body_json).await,
        (&Method::GET, "/v1/models") => axum::Json(json!({
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "mock"}],
        }))
        .into_response(),
        (method, _) => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            &format!("mock: no route for {method} {path}"),
        ),
    }
}

/// An OpenAI-style error response.
fn error(status: StatusCode, kind: &str, message: &str) -> HttpResponse {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": kind}});
    (status, axum::Json(body)).into_response()
}

async fn responses(shared: &Shared, body: &Value) -> HttpResponse {
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
            let mut shutdown = shared.shutdown.clone();
            // Errors once the handle (the sender) is dropped; the connection refuses to write
            // from then on (see `listener`), so this error never reaches the client.
            while shutdown.changed().await.is_ok() {}
            error(StatusCode::SERVICE_UNAVAILABLE, "server_error", "mock: shutting down")
        }
        Some(FaultKind::ResponseFailed) => sse(&response.failed_frames(), delay, End::Finish),
        Some(FaultKind::DropMidStream) if stream => {
            sse(&response.truncated_frames(), delay, End::Break)
        }
        Some(FaultKind::StallMidStream) => {
            sse(&response.truncated_frames(), delay, End::Stall(shared.shutdown.clone()))
        }
        Some(FaultKind::DropMidStream) => {
            let full = response.to_json().to_string();
            let half = full.get(..full.len() / 2).unwrap_or_default().to_owned();
            streamed(CONTENT_TYPE_JSON, vec![half], delay, End::Break)
        }
        None if stream => sse(&response.frames(), delay, End::Finish),
        None => {
            let mut http = axum::Json(response.to_json()).into_response();
            add_request_id(&mut http);
            http
        }
    }
}

const CONTENT_TYPE_SSE: &str = "text/event-stream";
const CONTENT_TYPE_JSON: &str = "application/json";

fn sse(frames: &[Frame], delay: Duration, end: End) -> HttpResponse {
    streamed(CONTENT_TYPE_SSE, frames.iter().map(Frame::to_wire).collect(), delay, end)
}

fn add_request_id(response: &mut HttpResponse) {
    let id = format!("req_mock_{}", uuid::Uuid::new_v4().simple());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static("x-request-id"), value);
    }
}

/// How a streamed body ends once its chunks are out.
enum End {
    /// The final (zero-size) chunk: a complete body.
    Finish,
    /// An error, so the connection closes without the final chunk.
    Break,
    /// Nothing more until the server is dropped (the receiver then errors).
    Stall(watch::Receiver<()>),
}

/// Body-stream state: chunks left, the pause between them, how the body ends, and whether the
/// next chunk is the first.
struct Feed {
    chunks: VecDeque<String>,
    delay: Duration,
    end: End,
    first: bool,
}

/// A 200 response whose body is `chunks` sent one by one (chunked encoding), `delay` apart,
/// then ended as `end` says.
fn streamed(
    content_type: &'static str,
    chunks: Vec<String>,
    delay: Duration,
    end: End,
) -> HttpResponse {
    let feed = Feed { chunks: chunks.into(), delay, end, first: true };
    let body = futures_util::stream::unfold(feed, |mut feed| async move {
        if !feed.first && !feed.delay.is_zero() {
            tokio::time::sleep(feed.delay).await;
        }
        feed.first = false;
        if let Some(chunk) = feed.chunks.pop_front() {
            return Some((Ok::<Bytes, std::io::Error>(Bytes::from(chunk)), feed));
        }
        match std::mem::replace(&mut feed.end, End::Finish) {
            End::Finish => None,
            End::Break => {
                // Let hyper flush what was sent before breaking the connection.
                tokio::time::sleep(feed.delay.max(Duration::from_millis(50))).await;
                let err = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "mock: dropped");
                Some((Err(err), feed))
            }
            End::Stall(mut shutdown) => {
                while shutdown.changed().await.is_ok() {}
                None
            }
        }
    });
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    let mut response = (StatusCode::OK, headers, Body::from_stream(body)).into_response();
    add_request_id(&mut response);
    response
}
