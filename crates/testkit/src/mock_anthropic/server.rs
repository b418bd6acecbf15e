//! HTTP side of the mock: request recording, routing, fault injection and response bodies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::script::{FaultKind, Script};
use super::sse::{INPUT_TOKENS, Message};

/// Largest request body read (the CLI sends a few hundred KB at most).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Path including the query string, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names (lowercase) and values, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` if it is not JSON.
    pub body: Value,
}

/// The current scenario and how many faults it has served.
#[derive(Debug)]
struct Scenario {
    script: Script,
    faults_served: u32,
}

/// State shared by the server task and the [`super::MockAnthropic`] handle.
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
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
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
        (&Method::POST, "/v1/messages") => messages(&shared, &body_json).await,
        (&Method::POST, "/v1/messages/count_tokens") => {
            axum::Json(json!({ "input_tokens": INPUT_TOKENS })).into_response()
        }
        (&Method::GET, "/v1/models") => axum::Json(json!({
            "data": [{"id": "claude-opus-5-5", "type": "model", "display_name": "Mock"}],
            "has_more": false,
        }))
        .into_response(),
        (method, _) => error(
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

async fn messages(shared: &Shared, body: &Value) -> Response {
    let (script, fault) = shared.next();
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-opus-5-5");
    let empty = Vec::new();
    let history = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let message = Message::from_reply(&script.reply_for(history), model);
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
            let mut shutdown = shared.shutdown.clone();
            // Errors once the handle (the sender) is dropped; the connection refuses to write
            // from then on (see `listener`), so this error never reaches the client.
            while shutdown.changed().await.is_ok() {}
            error(StatusCode::SERVICE_UNAVAILABLE, "api_error", "mock: shutting down")
        }
        Some(FaultKind::DropMidStream) if stream => {
            let chunks = message.truncated_frames().iter().map(|f| f.to_wire()).collect();
            streamed(sse_headers(), chunks, script.chunk_delay, true)
        }
        Some(FaultKind::DropMidStream) => {
            let full = message.to_json().to_string();
            let half = full.get(..full.len() / 2).unwrap_or_default().to_owned();
            streamed(json_headers(), vec![half], script.chunk_delay, true)
        }
        None if stream => {
            let chunks = message.frames().iter().map(|f| f.to_wire()).collect();
            streamed(sse_headers(), chunks, script.chunk_delay, false)
        }
        None => {
            let mut response = axum::Json(message.to_json()).into_response();
            add_request_id(&mut response);
            response
        }
    }
}

fn sse_headers() -> [(HeaderName, HeaderValue); 2] {
    [
        (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ]
}

fn json_headers() -> [(HeaderName, HeaderValue); 2] {
    [
        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ]
}

fn add_request_id(response: &mut Response) {
    let id = format!("req_mock_{}", uuid::Uuid::new_v4().simple());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static("request-id"), value);
    }
}

/// Body-stream state: chunks left, the pause between them, whether to break the connection
/// at the end, and whether the next chunk is the first.
struct Feed {
    chunks: VecDeque<String>,
    delay: Duration,
    fail: bool,
    first: bool,
}

/// A 200 response whose body is `chunks` sent one by one (chunked encoding), `delay` apart;
/// with `fail`, the body then errors so the connection closes without the final chunk.
fn streamed(
    headers: [(HeaderName, HeaderValue); 2],
    chunks: Vec<String>,
    delay: Duration,
    fail: bool,
) -> Response {
    let feed = Feed { chunks: chunks.into(), delay, fail, first: true };
    let body = futures_util::stream::unfold(feed, |mut feed| async move {
        if !feed.first && !feed.delay.is_zero() {
            tokio::time::sleep(feed.delay).await;
        }
        feed.first = false;
        if let Some(chunk) = feed.chunks.pop_front() {
            return Some((Ok::<Bytes, std::io::Error>(Bytes::from(chunk)), feed));
        }
        if feed.fail {
            feed.fail = false;
            // Let hyper flush what was sent before breaking the connection.
            tokio::time::sleep(feed.delay.max(Duration::from_millis(50))).await;
            let err = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "mock: dropped");
            return Some((Err(err), feed));
        }
        None
    });
    let mut response = (StatusCode::OK, headers, Body::from_stream(body)).into_response();
    add_request_id(&mut response);
    response
}
