//! One client's stream of one session: catch-up, then live — and it keeps following when the
//! session's agent is gone and later resumed (a follow-up after a host restart starts a new
//! writer; a subscription to the old one, or a replay of a dormant session, would end there).

use std::sync::Arc;

use nucleic_core::Subscription;
use nucleic_host::Host;
use nucleic_protocol::Verbosity;
use tokio::sync::broadcast::error::RecvError;

use crate::outbox::Outbox;

/// Streams `session_id` from `from_seq` (`first` already subscribed there) into `out` until
/// the client goes away. Each time the current subscription ends, waits for the host to say
/// the session got a new writer or events outside one ([`Host::writes`], not the catalog) and
/// subscribes again from the event after the last one sent: no gap, no duplicate.
pub async fn follow(
    host: Arc<Host>,
    session_id: String,
    first: Subscription,
    from_seq: u64,
    verbosity: Verbosity,
    out: Outbox,
) {
    // Subscribed before the first read, so no write in between is missed.
    let mut writes = host.writes();
    let mut next = from_seq.max(1);
    let mut current = Some(first);
    loop {
        let mut events = match current.take() {
            Some(s) => s,
            None => match host.subscribe(&session_id, next).await {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        // Each slice is shared with every other client of the session: nothing is copied or
        // encoded here.
        while let Ok(Some(slice)) = events.next_batch().await {
            next = slice.last_seq() + 1;
            if out.send_events(&slice, verbosity).await.is_err() {
                return;
            }
        }
        // The stream ended: the session is dormant. Wait until it has more to say.
        loop {
            match writes.recv().await {
                Ok(id) if id == session_id => break,
                Ok(_) => {}
                // Missed some: look again by subscribing (a dormant session's replay ends at
                // once if nothing is new).
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => return,
            }
            if out.is_closed() {
                return;
            }
        }
    }
}
