//! Plans and questions in the writer: an empty plan refused before a person sees it, a plan
//! approval that switches the session's mode before the agent may go on, and answers to
//! questions checked against what was asked and turned into the input the agent expects.

use nucleic_agents::{AgentControl, AgentError};
use nucleic_protocol::{
    ASK_USER_QUESTION, ApprovalRequested, Decision, EGRESS_APPROVAL, EMPTY_PLAN_GUIDANCE,
    EXIT_PLAN_MODE, SessionMode, answered_input, plan_text,
};
use serde_json::Value;

use super::Writer;
use crate::error::CoreError;

/// What `approvalResolved.by` says when the host refuses an empty plan.
pub(super) const EMPTY_PLAN_BY: &str = "host:empty-plan";

/// The backend permission mode a session executes an approved plan in, whatever its Nucleic
/// mode: Claude Code's `default`, in which the host's PreToolUse hook decides every call under
/// the session's Nucleic mode and whatever it leaves to a person is really asked (in
/// `acceptEdits` or `bypassPermissions` the CLI would skip its own prompt).
pub(super) fn backend_mode(_mode: SessionMode) -> &'static str {
    "default"
}

/// What `approvalResolved.by` says when the host refuses an agent's request under the name of
/// the host's own questions.
pub(super) const RESERVED_BY: &str = "host:reserved";

/// The host's own answer to a request no person needs to see: an empty plan, or an agent's
/// request named as the host's egress question (which a person could take for one).
pub(super) fn refusal(request: &ApprovalRequested) -> Option<(Decision, String)> {
    if request.tool_name == EGRESS_APPROVAL {
        let message = format!(
            "`{EGRESS_APPROVAL}` is the name of the host's own network questions; a tool of that name is refused"
        );
        return Some((Decision::Deny { message }, RESERVED_BY.to_owned()));
    }
    if request.tool_name == EXIT_PLAN_MODE && plan_text(&request.input).is_none() {
        let message = EMPTY_PLAN_GUIDANCE.to_owned();
        return Some((Decision::Deny { message }, EMPTY_PLAN_BY.to_owned()));
    }
    None
}

/// The decision as the agent gets it, and the input recorded with the answer.
pub(super) struct Prepared {
    pub to_agent: Decision,
    pub updated_input: Option<Value>,
}

/// Checks that `decision` fits `request` (a plan is approved with a mode, questions are
/// answered with their choices; "allow" alone fits neither).
pub(super) fn prepare(
    request: &ApprovalRequested,
    decision: &Decision,
) -> Result<Option<Prepared>, CoreError> {
    let invalid = |m: String| CoreError::Agent(AgentError::InvalidInput(m));
    let tool = request.tool_name.as_str();
    match (tool, decision) {
        (EXIT_PLAN_MODE, Decision::ApprovePlan { .. }) => {
            Ok(Some(Prepared { to_agent: Decision::Allow, updated_input: None }))
        }
        (ASK_USER_QUESTION, Decision::Answer { answers }) => {
            let input = answered_input(&request.input, answers).map_err(invalid)?;
            let to_agent = Decision::AllowEdited { updated_input: input.clone() };
            Ok(Some(Prepared { to_agent, updated_input: Some(input) }))
        }
        (_, Decision::ApprovePlan { .. }) => {
            Err(invalid(format!("approvePlan answers a plan ({EXIT_PLAN_MODE}), not {tool}")))
        }
        (_, Decision::Answer { .. }) => {
            Err(invalid(format!("answer answers questions ({ASK_USER_QUESTION}), not {tool}")))
        }
        (EXIT_PLAN_MODE, Decision::Allow | Decision::AllowAlways { .. }) => Err(invalid(
            "a plan is approved with approvePlan and the mode to execute it in (readonly, edit or full), or rejected with deny and feedback".into(),
        )),
        (ASK_USER_QUESTION, Decision::Allow | Decision::AllowAlways { .. }) => Err(invalid(
            "questions are answered with answer (a choice or free text per question), or declined with deny".into(),
        )),
        _ => Ok(None),
    }
}

impl<A: AgentControl> Writer<A> {
    /// Switches the session to `mode` before an approved plan runs: the policy's Nucleic mode
    /// first, then the backend's permission mode. Either failing leaves the plan pending.
    pub(super) async fn switch_mode(&mut self, mode: SessionMode) -> Result<(), CoreError> {
        if let Some(policy) = &self.config.policy {
            policy.set_mode(mode).map_err(|m| CoreError::Agent(AgentError::InvalidInput(m)))?;
        }
        if self.capabilities.set_permission_mode {
            let switched = self.agent.set_permission_mode(backend_mode(mode)).await;
            self.report(switched, "switching the mode for the approved plan failed")?;
        }
        Ok(())
    }
}
