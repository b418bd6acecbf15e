//! Events on their way to one client, without copies: an [`EventRun`] names the events of a
//! shared batch (`nucleic_core::EventBatch`) that the client wants, and the connection's writer
//! turns runs into frames — one `event` each, or, for clients that announced `eventBatches`,
//! `events` messages of up to 512 events of one session coalesced from whatever runs are queued
//! (a browser pays per WebSocket message). Each event's JSON was made once, when the session's
//! writer wrote it; a frame only copies it into its text.

use std::ops::Range;

use nucleic_core::{EventBatch, EventSlice};
use nucleic_protocol::{EventKind, Verbosity};
use tokio::sync::OwnedSemaphorePermit;

use crate::outbox::{Inbox, Outgoing, Queued};

/// Most events in one `events` message.
pub const MAX_BATCH: usize = 512;

/// The frame text (none when there was nothing to send) and the budget shares it releases
/// once sent.
pub type Frame = (Option<String>, Vec<Option<OwnedSemaphorePermit>>);

/// True when a client at `verbosity` wants events of this kind.
pub fn wanted(verbosity: Verbosity, kind: &EventKind) -> bool {
    match verbosity {
        Verbosity::Full => true,
        Verbosity::NoPartials => !kind.is_partial(),
        Verbosity::Summary => {
            !kind.is_partial()
                && !matches!(
                    kind,
                    EventKind::Raw(_) | EventKind::Stderr(_) | EventKind::CheckOutput(_)
                )
        }
    }
}

/// Some events of one shared batch, in order, not yet sent to a client.
#[derive(Debug)]
pub struct EventRun {
    batch: EventBatch,
    picks: Picks,
}

/// Which of the batch's events: a span, or (when the client's verbosity leaves some out) a list.
#[derive(Debug)]
enum Picks {
    Span(Range<usize>),
    List { list: Vec<usize>, at: usize },
}

impl EventRun {
    /// The events of `slice` a client at `verbosity` wants, with their JSON made (once for
    /// every client); `None` when it wants none. Fails when the events cannot be encoded.
    pub fn of(slice: &EventSlice, verbosity: Verbosity) -> Result<Option<EventRun>, String> {
        let (batch, range) = slice.parts();
        let events = slice.events();
        let picks = if events.iter().all(|e| wanted(verbosity, &e.kind)) {
            Picks::Span(range)
        } else {
            let list = range
                .filter(|&i| batch.events().get(i).is_some_and(|e| wanted(verbosity, &e.kind)));
            Picks::List { list: list.collect(), at: 0 }
        };
        let run = EventRun { batch: batch.clone(), picks };
        if run.is_empty() {
            return Ok(None);
        }
        batch.encode()?;
        Ok(Some(run))
    }

    /// Every event of `batch`; fails when they cannot be encoded.
    pub fn whole(batch: EventBatch) -> Result<EventRun, String> {
        batch.encode()?;
        Ok(EventRun { picks: Picks::Span(0..batch.len()), batch })
    }

    /// Events left.
    pub fn len(&self) -> usize {
        match &self.picks {
            Picks::Span(r) => r.len(),
            Picks::List { list, at } => list.len().saturating_sub(*at),
        }
    }

    /// Whether none is left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the run costs the client's byte budget: the JSON of its whole batch, which it keeps
    /// alive until sent. That is what it sends when the client takes every event of the batch;
    /// a client that takes few (a lower verbosity, a cursor in the middle) still holds them all,
    /// so a slow one cannot pin more than its budget of shared batches.
    pub fn charge(&self) -> usize {
        self.batch.json_len(0..self.batch.len())
    }

    /// The batch index of the first event left.
    fn front(&self) -> Option<usize> {
        match &self.picks {
            Picks::Span(r) => (!r.is_empty()).then_some(r.start),
            Picks::List { list, at } => list.get(*at).copied(),
        }
    }

    /// Drops the first event left.
    fn pop_front(&mut self) {
        match &mut self.picks {
            Picks::Span(r) => r.start = (r.start + 1).min(r.end),
            Picks::List { at, .. } => *at += 1,
        }
    }
}

/// One frame's text, built as events are added: a lone event is an `event` message, more are
/// an `events` message — both exactly as `HostMessage` serializes them.
#[derive(Debug, Default)]
struct FrameText {
    session_id: Option<String>,
    /// The first event, kept until it is known whether a second follows.
    first: Option<(EventBatch, usize)>,
    text: String,
    count: usize,
}

impl FrameText {
    /// Moves events from the front of `run` while they belong to the frame's session and the
    /// frame has fewer than `cap`; returns the bytes of JSON moved.
    fn take(&mut self, run: &mut EventRun, cap: usize) -> usize {
        let mut moved = 0;
        while self.count < cap {
            let Some(i) = run.front() else { break };
            let (Some(event), Some(json)) = (run.batch.events().get(i), run.batch.json(i)) else {
                // Cannot happen: runs are made of encoded batches. Dropping it beats a loop.
                run.pop_front();
                continue;
            };
            match &self.session_id {
                Some(s) if *s != event.session_id => break,
                Some(_) => {}
                None => self.session_id = Some(event.session_id.clone()),
            }
            match self.count {
                0 => self.first = Some((run.batch.clone(), i)),
                1 => {
                    let first =
                        self.first.as_ref().and_then(|(b, i)| b.json(*i)).unwrap_or_default();
                    let session = self.session_id.as_deref().unwrap_or_default();
                    let session = serde_json::to_string(session).unwrap_or_default();
                    self.text.reserve(40 + session.len() + first.len() + json.len());
                    self.text.push_str(r#"{"type":"events","sessionID":"#);
                    self.text.push_str(&session);
                    self.text.push_str(r#","events":["#);
                    self.text.push_str(first);
                    self.text.push(',');
                    self.text.push_str(json);
                }
                _ => {
                    self.text.push(',');
                    self.text.push_str(json);
                }
            }
            self.count += 1;
            moved += json.len();
            run.pop_front();
        }
        moved
    }

    fn finish(mut self) -> Option<String> {
        match self.count {
            0 => None,
            1 => {
                let first = self.first.as_ref().and_then(|(b, i)| b.json(*i)).unwrap_or_default();
                Some(format!(r#"{{"type":"event","event":{first}}}"#))
            }
            _ => {
                self.text.push_str("]}");
                Some(self.text)
            }
        }
    }

    /// Takes what fits of `run` (holding `bytes`): the shares of what was taken (its bytes of
    /// JSON) go to `shares`, and the rest, if any, is returned with the remaining share.
    fn fill(
        &mut self,
        mut run: EventRun,
        mut bytes: Option<OwnedSemaphorePermit>,
        cap: usize,
        shares: &mut Vec<Option<OwnedSemaphorePermit>>,
    ) -> Option<Queued> {
        let moved = self.take(&mut run, cap);
        if run.is_empty() {
            shares.push(bytes);
            return None;
        }
        if let Some(permit) = bytes.as_mut() {
            let n = moved.min(permit.num_permits());
            if n > 0 {
                shares.push(permit.split(n));
            }
        }
        Some(Queued { item: Outgoing::Events(run), bytes })
    }
}

/// One `event` message: the first event of `run`; the rest is put back for the next call.
pub fn single(run: EventRun, bytes: Option<OwnedSemaphorePermit>, inbox: &mut Inbox) -> Frame {
    let mut frame = FrameText::default();
    let mut shares = Vec::new();
    if let Some(rest) = frame.fill(run, bytes, 1, &mut shares) {
        inbox.hold(rest);
    }
    (frame.finish(), shares)
}

/// The first event of `run`, or — when more events of the same session are in it or already
/// queued — an `events` message of up to [`MAX_BATCH`] of them. What does not fit is put back
/// for the next call.
pub fn coalesce(run: EventRun, bytes: Option<OwnedSemaphorePermit>, inbox: &mut Inbox) -> Frame {
    let mut frame = FrameText::default();
    let mut shares = Vec::new();
    let mut rest = frame.fill(run, bytes, MAX_BATCH, &mut shares);
    while rest.is_none() && frame.count < MAX_BATCH {
        let Some(next) = inbox.try_next() else { break };
        rest = match next.item {
            Outgoing::Events(run) => frame.fill(run, next.bytes, MAX_BATCH, &mut shares),
            item => Some(Queued { item, bytes: next.bytes }),
        };
    }
    if let Some(rest) = rest {
        inbox.hold(rest);
    }
    (frame.finish(), shares)
}

/// The frames a client gets for `runs` (queued in this order with nothing else between them),
/// handed to `send` one by one: what the connection's writer sends, without a socket. For tests
/// and the fan-out bench.
pub fn each_frame(runs: Vec<EventRun>, batching: bool, mut send: impl FnMut(String)) {
    let (out, mut inbox) = crate::outbox::outbox(usize::MAX);
    let mut runs = runs.into_iter();
    let mut waiting: Option<Outgoing> = None;
    loop {
        // Queue what fits, then write one frame (as the writer would, with the queue full).
        loop {
            let Some(item) = waiting.take().or_else(|| runs.next().map(Outgoing::Events)) else {
                break;
            };
            if let Err(item) = out.queue_now(item) {
                waiting = Some(item);
                break;
            }
        }
        let Some(queued) = inbox.try_next() else { break };
        let Outgoing::Events(run) = queued.item else { continue };
        let (text, _) = if batching {
            coalesce(run, queued.bytes, &mut inbox)
        } else {
            single(run, queued.bytes, &mut inbox)
        };
        if let Some(text) = text {
            send(text);
        }
    }
}

/// The frames a client gets for `runs`, collected (see [`each_frame`]).
#[cfg(test)]
fn frames(runs: Vec<EventRun>, batching: bool) -> Vec<String> {
    let mut frames = Vec::new();
    each_frame(runs, batching, |text| frames.push(text));
    frames
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use nucleic_core::EventBatch;
    use nucleic_protocol::{
        Backend, Event, EventKind, HostMessage, StderrLine, TextBlock, Timestamp,
    };
    use proptest::prelude::*;

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
            kind: EventKind::Stderr(StderrLine { text: format!("{seq} \"quoted\" é") }),
        }
    }

    fn partial(session: &str, seq: u64) -> Event {
        let kind = EventKind::AssistantText(TextBlock {
            is_partial: true,
            message_id: "m".into(),
            text: format!("{seq}"),
        });
        Event { kind, ..event(session, seq) }
    }

    fn run(events: Vec<Event>) -> EventRun {
        EventRun::whole(EventBatch::new(events)).unwrap()
    }

    fn parsed(text: &str) -> HostMessage {
        serde_json::from_str::<HostMessage>(text).unwrap()
    }

    fn seqs(text: &str) -> Vec<u64> {
        match parsed(text) {
            HostMessage::Events { events, .. } => events.iter().map(|e| e.seq).collect(),
            HostMessage::Event { event } => vec![event.seq],
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn queued_events_of_one_session_become_one_batch_in_order() {
        let (out, mut inbox) = outbox(1 << 30);
        for seq in 1..=600 {
            out.send_event(&event("a", seq)).await.unwrap();
        }
        let Outgoing::Events(first) = inbox.next().await.unwrap().item else { panic!() };
        let (text, shares) = coalesce(first, None, &mut inbox);
        assert_eq!(seqs(&text.unwrap()), (1..=512).collect::<Vec<_>>());
        assert_eq!(shares.len(), 512);
        let Outgoing::Events(next) = inbox.next().await.unwrap().item else { panic!() };
        let (second, _) = coalesce(next, None, &mut inbox);
        assert_eq!(seqs(&second.unwrap()), (513..=600).collect::<Vec<_>>());
        assert!(inbox.try_next().is_none());
    }

    #[tokio::test]
    async fn another_session_or_message_ends_the_batch_and_is_kept() {
        let (out, mut inbox) = outbox(1 << 20);
        out.send_event(&event("a", 2)).await.unwrap();
        out.send_event(&event("b", 1)).await.unwrap();
        out.send_event(&event("a", 3)).await.unwrap();
        let (first, _) = coalesce(run(vec![event("a", 1)]), None, &mut inbox);
        assert_eq!(seqs(&first.unwrap()), vec![1, 2]);
        let Outgoing::Events(held) = inbox.next().await.unwrap().item else { panic!() };
        let (text, _) = coalesce(held, None, &mut inbox);
        assert_eq!(seqs(&text.unwrap()), vec![1], "b's event, alone: a's next one is not b's");
        // A lone event stays a plain `event`, shaped as `HostMessage` serializes it.
        let lone = frames(vec![run(vec![event("c", 9)])], true);
        let expected = HostMessage::Event { event: event("c", 9) };
        assert_eq!(lone, vec![serde_json::to_string(&expected).unwrap()]);
        let batch = frames(vec![run(vec![event("c", 1)]), run(vec![event("c", 2)])], true);
        let expected = HostMessage::Events {
            session_id: "c".into(),
            events: vec![event("c", 1), event("c", 2)],
        };
        assert_eq!(batch, vec![serde_json::to_string(&expected).unwrap()]);
    }

    #[tokio::test]
    async fn a_run_holds_its_json_bytes_until_each_part_is_sent() {
        let budget = 1 << 20;
        let (out, mut inbox) = outbox(budget);
        let events: Vec<Event> = (1..=1200).map(|s| event("a", s)).collect();
        let json: usize = events.iter().map(|e| serde_json::to_string(e).unwrap().len()).sum();
        let batch = EventBatch::new(events);
        let slice = single_slice(&batch);
        out.send_events(&slice, Verbosity::Full).await.unwrap();
        let queued = inbox.next().await.unwrap();
        assert_eq!(queued.bytes.as_ref().unwrap().num_permits(), json);
        let Outgoing::Events(run) = queued.item else { panic!() };
        let (text, shares) = coalesce(run, queued.bytes, &mut inbox);
        assert_eq!(seqs(&text.unwrap()).len(), MAX_BATCH);
        let sent: usize = shares.iter().flatten().map(OwnedSemaphorePermit::num_permits).sum();
        let held = inbox.try_next().unwrap();
        let left = held.bytes.as_ref().unwrap().num_permits();
        assert_eq!(sent + left, json, "the run's share is split, not lost or doubled");
        drop(shares);
        inbox.hold(held);
        while let Some(q) = inbox.try_next() {
            let Outgoing::Events(run) = q.item else { panic!() };
            drop(coalesce(run, q.bytes, &mut inbox));
        }
        // Everything sent: the whole budget is free again.
        let all = u32::try_from(budget).unwrap();
        assert!(out.budget_is_free(all));
    }

    #[tokio::test]
    async fn a_client_that_wants_few_events_is_charged_for_the_batches_it_holds() {
        // 1000 partial deltas and one whole text per batch: a `noPartials` client is sent one
        // event but keeps the batch alive while it is queued.
        let batch = || {
            let mut events: Vec<Event> = (1..=1000).map(|s| partial("a", s)).collect();
            events.push(event("a", 1001));
            EventBatch::new(events)
        };
        let whole = batch().json_len(0..1001);
        let (out, mut inbox) = outbox(whole * 3 / 2);
        out.send_events(&single_slice(&batch()), Verbosity::NoPartials).await.unwrap();
        let (b2, b3) = (single_slice(&batch()), single_slice(&batch()));
        let second = out.send_events(&b2, Verbosity::NoPartials);
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), second).await;
        assert!(waited.is_err(), "a slow client cannot pin more batches than its budget");
        let queued = inbox.next().await.unwrap();
        assert_eq!(queued.bytes.as_ref().unwrap().num_permits(), whole);
        let Outgoing::Events(run) = queued.item else { panic!() };
        let (text, shares) = coalesce(run, queued.bytes, &mut inbox);
        assert_eq!(seqs(&text.unwrap()), vec![1001]);
        drop(shares);
        let third = out.send_events(&b3, Verbosity::NoPartials);
        tokio::time::timeout(std::time::Duration::from_secs(5), third).await.unwrap().unwrap();
    }

    /// The whole batch as a subscription would hand it out.
    fn single_slice(batch: &EventBatch) -> EventSlice {
        EventSlice::whole(batch.clone())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Whatever runs are queued (sizes, sessions, verbosity), the frames carry exactly the
        /// wanted events in order, each once, never more than 512 or two sessions in a frame,
        /// and each frame is byte for byte what `HostMessage` serializes.
        #[test]
        fn frames_carry_every_wanted_event_once_in_order(
            runs in proptest::collection::vec((0usize..3, 1usize..700, proptest::bits::u8::ANY), 1..8),
            batching in any::<bool>(),
            verbosity in prop_oneof![Just(Verbosity::Full), Just(Verbosity::NoPartials), Just(Verbosity::Summary)],
        ) {
            let mut expected = Vec::new();
            let mut queued = Vec::new();
            let mut next = [1u64; 3];
            for (session, len, mask) in runs {
                let id = ["a", "b", "c"][session];
                let events: Vec<Event> = (0..len)
                    .map(|k| {
                        let seq = next[session] + k as u64;
                        if (mask >> (k % 8)) & 1 == 1 { partial(id, seq) } else { event(id, seq) }
                    })
                    .collect();
                next[session] += len as u64;
                expected.extend(events.iter().filter(|e| wanted(verbosity, &e.kind)).cloned());
                let slice = EventSlice::whole(EventBatch::new(events));
                if let Some(run) = EventRun::of(&slice, verbosity).unwrap() {
                    queued.push(run);
                }
            }
            let mut got = Vec::new();
            for text in frames(queued, batching) {
                let message = parsed(&text);
                prop_assert_eq!(&text, &serde_json::to_string(&message).unwrap());
                match message {
                    HostMessage::Event { event } => got.push(event),
                    HostMessage::Events { session_id, events } => {
                        prop_assert!(batching);
                        prop_assert!(events.len() > 1 && events.len() <= MAX_BATCH);
                        prop_assert!(events.iter().all(|e| e.session_id == session_id));
                        got.extend(events);
                    }
                    other => prop_assert!(false, "{:?}", other),
                }
            }
            prop_assert_eq!(got, expected);
        }
    }
}
