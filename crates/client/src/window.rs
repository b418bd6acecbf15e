//! Reading a session's past through a subscription, bounded: a window of its events by seq,
//! and the approvals still pending (requested minus resolved), each under a deadline.

use std::collections::BTreeMap;
use std::time::Duration;

use nucleic_protocol::{ApprovalRequested, Event, EventKind, HostMessage, Verbosity};

use crate::client::Client;
use crate::error::ClientError;

impl Client {
    /// The events of `session_id` with `from_seq <= seq <= last_seq`, at most `limit` of them,
    /// in order (a catch-up through a subscription, dropped afterwards), within `within`.
    pub async fn events_window(
        &mut self,
        session_id: &str,
        from_seq: u64,
        last_seq: u64,
        limit: usize,
        within: Duration,
    ) -> Result<Vec<Event>, ClientError> {
        let from_seq = from_seq.max(1);
        let until = last_seq.min(from_seq.saturating_add(limit as u64).saturating_sub(1));
        if limit == 0 || from_seq > until {
            return Ok(Vec::new());
        }
        self.subscribe(session_id, from_seq, Verbosity::Full).await?;
        // Keyed by seq: a copy left over from an earlier read of the session is harmless.
        let mut got: BTreeMap<u64, Event> = BTreeMap::new();
        let collect = async {
            while got.len() < (until - from_seq + 1) as usize {
                let event = match self.next().await? {
                    HostMessage::Event { event } => event,
                    HostMessage::Events { session_id: _, events } => {
                        for event in events {
                            keep(&mut got, event, session_id, from_seq, until);
                        }
                        continue;
                    }
                    _ => continue,
                };
                keep(&mut got, event, session_id, from_seq, until);
            }
            Ok::<_, ClientError>(())
        };
        let read = tokio::time::timeout(within, collect).await;
        let unsubscribed = self.unsubscribe(session_id).await;
        match read {
            Ok(done) => done?,
            Err(_) => {
                return Err(ClientError::Timeout {
                    what: format!("reading events {from_seq}..={until} of session {session_id}"),
                    within,
                });
            }
        }
        unsubscribed?;
        Ok(got.into_values().collect())
    }

    /// The approvals of `session_id` still waiting for a decision, in request order: its
    /// events up to `last_seq` folded (requested minus resolved), within `within`.
    pub async fn pending_approvals(
        &mut self,
        session_id: &str,
        last_seq: u64,
        within: Duration,
    ) -> Result<Vec<ApprovalRequested>, ClientError> {
        let limit = usize::try_from(last_seq).unwrap_or(usize::MAX);
        let events = self.events_window(session_id, 1, last_seq, limit, within).await?;
        Ok(still_pending(events))
    }
}

fn keep(got: &mut BTreeMap<u64, Event>, event: Event, session: &str, from: u64, until: u64) {
    if event.session_id == session && (from..=until).contains(&event.seq) {
        got.insert(event.seq, event);
    }
}

/// Requested minus resolved, in request order.
pub fn still_pending(events: impl IntoIterator<Item = Event>) -> Vec<ApprovalRequested> {
    let mut open: Vec<ApprovalRequested> = Vec::new();
    for event in events {
        match event.kind {
            EventKind::ApprovalRequested(a) => open.push(a),
            EventKind::ApprovalResolved(r) => open.retain(|a| a.request_id != r.request_id),
            _ => {}
        }
    }
    open
}
