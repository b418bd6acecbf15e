//! Coalescing queued events of one session into one `events` message (for clients that
//! announced `eventBatches`): a browser pays per WebSocket message, so a 20,000-event catch-up
//! as single frames takes seconds where batches take a fraction.

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::OwnedSemaphorePermit;

use crate::outbox::{Inbox, Outgoing, Queued};

/// Most events in one `events` message.
pub const MAX_BATCH: usize = 512;

/// A queued event: its session, its JSON, its share of the outbox budget.
pub type QueuedEvent = (String, Box<RawValue>, Option<OwnedSemaphorePermit>);

/// The frame text and the budget shares it releases once sent.
pub type Frame = (String, Vec<Option<OwnedSemaphorePermit>>);

/// The wire shape of `event` / `events` (as `HostMessage` serializes them) over events that
/// are already JSON.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Wire<'a> {
    Event {
        event: &'a RawValue,
    },
    Events {
        #[serde(rename = "sessionID")]
        session_id: &'a str,
        events: Vec<&'a RawValue>,
    },
}

/// One `event` message.
pub fn single((_, event, bytes): QueuedEvent) -> Frame {
    let text = serde_json::to_string(&Wire::Event { event: &event }).unwrap_or_default();
    (text, vec![bytes])
}

/// `first`, or — when more events of the same session are already queued — an `events` batch
/// of them. A queued message that does not fit is put back for the next call.
pub fn coalesce(first: QueuedEvent, inbox: &mut Inbox) -> Frame {
    let (session_id, event, bytes) = first;
    let mut events = vec![event];
    let mut shares = vec![bytes];
    while events.len() < MAX_BATCH {
        let Some(next) = inbox.try_next() else { break };
        match next.item {
            Outgoing::Event { session_id: s, event } if s == session_id => {
                events.push(event);
                shares.push(next.bytes);
            }
            item => {
                inbox.hold(Queued { item, bytes: next.bytes });
                break;
            }
        }
    }
    let text = if let [event] = events.as_slice() {
        serde_json::to_string(&Wire::Event { event })
    } else {
        let events = events.iter().map(AsRef::as_ref).collect();
        serde_json::to_string(&Wire::Events { session_id: &session_id, events })
    };
    (text.unwrap_or_default(), shares)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use nucleic_protocol::{Backend, Event, EventKind, HostMessage, StderrLine, Timestamp};

    use super::*;
    use crate::outbox::outbox;

    fn event(session: &str, seq: u64) -> Event {
        Event {
            seq,
            at: Timestamp::from_unix_millis(0),
            session_id: session.into(),
            backend: Backend::Simulated,
            native_type: None,
            origin: None,
            kind: EventKind::Stderr(StderrLine { text: format!("{seq}") }),
        }
    }

    fn queued(session: &str, seq: u64) -> QueuedEvent {
        let e = event(session, seq);
        (session.into(), serde_json::value::to_raw_value(&e).unwrap(), None)
    }

    fn seqs(text: &str) -> Vec<u64> {
        match serde_json::from_str::<HostMessage>(text).unwrap() {
            HostMessage::Events { events, .. } => events.iter().map(|e| e.seq).collect(),
            HostMessage::Event { event } => vec![event.seq],
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn queued_events_of_one_session_become_one_batch_in_order() {
        let (out, mut inbox) = outbox(1 << 30);
        for seq in 2..=600 {
            out.send_event(&event("a", seq)).await.unwrap();
        }
        let (first, shares) = coalesce(queued("a", 1), &mut inbox);
        assert_eq!(seqs(&first), (1..=512).collect::<Vec<_>>());
        assert_eq!(shares.len(), 512);
        let Outgoing::Event { session_id, event } = inbox.next().await.unwrap().item else {
            panic!()
        };
        let (second, _) = coalesce((session_id, event, None), &mut inbox);
        assert_eq!(seqs(&second), (513..=600).collect::<Vec<_>>());
        assert!(inbox.try_next().is_none());
    }

    #[tokio::test]
    async fn another_session_or_message_ends_the_batch_and_is_kept() {
        let (out, mut inbox) = outbox(1 << 20);
        out.send_event(&event("a", 2)).await.unwrap();
        out.send_event(&event("b", 1)).await.unwrap();
        out.send_event(&event("a", 3)).await.unwrap();
        let (first, _) = coalesce(queued("a", 1), &mut inbox);
        assert_eq!(seqs(&first), vec![1, 2]);
        let Outgoing::Event { session_id, .. } = inbox.next().await.unwrap().item else { panic!() };
        assert_eq!(session_id, "b");
        // A lone event stays a plain `event`, shaped as `HostMessage` serializes it.
        let (_, mut empty) = outbox(16);
        let (lone, _) = coalesce(queued("c", 9), &mut empty);
        let expected = HostMessage::Event { event: event("c", 9) };
        assert_eq!(serde_json::from_str::<HostMessage>(&lone).unwrap(), expected);
        assert_eq!(lone, serde_json::to_string(&expected).unwrap());
        let (batch, _) = coalesce(queued("c", 1), &mut {
            let (out, inbox) = outbox(1 << 20);
            out.send_event(&event("c", 2)).await.unwrap();
            inbox
        });
        let expected = HostMessage::Events {
            session_id: "c".into(),
            events: vec![event("c", 1), event("c", 2)],
        };
        assert_eq!(batch, serde_json::to_string(&expected).unwrap());
    }
}
