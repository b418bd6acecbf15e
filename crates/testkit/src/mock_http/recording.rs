//! Request recording: every request a mock receives is kept, in order, before it is answered.

use axum::extract::Request;
use axum::http::Method;
use serde_json::Value;

use super::{Shared, lock};

/// Largest request body read (the CLIs re-send the whole history, a few hundred KB at most).
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

/// What a handler routes on once the request is recorded.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The request method.
    pub(crate) method: Method,
    /// The path without the query string.
    pub(crate) path: String,
    /// The body parsed as JSON; `Null` if it is not JSON.
    pub(crate) body: Value,
}

impl<S> Shared<S> {
    /// Read `req`'s body and record the request; `None` if the body could not be read (the
    /// request is recorded all the same, with a `Null` body).
    pub(crate) async fn record(&self, req: Request) -> Option<Incoming> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, BODY_LIMIT).await;
        let body_json = bytes
            .as_ref()
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .unwrap_or(Value::Null);
        let path = parts.uri.path().to_owned();
        lock(&self.requests).push(RecordedRequest {
            method: parts.method.as_str().to_owned(),
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| path.clone(), |pq| pq.as_str().to_owned()),
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
        bytes.ok().map(|_| Incoming { method: parts.method, path, body: body_json })
    }
}
