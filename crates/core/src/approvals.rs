//! The approval coordinator: pending requests of one session, first responder wins, stale or
//! repeated decisions refused, and every leftover request voided when its turn or agent ends.

use std::collections::HashMap;
use std::time::Duration;

use nucleic_protocol::{ApprovalRequested, ApprovalResolved, DecisionKind};
use tokio::time::Instant;

use crate::error::CoreError;

/// Open and answered approvals of one session.
#[derive(Debug, Default)]
pub struct ApprovalCoordinator {
    pending: HashMap<String, (ApprovalRequested, Option<Instant>)>,
    resolved: HashMap<String, (DecisionKind, String)>,
    timeout: Option<Duration>,
}

impl ApprovalCoordinator {
    /// A coordinator whose requests expire after `timeout` (never, when `None`).
    pub fn new(timeout: Option<Duration>) -> ApprovalCoordinator {
        ApprovalCoordinator { timeout, ..ApprovalCoordinator::default() }
    }

    /// Records a new request.
    pub fn open(&mut self, request: ApprovalRequested) {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        self.open_until(request, deadline);
    }

    /// Records a new request that expires at `deadline` (never, when `None`) whatever the
    /// coordinator's timeout.
    pub fn open_until(&mut self, request: ApprovalRequested, deadline: Option<Instant>) {
        self.pending.insert(request.request_id.clone(), (request, deadline));
    }

    /// How many requests wait for an answer.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// The pending request `id`, or why a decision on it must be refused.
    pub fn check(&self, id: &str) -> Result<&ApprovalRequested, CoreError> {
        if let Some((request, _)) = self.pending.get(id) {
            return Ok(request);
        }
        match self.resolved.get(id) {
            Some((decision, by)) => Err(CoreError::AlreadyResolved {
                request_id: id.to_owned(),
                decision: *decision,
                by: by.clone(),
            }),
            None => Err(CoreError::UnknownRequest(id.to_owned())),
        }
    }

    /// Marks `resolution`'s request answered.
    pub fn close(&mut self, resolution: &ApprovalResolved) {
        self.pending.remove(&resolution.request_id);
        self.resolved
            .insert(resolution.request_id.clone(), (resolution.decision, resolution.by.clone()));
    }

    /// Voids every pending request (turn ended, agent died), returning their cancellations.
    pub fn cancel_all(&mut self, why: &str) -> Vec<ApprovalResolved> {
        let mut ids: Vec<String> = self.pending.keys().cloned().collect();
        ids.sort();
        ids.into_iter()
            .map(|id| {
                let r = ApprovalResolved {
                    request_id: id,
                    decision: DecisionKind::Cancelled,
                    by: "host".into(),
                    updated_input: None,
                    message: Some(why.to_owned()),
                    mode: None,
                };
                self.close(&r);
                r
            })
            .collect()
    }

    /// The earliest deadline among pending requests.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().filter_map(|(_, d)| *d).min()
    }

    /// Requests whose deadline has passed.
    pub fn expired(&self, now: Instant) -> Vec<String> {
        let mut ids: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, (_, d))| d.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The approval timeout, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// The agent's own id of a request: a request asked again after a host restart is shown as
/// `<agent's id>@<n>` (see [`reasked_id`]), so an answer to the earlier id can never apply.
pub fn native_request_id(id: &str) -> &str {
    let mut id = id;
    while let Some((head, tail)) = id.rsplit_once('@') {
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        id = head;
    }
    id
}

/// The id a request gets when it is asked again in generation `generation` (a transcript seq,
/// unique per re-adoption).
pub fn reasked_id(id: &str, generation: u64) -> String {
    format!("{}@{generation}", native_request_id(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(id: &str) -> ApprovalRequested {
        ApprovalRequested {
            request_id: id.into(),
            tool_call_id: None,
            tool_name: "Write".into(),
            input: json!({}),
            description: None,
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }
    }

    #[test]
    fn first_answer_wins_and_later_ones_learn_who_answered() {
        let mut c = ApprovalCoordinator::new(None);
        c.open(req("r1"));
        assert!(c.check("r1").is_ok());
        c.close(&nucleic_protocol::Decision::Allow.resolution("r1", "phone"));
        match c.check("r1") {
            Err(CoreError::AlreadyResolved { by, decision, .. }) => {
                assert_eq!(by, "phone");
                assert_eq!(decision, DecisionKind::Allow);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(c.check("nope"), Err(CoreError::UnknownRequest(_))));
    }

    #[test]
    fn reasked_ids_lead_back_to_the_agents_id() {
        assert_eq!(reasked_id("toolu_1", 57), "toolu_1@57");
        assert_eq!(reasked_id("toolu_1@57", 80), "toolu_1@80");
        assert_eq!(native_request_id("toolu_1@57@80"), "toolu_1");
        assert_eq!(native_request_id("a@b"), "a@b");
        assert_eq!(native_request_id("codex-k1-0"), "codex-k1-0");
        assert_eq!(native_request_id("x@"), "x@");
    }

    #[test]
    fn cancel_all_voids_every_pending_request() {
        let mut c = ApprovalCoordinator::new(None);
        c.open(req("b"));
        c.open(req("a"));
        let cancelled = c.cancel_all("turn ended");
        assert_eq!(cancelled.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(c.pending_count(), 0);
        assert!(matches!(c.check("a"), Err(CoreError::AlreadyResolved { .. })));
    }
}
