//! Scaffolding shared by the mock model servers: the loopback handle, state, recording, faults.
//!
//! Each mock keeps only its protocol (scripts, reply selection, SSE encoding, routes) and plugs
//! it in as a [`Scenario`] and an axum handler over [`Shared`].

mod body;
mod listener;
mod recording;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::handler::Handler;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub(crate) use body::{CONTENT_TYPE_JSON, CONTENT_TYPE_SSE, End, add_request_id, streamed};
pub use recording::RecordedRequest;

use listener::GuardedListener;

/// A mock's scenario: cloned for every request, and possibly carrying a fault to inject.
pub(crate) trait Scenario: Clone + Send + 'static {
    /// The protocol's kinds of injected failure.
    type FaultKind: Copy;

    /// The fault to inject, and how many requests get it (`None` = every request).
    fn fault(&self) -> Option<(Self::FaultKind, Option<u32>)>;
}

/// The current scenario and how many faults it has served.
#[derive(Debug)]
struct Current<S> {
    script: S,
    faults_served: u32,
}

/// State shared by the server task and the [`MockServer`] handle.
#[derive(Debug)]
pub(crate) struct Shared<S> {
    scenario: Mutex<Current<S>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Resolves (`changed()` errors) when the handle is dropped.
    shutdown: watch::Receiver<()>,
}

/// Lock, ignoring poisoning (the data stays usable for a test mock).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<S: Scenario> Shared<S> {
    fn new(script: S, shutdown: watch::Receiver<()>) -> Self {
        Self {
            scenario: Mutex::new(Current { script, faults_served: 0 }),
            requests: Mutex::new(Vec::new()),
            shutdown,
        }
    }

    fn set_script(&self, script: S) {
        *lock(&self.scenario) = Current { script, faults_served: 0 };
    }

    fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }

    /// The script, without counting a fault (for requests that never get one).
    pub(crate) fn peek(&self) -> S {
        lock(&self.scenario).script.clone()
    }

    /// The script, and the fault this request gets (counting it).
    pub(crate) fn next(&self) -> (S, Option<S::FaultKind>) {
        let mut scenario = lock(&self.scenario);
        let fault = match scenario.script.fault() {
            Some((kind, count)) if count.is_none_or(|n| scenario.faults_served < n) => Some(kind),
            _ => None,
        };
        if fault.is_some() {
            scenario.faults_served = scenario.faults_served.saturating_add(1);
        }
        (scenario.script.clone(), fault)
    }
}

impl<S> Shared<S> {
    /// A receiver whose `changed()` errors once the handle is dropped.
    pub(crate) fn shutdown(&self) -> watch::Receiver<()> {
        self.shutdown.clone()
    }

    /// Wait until the handle is dropped.
    pub(crate) async fn until_shutdown(&self) {
        let mut shutdown = self.shutdown();
        while shutdown.changed().await.is_ok() {}
    }
}

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub(crate) struct MockServer<S> {
    addr: SocketAddr,
    shared: Arc<Shared<S>>,
    task: JoinHandle<()>,
    /// Dropping it breaks every open connection and wakes the requests that hang.
    _shutdown: watch::Sender<()>,
}

impl<S: Scenario> MockServer<S> {
    /// Bind `127.0.0.1:0` and serve `script` with `handler` behind every route. Must be called
    /// inside a tokio runtime.
    pub(crate) async fn start<H, T>(script: S, handler: H) -> std::io::Result<Self>
    where
        H: Handler<T, Arc<Shared<S>>>,
        T: 'static,
    {
        Self::start_on(0, script, handler).await
    }

    /// As [`MockServer::start`], on `127.0.0.1:port` (0: any free port).
    pub(crate) async fn start_on<H, T>(port: u16, script: S, handler: H) -> std::io::Result<Self>
    where
        H: Handler<T, Arc<Shared<S>>>,
        T: 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (shutdown_tx, shutdown_rx) = watch::channel(());
        let listener = GuardedListener::new(listener, shutdown_rx.clone());
        let shared = Arc::new(Shared::new(script, shutdown_rx));
        let app = Router::new().fallback(handler).with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            // serve only returns on an accept loop failure; nothing to report to anyone then.
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, shared, task, _shutdown: shutdown_tx })
    }

    /// The bound loopback address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replace the scenario and reset the fault counter.
    pub(crate) fn set_script(&self, script: S) {
        self.shared.set_script(script);
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }
}

impl<S> Drop for MockServer<S> {
    fn drop(&mut self) {
        // Stops accepting; `_shutdown` is dropped right after, which breaks open connections.
        self.task.abort();
    }
}
