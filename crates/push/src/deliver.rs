//! Delivering one encrypted push message to a push service: an HTTP/1.1 `POST` to the
//! subscription's endpoint, retried a bounded number of times within a deadline when the
//! service is down or busy, never when it says the subscription is gone.

use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

use crate::PushError;

/// How hard to try one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries at most (the first included).
    pub attempts: u32,
    /// Wait before the second try; doubled before each later one.
    pub first_delay: Duration,
    /// One try's bound (connect, send, status line).
    pub attempt_timeout: Duration,
    /// No try starts after this much time since the first.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            attempts: 4,
            first_delay: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
        }
    }
}

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The service took it (2xx).
    Delivered,
    /// The subscription expired or was unsubscribed (404, 410): drop it, never retry.
    Gone,
    /// The service refused the message for good (another 4xx): not retried.
    Refused(u16),
    /// The service stayed down, busy or unreachable through every try: the last reason.
    GaveUp { tries: u32, last: String },
}

/// A message ready to send: the encrypted body and its headers.
#[derive(Debug, Clone)]
pub struct PushRequest {
    pub endpoint: String,
    /// `vapid t=…, k=…`.
    pub authorization: String,
    /// The encrypted body (`aes128gcm`).
    pub body: Vec<u8>,
    /// How long the service may hold it for an offline device (seconds).
    pub ttl_secs: u32,
}

/// Sends `request`, retrying per `policy` on connection errors, 429 and 5xx.
pub async fn deliver(request: &PushRequest, policy: RetryPolicy) -> Delivery {
    let started = Instant::now();
    let mut delay = policy.first_delay;
    let mut tries = 0;
    let mut last = String::from("not tried");
    while tries < policy.attempts.max(1) {
        if tries > 0 {
            if started.elapsed() + delay >= policy.deadline {
                break;
            }
            tokio::time::sleep(delay).await;
            delay = delay.saturating_mul(2);
        }
        tries += 1;
        match tokio::time::timeout(policy.attempt_timeout, post(request)).await {
            Ok(Ok(status)) => match status {
                200..=299 => return Delivery::Delivered,
                404 | 410 => return Delivery::Gone,
                429 | 500..=599 => last = format!("the push service answered {status}"),
                other => return Delivery::Refused(other),
            },
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => {
                last = format!(
                    "no answer from the push service within {} ms",
                    policy.attempt_timeout.as_millis()
                );
            }
        }
    }
    Delivery::GaveUp { tries, last }
}

/// One `POST`: the response's status code.
async fn post(request: &PushRequest) -> Result<u16, PushError> {
    let endpoint = &request.endpoint;
    let rest = match endpoint.split_once("://") {
        Some(("http", rest)) => rest,
        Some(("https", _)) => return Err(PushError::TlsUnsupported(endpoint.clone())),
        _ => return Err(PushError::BadEndpoint(endpoint.clone())),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let address =
        if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
    let stream = tokio::net::TcpStream::connect(&address)
        .await
        .map_err(|e| PushError::Unreachable(format!("cannot connect to {address}: {e}")))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| PushError::Unreachable(format!("HTTP handshake with {address}: {e}")))?;
    let driver = tokio::spawn(connection);
    let http = Request::post(path)
        .header("host", authority)
        .header("authorization", &request.authorization)
        .header("content-encoding", "aes128gcm")
        .header("content-type", "application/octet-stream")
        .header("ttl", request.ttl_secs.to_string())
        .header("urgency", "high")
        .body(Full::new(Bytes::from(request.body.clone())))
        .map_err(|e| PushError::BadEndpoint(format!("{endpoint}: {e}")))?;
    let response = sender
        .send_request(http)
        .await
        .map_err(|e| PushError::Unreachable(format!("sending to {address}: {e}")));
    driver.abort();
    Ok(response?.status().as_u16())
}
