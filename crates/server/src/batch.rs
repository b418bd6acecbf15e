//! Coalescing queued events of one session into one `events` message (for clients that
//! announced `eventBatches`): a browser pays per WebSocket message, so a 20,000-event catch-up
//! as single frames takes seconds where batches take a fraction.

use nucleic_protocol::HostMessage;
use tokio::sync::mpsc;

/// Most events in one `events` message.
pub const MAX_BATCH: usize = 512;

/// `first`, or — when it is an event and more events of the same session are already queued —
/// an `events` batch of them. A queued message that does not fit is left in `held`.
pub fn coalesce(
    first: HostMessage,
    outbox: &mut mpsc::Receiver<HostMessage>,
    held: &mut Option<HostMessage>,
) -> HostMessage {
    let HostMessage::Event { event } = first else { return first };
    let mut events = vec![event];
    while events.len() < MAX_BATCH {
        match outbox.try_recv() {
            Ok(HostMessage::Event { event }) if event.session_id == events[0].session_id => {
                events.push(event);
            }
            Ok(other) => {
                *held = Some(other);
                break;
            }
            Err(_) => break,
        }
    }
    match events.len() {
        1 => match events.pop() {
            Some(event) => HostMessage::Event { event },
            None => HostMessage::Events { session_id: String::new(), events },
        },
        _ => HostMessage::Events { session_id: events[0].session_id.clone(), events },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use nucleic_protocol::{Backend, Event, EventKind, StderrLine, Timestamp};

    use super::*;

    fn event(session: &str, seq: u64) -> HostMessage {
        HostMessage::Event {
            event: Event {
                seq,
                at: Timestamp::from_unix_millis(0),
                session_id: session.into(),
                backend: Backend::Simulated,
                native_type: None,
                kind: EventKind::Stderr(StderrLine { text: format!("{seq}") }),
            },
        }
    }

    fn seqs(m: &HostMessage) -> Vec<u64> {
        match m {
            HostMessage::Events { events, .. } => events.iter().map(|e| e.seq).collect(),
            HostMessage::Event { event } => vec![event.seq],
            _ => vec![],
        }
    }

    #[tokio::test]
    async fn queued_events_of_one_session_become_one_batch_in_order() {
        let (tx, mut rx) = mpsc::channel(2048);
        for seq in 2..=600 {
            tx.send(event("a", seq)).await.unwrap();
        }
        let mut held = None;
        let first = coalesce(event("a", 1), &mut rx, &mut held);
        assert_eq!(seqs(&first), (1..=512).collect::<Vec<_>>());
        let next = rx.recv().await.unwrap();
        let second = coalesce(next, &mut rx, &mut held);
        assert_eq!(seqs(&second), (513..=600).collect::<Vec<_>>());
        assert!(held.is_none());
    }

    #[tokio::test]
    async fn another_session_or_message_ends_the_batch_and_is_kept() {
        let (tx, mut rx) = mpsc::channel(16);
        tx.send(event("a", 2)).await.unwrap();
        tx.send(event("b", 1)).await.unwrap();
        tx.send(event("a", 3)).await.unwrap();
        let mut held = None;
        let first = coalesce(event("a", 1), &mut rx, &mut held);
        assert_eq!(seqs(&first), vec![1, 2]);
        assert_eq!(seqs(held.as_ref().unwrap()), vec![1]);
        // A lone event stays a plain `event`.
        let lone = coalesce(event("c", 9), &mut mpsc::channel(1).1, &mut None);
        assert!(matches!(lone, HostMessage::Event { .. }));
        // Anything but an event passes through untouched.
        let other = HostMessage::Unsupported { message_id: None, message_type: "x".into() };
        assert_eq!(coalesce(other.clone(), &mut rx, &mut held), other);
    }
}
