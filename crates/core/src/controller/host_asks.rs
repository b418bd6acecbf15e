//! The host's own questions in the writer: approvals no agent tool call waits on (the egress
//! proxy's `egress` questions), numbered and answered like the agent's, their resolution handed
//! to whoever asked.

use std::collections::HashMap;
use std::time::Duration;

use nucleic_agents::{AgentControl, AgentError};
use nucleic_protocol::{ApprovalRequested, ApprovalResolved, Decision, DecisionKind, EventKind};
use tokio::sync::oneshot;

use super::Writer;
use crate::error::CoreError;
use crate::sequencer::Draft;

/// What `approvalResolved.by` says of a host question nobody answered in time.
pub(super) const TIMEOUT_BY: &str = "host:timeout";

/// The host's questions still open: where each one's resolution goes, and how long it waits.
/// They move no status (a background connection between turns leaves the session awaiting
/// input); clients see them in the pending approvals.
#[derive(Debug, Default)]
pub(super) struct HostAsks {
    open: HashMap<String, (oneshot::Sender<ApprovalResolved>, Duration)>,
}

impl HostAsks {
    /// How long the open question `id` waits, if `id` is one.
    pub(super) fn deadline(&self, id: &str) -> Option<Duration> {
        self.open.get(id).map(|(_, d)| *d)
    }

    /// How many are open.
    pub(super) fn len(&self) -> usize {
        self.open.len()
    }

    /// Hands `resolution` to whoever asked, if it answers one of the host's questions.
    pub(super) fn resolved(&mut self, resolution: &ApprovalResolved) {
        if let Some((tell, _)) = self.open.remove(&resolution.request_id) {
            // One who stopped waiting loses nothing.
            let _ = tell.send(resolution.clone());
        }
    }
}

impl<A: AgentControl> Writer<A> {
    /// Records `request` as the host's own question, waiting at most `deadline` for an answer.
    pub(super) fn ask_host(
        &mut self,
        request: ApprovalRequested,
        deadline: Duration,
    ) -> Result<oneshot::Receiver<ApprovalResolved>, CoreError> {
        let id = request.request_id.clone();
        if !matches!(self.approvals.check(&id), Err(CoreError::UnknownRequest(_))) {
            return Err(CoreError::Unsupported(format!("approval {id} was already asked")));
        }
        let (tell, answer) = oneshot::channel();
        self.host_asks.open.insert(id.clone(), (tell, deadline));
        // Recorded and answered without moving the status.
        self.settled.insert(id);
        self.append(vec![Draft::host(EventKind::ApprovalRequested(request))]);
        Ok(answer)
    }

    /// Whether `id` is one of the host's open questions.
    pub(super) fn is_host_ask(&self, id: &str) -> bool {
        self.host_asks.open.contains_key(id)
    }

    /// A person's answer to the host's question `id`: allow, always or deny (with its reason);
    /// the agent is told nothing (no tool call of its waits on it).
    pub(super) fn decide_host(
        &mut self,
        id: &str,
        decision: Decision,
        by: &str,
    ) -> Result<ApprovalResolved, CoreError> {
        self.approvals.check(id)?;
        match decision {
            Decision::Allow
            | Decision::AllowAlways { .. }
            | Decision::Deny { .. }
            | Decision::DenyAndStop { .. } => {}
            Decision::AllowEdited { .. }
            | Decision::ApprovePlan { .. }
            | Decision::Answer { .. } => {
                return Err(CoreError::Agent(AgentError::InvalidInput(format!(
                    "approval {id} is the host's question: answer it allow, always or deny"
                ))));
            }
        }
        decision.validate().map_err(|m| CoreError::Agent(AgentError::InvalidInput(m)))?;
        let resolution = decision.resolution(id, by);
        self.append(vec![Draft::host(EventKind::ApprovalResolved(resolution.clone()))]);
        Ok(resolution)
    }

    /// Resolves the host's question `id`, unanswered past its deadline, as `cancelled`.
    pub(super) fn expire_host(&mut self, id: &str) {
        let secs = self.host_asks.deadline(id).unwrap_or_default().as_secs();
        let resolution = ApprovalResolved {
            request_id: id.to_owned(),
            decision: DecisionKind::Cancelled,
            by: TIMEOUT_BY.to_owned(),
            updated_input: None,
            message: Some(format!("no answer within {secs} s (timed out)")),
            mode: None,
        };
        self.append(vec![Draft::host(EventKind::ApprovalResolved(resolution))]);
    }
}
