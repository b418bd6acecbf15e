//! The writer's decisions on approvals: a person's (or the policy's) answer checked and sent
//! to the agent, approvals a previous host left pending asked again, and expired ones denied.

use nucleic_agents::{AgentControl, AgentError};
use nucleic_protocol::{ApprovalRequested, ApprovalResolved, Decision, DecisionKind, EventKind};

use super::{Writer, plans};
use crate::approvals::{native_request_id, reasked_id};
use crate::error::CoreError;
use crate::sequencer::Draft;

impl<A: AgentControl> Writer<A> {
    pub(super) async fn decide(
        &mut self,
        request_id: &str,
        decision: Decision,
        by: &str,
        confirmed: bool,
    ) -> Result<ApprovalResolved, CoreError> {
        if self.is_host_ask(request_id) {
            return self.decide_host(request_id, decision, by);
        }
        let request = self.approvals.check(request_id)?;
        let allows = matches!(
            decision,
            Decision::Allow
                | Decision::AllowEdited { .. }
                | Decision::AllowAlways { .. }
                | Decision::ApprovePlan { .. }
                | Decision::Answer { .. }
        );
        if allows && !confirmed && request.risk == Some(nucleic_protocol::Risk::Critical) {
            return Err(CoreError::NeedsConfirmation {
                request_id: request_id.to_owned(),
                reasons: request.risk_reasons.join(", "),
            });
        }
        let caps = self.capabilities;
        let unsupported = match decision.kind() {
            DecisionKind::AllowEdited if !caps.edited_tool_input => Some("edited tool input"),
            DecisionKind::AllowAlways if !caps.allow_always => Some("always-allow"),
            DecisionKind::DenyAndStop if !caps.deny_and_stop => Some("deny-and-stop"),
            _ => None,
        };
        if let Some(what) = unsupported {
            return Err(CoreError::Unsupported(format!("this backend does not support {what}")));
        }
        decision.validate().map_err(|m| CoreError::Agent(AgentError::InvalidInput(m)))?;
        let prepared = plans::prepare(request, &decision)?;
        // "Always" in a scope: the rule is the host's (the agent is told plain allow); without
        // a policy the agent's own session "always" stands in.
        let mut message = None;
        let to_agent = match (&decision, &self.config.policy) {
            // A plan or an answer, as the agent takes it.
            _ if let Some(p) = &prepared => p.to_agent.clone(),
            (Decision::AllowAlways { scope: Some(scope) }, Some(policy)) => {
                let request = self.approvals.check(request_id)?;
                let rules = policy
                    .remember(request, *scope)
                    .map_err(|m| CoreError::Agent(AgentError::InvalidInput(m)))?;
                message =
                    Some(format!("always allowed in {}: {}", scope_name(*scope), rules.join(", ")));
                Decision::Allow
            }
            (Decision::AllowAlways { .. }, _) => Decision::AllowAlways { scope: None },
            _ => decision.clone(),
        };
        // An approved plan runs in its mode: switched before the agent is told to go on.
        if let Decision::ApprovePlan { mode } = decision {
            self.switch_mode(mode).await?;
        }
        if allows && let Some(policy) = &self.config.policy {
            let mut allowed = self.approvals.check(request_id)?.clone();
            if let Decision::AllowEdited { updated_input } = &decision {
                allowed.input = updated_input.clone();
            }
            policy.allowing(&allowed);
        }
        match self.agent.respond(native_request_id(request_id), &to_agent).await {
            Ok(()) => {
                let mut resolution = decision.resolution(request_id, by);
                resolution.message = resolution.message.or(message);
                resolution.updated_input =
                    resolution.updated_input.or_else(|| prepared.and_then(|p| p.updated_input));
                self.append(vec![Draft::host(EventKind::ApprovalResolved(resolution.clone()))]);
                Ok(resolution)
            }
            Err(AgentError::UnknownRequest(_)) => {
                // The agent stopped waiting (turn ended, process died) before this answer arrived.
                let void = self.approvals.cancel_all("the agent no longer waits for this answer");
                self.append(
                    void.into_iter().map(|r| Draft::host(EventKind::ApprovalResolved(r))).collect(),
                );
                Err(CoreError::UnknownRequest(request_id.to_owned()))
            }
            Err(e) => Err(CoreError::Agent(e)),
        }
    }

    /// Asks the approvals a previous host left pending again, under new ids, and answers the
    /// old ids `cancelled`: an answer meant for the old request can never apply. The host's own
    /// questions are not asked again (the connection that asked died with that host).
    pub(super) fn ask_again(&mut self, pending: Vec<ApprovalRequested>, generation: u64) {
        let mut drafts = Vec::new();
        for old in pending {
            // The host's own question went with the connection that asked it: voided only.
            let host_question = old.tool_name == nucleic_protocol::EGRESS_APPROVAL;
            if host_question {
                // Its voiding moves no status, as its asking did not.
                self.settled.insert(old.request_id.clone());
            } else {
                let mut again = old.clone();
                again.request_id = reasked_id(&old.request_id, generation);
                drafts.push(Draft::host(EventKind::ApprovalRequested(again)));
            }
            let message = if host_question {
                "the host restarted"
            } else {
                "asked again: the host restarted"
            };
            drafts.push(Draft::host(EventKind::ApprovalResolved(ApprovalResolved {
                request_id: old.request_id,
                decision: DecisionKind::Cancelled,
                by: "host".into(),
                updated_input: None,
                message: Some(message.into()),
                mode: None,
            })));
        }
        self.append(drafts);
    }

    pub(super) async fn expire_approvals(&mut self) {
        let secs = self.approvals.timeout().map_or(0, |t| t.as_secs());
        for id in self.approvals.expired(tokio::time::Instant::now()) {
            if self.is_host_ask(&id) {
                self.expire_host(&id);
                continue;
            }
            let message = format!("no answer within {secs} s; denied by the approval timeout");
            let _ = self.decide(&id, Decision::Deny { message }, "host:timeout", false).await;
        }
    }
}

fn scope_name(scope: nucleic_protocol::RuleScope) -> &'static str {
    match scope {
        nucleic_protocol::RuleScope::Session => "this session",
        nucleic_protocol::RuleScope::Project => "this project",
        nucleic_protocol::RuleScope::Host => "this host",
    }
}
