//! Response bodies shared by the mocks: chunked streams that finish, break or stall, request ids.

use std::collections::VecDeque;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

/// `Content-Type` of a server-sent event stream.
pub(crate) const CONTENT_TYPE_SSE: &str = "text/event-stream";
/// `Content-Type` of a JSON body.
pub(crate) const CONTENT_TYPE_JSON: &str = "application/json";

/// Set `header` (the protocol's request-id header) to a fresh `req_mock_…` id.
pub(crate) fn add_request_id(response: &mut Response, header: &'static str) {
    let id = format!("req_mock_{}", uuid::Uuid::new_v4().simple());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static(header), value);
    }
}

/// How a streamed body ends once its chunks are out.
#[derive(Debug)]
pub(crate) enum End {
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
/// then ended as `end` says; `request_id` names the header carrying a fresh request id.
pub(crate) fn streamed(
    content_type: &'static str,
    chunks: Vec<String>,
    delay: Duration,
    end: End,
    request_id: &'static str,
) -> Response {
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
    add_request_id(&mut response, request_id);
    response
}
