//! A mock Web Push service on loopback: it checks what a real one checks (the VAPID JWT's
//! ES256 signature, audience and lifetime, the `aes128gcm` encoding and a TTL), then — what a
//! real one cannot — decrypts each message with the subscription's keys, which it made, and
//! records the plaintext so tests can assert what a push reveals.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use nucleic_push::{BrowserKeys, b64};
use tokio::task::JoinHandle;

/// How the service answers a subscription's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushMode {
    /// `201 Created`: taken.
    Accept,
    /// `410 Gone`: the subscription expired.
    Gone,
    /// `503 Service Unavailable`: the service is down.
    Down,
}

/// One request the service received.
#[derive(Debug, Clone)]
pub struct ReceivedPush {
    /// The subscription's index (as returned by [`MockPushService::subscribe`]).
    pub subscription: usize,
    pub at: Instant,
    /// What was wrong with it (VAPID, encoding, decryption), if anything.
    pub problem: Option<String>,
    /// The decrypted payload, when it decrypted.
    pub plaintext: Option<String>,
    /// The JWT's `sub` claim.
    pub vapid_subject: Option<String>,
}

/// A subscription made on the mock: its endpoint and the browser side's keys.
#[derive(Debug, Clone)]
pub struct MockSubscription {
    pub endpoint: String,
    /// The browser's public key, base64url.
    pub p256dh: String,
    /// The auth secret, base64url.
    pub auth: String,
}

#[derive(Debug)]
struct Inner {
    subscriptions: Vec<(BrowserKeys, PushMode)>,
    received: Vec<ReceivedPush>,
}

#[derive(Debug, Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    origin: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The running mock; stops when dropped.
#[derive(Debug)]
pub struct MockPushService {
    shared: Shared,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for MockPushService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockPushService {
    /// Starts the service on `127.0.0.1`, an unused port.
    pub async fn start() -> std::io::Result<MockPushService> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Shared {
            inner: Arc::new(Mutex::new(Inner { subscriptions: Vec::new(), received: Vec::new() })),
            origin: format!("http://{addr}"),
        };
        let app = Router::new().route("/push/{index}", post(receive)).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockPushService { shared, addr, task })
    }

    /// A new subscription answered per `mode`: fresh browser keys (the test's, never the
    /// host's) and an endpoint on this service. Returns it and its index.
    pub fn subscribe(&self, mode: PushMode) -> (MockSubscription, usize) {
        let keys = BrowserKeys::generate().unwrap_or_else(|e| panic!("browser keys: {e}"));
        let mut inner = self.shared.lock();
        let index = inner.subscriptions.len();
        let sub = MockSubscription {
            endpoint: format!("http://{}/push/{index}", self.addr),
            p256dh: b64::encode(&keys.keys.p256dh),
            auth: b64::encode(&keys.keys.auth),
        };
        inner.subscriptions.push((keys, mode));
        (sub, index)
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<ReceivedPush> {
        self.shared.lock().received.clone()
    }

    /// Waits until `n` requests arrived for subscription `index`, or panics naming what
    /// arrived after `within`.
    pub async fn wait_for(&self, index: usize, n: usize, within: Duration) -> Vec<ReceivedPush> {
        let deadline = Instant::now() + within;
        loop {
            let got: Vec<_> =
                self.received().into_iter().filter(|r| r.subscription == index).collect();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {within:?} waiting for {n} push(es) to subscription {index}; got {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

async fn receive(
    State(shared): State<Shared>,
    Path(index): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let Some((keys, mode)) = shared.lock().subscriptions.get(index).cloned() else {
        return StatusCode::NOT_FOUND;
    };
    let mut record = ReceivedPush {
        subscription: index,
        at: Instant::now(),
        problem: None,
        plaintext: None,
        vapid_subject: None,
    };
    let checked =
        nucleic_push::verify_authorization(header("authorization"), &shared.origin, unix_secs())
            .map_err(|e| e.to_string())
            .and_then(|subject| {
                record.vapid_subject = Some(subject);
                if header("content-encoding") != "aes128gcm" {
                    return Err("Content-Encoding is not aes128gcm".into());
                }
                if header("ttl").parse::<u32>().is_err() {
                    return Err("no TTL header".into());
                }
                keys.decrypt(&body).map_err(|e| e.to_string())
            });
    let status = match checked {
        Ok(plain) => {
            record.plaintext = Some(String::from_utf8_lossy(&plain).into_owned());
            match mode {
                PushMode::Accept => StatusCode::CREATED,
                PushMode::Gone => StatusCode::GONE,
                PushMode::Down => StatusCode::SERVICE_UNAVAILABLE,
            }
        }
        Err(problem) => {
            record.problem = Some(problem);
            StatusCode::BAD_REQUEST
        }
    };
    shared.lock().received.push(record);
    status
}
