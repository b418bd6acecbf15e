//! One connection's outgoing queue, bounded in bytes as well as in messages: every message is
//! serialized when queued (events share the JSON their session's writer made) and holds its
//! size from a byte budget until it is on the socket, so producers (replies, event streams)
//! wait while the client is behind. The writer pings, and drops a client that does not take a
//! message within the send timeout, with a close frame that says why.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::ws::close_code;
use nucleic_core::{EventBatch, EventSlice};
use nucleic_protocol::{Event, HostMessage, Verbosity};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::batch::{self, EventRun};
use crate::limits::ServerLimits;
use crate::wire::{self, OutFrame};

/// Messages queued at most, whatever their size.
const MAX_QUEUED: usize = 1024;
/// How long a close frame may take to reach the client.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// A queued message, already serialized (events: their JSON was made when they were written).
#[derive(Debug)]
pub enum Outgoing {
    /// Events of a subscribed session, shared with every other client (the writer sends them
    /// as `event` messages, or coalesces them into `events` messages).
    Events(EventRun),
    /// Any other message.
    Text(String),
    /// Close the connection with this code and reason after what was queued before.
    Close { code: u16, reason: String },
}

/// A queued message and the share of the byte budget it holds until it is sent.
#[derive(Debug)]
pub struct Queued {
    pub item: Outgoing,
    pub bytes: Option<OwnedSemaphorePermit>,
}

/// The connection has ended: nothing more is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// The sending side; cheap to clone (one per producer).
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Queued>,
    budget: Arc<Semaphore>,
    max_bytes: u32,
}

/// The receiving side, for the writer.
#[derive(Debug)]
pub struct Inbox {
    rx: mpsc::Receiver<Queued>,
    /// A message taken while batching that did not belong to the batch.
    held: Option<Queued>,
    budget: Arc<Semaphore>,
}

/// A queue of at most `max_bytes` serialized bytes (a larger message alone takes it all).
pub fn outbox(max_bytes: usize) -> (Outbox, Inbox) {
    let max_bytes = u32::try_from(max_bytes.max(1)).unwrap_or(u32::MAX);
    let budget = Arc::new(Semaphore::new(max_bytes as usize));
    let (tx, rx) = mpsc::channel(MAX_QUEUED);
    (Outbox { tx, budget: Arc::clone(&budget), max_bytes }, Inbox { rx, held: None, budget })
}

impl Outbox {
    /// Queues `message`, waiting while the client is behind.
    pub async fn send(&self, message: HostMessage) -> Result<(), Gone> {
        let item = match message {
            HostMessage::Event { event } => return self.send_event(&event).await,
            other => Outgoing::Text(serde_json::to_string(&other).map_err(|_| Gone)?),
        };
        self.push(item).await
    }

    /// Queues one event (a copy; streams use [`Outbox::send_events`]).
    pub async fn send_event(&self, event: &Event) -> Result<(), Gone> {
        let run = EventRun::whole(EventBatch::new(vec![event.clone()])).map_err(|_| Gone)?;
        self.push(Outgoing::Events(run)).await
    }

    /// Queues the events of `slice` a client at `verbosity` wants, as one item that shares the
    /// batch (no event is copied; it holds the size of the batch's JSON from the byte budget:
    /// [`EventRun::charge`]).
    pub async fn send_events(&self, slice: &EventSlice, verbosity: Verbosity) -> Result<(), Gone> {
        match EventRun::of(slice, verbosity) {
            Ok(Some(run)) => self.push(Outgoing::Events(run)).await,
            Ok(None) => Ok(()),
            Err(_) => Err(Gone),
        }
    }

    /// Queues `item` without waiting and without taking from the byte budget, or gives it
    /// back when the queue is full (for [`batch::each_frame`]).
    pub(crate) fn queue_now(&self, item: Outgoing) -> Result<(), Outgoing> {
        self.tx.try_send(Queued { item, bytes: None }).map_err(|e| e.into_inner().item)
    }

    /// Asks the writer to close the connection after what is queued (or at once, when the
    /// queue is full: the client is not reading anyway).
    pub fn close(&self, code: u16, reason: impl Into<String>) {
        let item = Outgoing::Close { code, reason: reason.into() };
        let _ = self.tx.try_send(Queued { item, bytes: None });
    }

    /// Whether the writer has stopped.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when the writer has stopped.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Whether `bytes` of the budget are free (nothing holds them).
    #[cfg(test)]
    pub(crate) fn budget_is_free(&self, bytes: u32) -> bool {
        self.budget.available_permits() >= bytes as usize
    }

    async fn push(&self, item: Outgoing) -> Result<(), Gone> {
        let size = match &item {
            Outgoing::Events(run) => run.charge(),
            Outgoing::Text(text) => text.len(),
            Outgoing::Close { .. } => 0,
        };
        let share = u32::try_from(size).unwrap_or(u32::MAX).clamp(1, self.max_bytes);
        let bytes = Arc::clone(&self.budget).acquire_many_owned(share).await.map_err(|_| Gone)?;
        self.tx.send(Queued { item, bytes: Some(bytes) }).await.map_err(|_| Gone)
    }
}

impl Inbox {
    /// The next queued message.
    pub async fn next(&mut self) -> Option<Queued> {
        match self.held.take() {
            Some(q) => Some(q),
            None => self.rx.recv().await,
        }
    }

    /// A queued message if one is ready now.
    pub fn try_next(&mut self) -> Option<Queued> {
        self.held.take().or_else(|| self.rx.try_recv().ok())
    }

    /// Puts back a message taken too early; the next call returns it first.
    pub fn hold(&mut self, queued: Queued) {
        self.held = Some(queued);
    }

    /// Stops the queue: producers waiting for room or sending later get [`Gone`].
    fn shut(&mut self) {
        self.rx.close();
        self.budget.close();
    }
}

/// Why the writer closed the connection.
fn close_frame(code: u16, reason: &str) -> OutFrame {
    OutFrame::Close { code, reason: reason.into() }
}

/// Writes queued messages to `sink` until the queue ends or asks to close, pinging every
/// `ping_interval`; a message the client does not take within `send_timeout` drops the
/// connection (close 1008). Ends with a close frame (1001 when the queue simply ended).
pub async fn write(
    mut sink: impl wire::Sink,
    mut inbox: Inbox,
    batching: Arc<AtomicBool>,
    limits: ServerLimits,
) {
    let start = tokio::time::Instant::now() + limits.ping_interval;
    let mut ping = tokio::time::interval_at(start, limits.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let send_timeout = limits.send_timeout;
    let close = loop {
        let queued = tokio::select! {
            queued = inbox.next() => queued,
            _ = ping.tick() => {
                match tokio::time::timeout(send_timeout, sink.send(OutFrame::Ping)).await {
                    Ok(Ok(())) => continue,
                    Ok(Err(_)) => break None,
                    Err(_) => break Some(slow_reader(send_timeout)),
                }
            }
        };
        let Some(first) = queued else {
            // "Going away": the client reconnects and resumes from its cursor.
            break Some(close_frame(close_code::AWAY, "connection closing"));
        };
        let (text, _held_bytes) = match first.item {
            Outgoing::Close { code, reason } => break Some(close_frame(code, &reason)),
            Outgoing::Text(text) => (text, vec![first.bytes]),
            Outgoing::Events(run) => {
                let (text, shares) = if batching.load(Ordering::Relaxed) {
                    batch::coalesce(run, first.bytes, &mut inbox)
                } else {
                    batch::single(run, first.bytes, &mut inbox)
                };
                let Some(text) = text else { continue };
                (text, shares)
            }
        };
        match tokio::time::timeout(send_timeout, sink.send(OutFrame::Text(text))).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => break None,
            Err(_) => break Some(slow_reader(send_timeout)),
        }
    };
    inbox.shut();
    if let Some(close) = close {
        let _ = tokio::time::timeout(CLOSE_GRACE, sink.send(close)).await;
    }
}

fn slow_reader(after: Duration) -> OutFrame {
    close_frame(
        close_code::POLICY,
        &format!("slow reader: a message waited {} s unread", after.as_secs_f32()),
    )
}
