//! `wait_for_session`: the session's summary looked at until it needs attention or its agent
//! ended, under a deadline, holding the shared connection only for each look.

use std::sync::Arc;
use std::time::Duration;

use nucleic_client::{Client, ClientError};
use nucleic_protocol::{SessionStatus, SessionSummary};
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How often the summary is looked at.
const POLL: Duration = Duration::from_millis(250);

/// Why the wait ended, and the session then.
#[derive(Debug)]
pub struct Waited {
    /// `needs-approval`, `turn-over`, `ended`, or `timed-out after N s`.
    pub reason: String,
    pub summary: SessionSummary,
}

/// Why `summary` needs attention, if it does.
fn attention(summary: &SessionSummary) -> Option<&'static str> {
    if summary.pending_approvals > 0 {
        return Some("needs-approval");
    }
    match summary.status {
        SessionStatus::AwaitingApproval => Some("needs-approval"),
        SessionStatus::AwaitingInput => Some("turn-over"),
        SessionStatus::Finished | SessionStatus::Error => Some("ended"),
        SessionStatus::Idle | SessionStatus::Running => None,
    }
}

/// Waits until `session_id` needs attention, at most `within`.
pub async fn wait_for(
    client: &Arc<Mutex<Client>>,
    session_id: &str,
    within: Duration,
) -> Result<Waited, ClientError> {
    let deadline = Instant::now() + within;
    loop {
        let summary = client.lock().await.session(session_id).await?;
        if let Some(reason) = attention(&summary) {
            return Ok(Waited { reason: reason.to_owned(), summary });
        }
        if Instant::now() >= deadline {
            let reason = format!("timed-out after {} s", within.as_secs());
            return Ok(Waited { reason, summary });
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}
