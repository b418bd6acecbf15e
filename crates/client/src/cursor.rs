//! Subscription cursors: the next `seq` wanted per subscribed session, so a catch-up, a
//! reconnect or a resubscription delivers every event once, in order, with no gap.

use std::collections::BTreeMap;

use nucleic_protocol::{Event, Verbosity};

/// What to do with an event that arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The next one: hand it on (the cursor moved past it).
    Deliver,
    /// Already delivered (a replay overlapping what came before): drop it.
    Duplicate,
    /// Events are missing before it: drop it and resubscribe from `expected`.
    Gap { expected: u64 },
    /// Missing events are already being fetched again: drop it.
    Resyncing,
    /// Not a session we follow (e.g. in flight when we unsubscribed): drop it.
    NotSubscribed,
}

/// One subscribed session.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    /// The next `seq` to deliver.
    pub(crate) next: u64,
    pub(crate) verbosity: Verbosity,
    /// The message id of a resubscription the host has not acknowledged yet.
    pub(crate) resync: Option<String>,
}

/// Cursors of every session this client subscribed to.
#[derive(Debug, Default)]
pub(crate) struct Cursors {
    sessions: BTreeMap<String, Cursor>,
}

impl Cursors {
    /// Starts (or restarts) following `session` from `from_seq` (0 means 1, as on the wire).
    pub(crate) fn subscribe(&mut self, session: &str, from_seq: u64, verbosity: Verbosity) {
        let cursor = Cursor { next: from_seq.max(1), verbosity, resync: None };
        self.sessions.insert(session.to_owned(), cursor);
    }

    pub(crate) fn unsubscribe(&mut self, session: &str) {
        self.sessions.remove(session);
    }

    /// The next `seq` wanted for `session`, if subscribed.
    pub(crate) fn next_seq(&self, session: &str) -> Option<u64> {
        self.sessions.get(session).map(|c| c.next)
    }

    /// Every subscribed session and its cursor.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Cursor)> {
        self.sessions.iter()
    }

    /// Notes that a resubscription of `session` went out as `message_id`.
    pub(crate) fn resyncing(&mut self, session: &str, message_id: String) {
        if let Some(c) = self.sessions.get_mut(session) {
            c.resync = Some(message_id);
        }
    }

    /// The host acknowledged resubscription `message_id`: returns its session.
    pub(crate) fn resynced(&mut self, message_id: &str) -> Option<String> {
        let (session, cursor) =
            self.sessions.iter_mut().find(|(_, c)| c.resync.as_deref() == Some(message_id))?;
        cursor.resync = None;
        Some(session.clone())
    }

    /// Whether `message_id` is a resubscription of ours still unanswered.
    pub(crate) fn is_resync(&self, message_id: &str) -> bool {
        self.sessions.values().any(|c| c.resync.as_deref() == Some(message_id))
    }

    /// Judges `event` and, when it is delivered, moves its session's cursor past it. With a
    /// verbosity filter the host skips the seqs of omitted events, so only `full` subscriptions
    /// can tell a gap.
    pub(crate) fn check(&mut self, event: &Event) -> Verdict {
        let Some(cursor) = self.sessions.get_mut(&event.session_id) else {
            return Verdict::NotSubscribed;
        };
        if event.seq < cursor.next {
            return Verdict::Duplicate;
        }
        let gap = event.seq > cursor.next && cursor.verbosity == Verbosity::Full;
        if gap && cursor.resync.is_some() {
            return Verdict::Resyncing;
        }
        if gap {
            return Verdict::Gap { expected: cursor.next };
        }
        cursor.next = event.seq + 1;
        Verdict::Deliver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(session: &str, seq: u64) -> Event {
        serde_json::from_value(serde_json::json!({
            "seq": seq,
            "at": "2026-01-01T00:00:00Z",
            "sessionID": session,
            "backend": "simulated",
            "kind": {"type": "raw", "native": {"x": 1}},
        }))
        .unwrap()
    }

    #[test]
    fn events_are_delivered_once_in_order_and_a_gap_is_noticed() {
        let mut c = Cursors::default();
        c.subscribe("s", 0, Verbosity::Full);
        assert_eq!(c.check(&event("s", 1)), Verdict::Deliver);
        assert_eq!(c.check(&event("s", 2)), Verdict::Deliver);
        assert_eq!(c.check(&event("s", 2)), Verdict::Duplicate);
        assert_eq!(c.check(&event("s", 1)), Verdict::Duplicate);
        assert_eq!(c.check(&event("s", 5)), Verdict::Gap { expected: 3 });
        c.resyncing("s", "m9".into());
        assert!(c.is_resync("m9"));
        assert_eq!(c.check(&event("s", 6)), Verdict::Resyncing, "a later one while resyncing");
        assert_eq!(c.check(&event("s", 3)), Verdict::Deliver, "the replay fills the gap");
        assert_eq!(c.resynced("m9").as_deref(), Some("s"));
        assert!(!c.is_resync("m9"));
        assert_eq!(c.next_seq("s"), Some(4));
        assert_eq!(c.check(&event("other", 1)), Verdict::NotSubscribed);
        c.unsubscribe("s");
        assert_eq!(c.check(&event("s", 4)), Verdict::NotSubscribed);
    }

    #[test]
    fn a_filtered_subscription_skips_seqs_without_calling_it_a_gap() {
        let mut c = Cursors::default();
        c.subscribe("s", 10, Verbosity::Summary);
        assert_eq!(c.check(&event("s", 9)), Verdict::Duplicate);
        assert_eq!(c.check(&event("s", 12)), Verdict::Deliver);
        assert_eq!(c.check(&event("s", 12)), Verdict::Duplicate);
        assert_eq!(c.next_seq("s"), Some(13));
    }
}
