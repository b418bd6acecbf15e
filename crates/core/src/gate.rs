//! The host's say on every approval before a person sees it: a policy that may answer itself.

use nucleic_protocol::{ApprovalRequested, Risk, RuleScope, SessionMode};

/// What the host's policy says about one approval request (see `nucleic-policy`, which the host
/// plugs in; the core only carries the answer out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// Allow or deny without a person, or ask one.
    pub verdict: Verdict,
    /// What decided (`policy:<rule>`, `invariant:<name>`, `mode:<mode>`, …): recorded as the
    /// `approvalResolved.by` of an answer the policy gave itself.
    pub by: String,
    /// Why, in words the model sees on a deny.
    pub reason: String,
    pub risk: Risk,
    pub risk_reasons: Vec<String>,
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
    Ask,
}

/// Judges approval requests of one session. Called on the session's writer task for every
/// request, so it must be quick (the policy engine takes microseconds) and must not block.
pub trait ApprovalPolicy: Send + Sync + std::fmt::Debug {
    fn judge(&self, request: &ApprovalRequested) -> Judgement;

    /// A person answered "always" in `scope`: keeps the narrowest rules that allow this call
    /// (in memory for the session, else in the project's or the host's rule file) and returns
    /// them; `Err` says why none can be kept (e.g. an invariant forbids it).
    fn remember(
        &self,
        request: &ApprovalRequested,
        scope: RuleScope,
    ) -> Result<Vec<String>, String>;

    /// The agent is about to be told that `request` (with the input it will run) is allowed,
    /// by a person or by this policy: what the allow implies beyond the agent (the host lets an
    /// allowed fetch's name through the session's egress proxy). Nothing by default.
    fn allowing(&self, request: &ApprovalRequested) {
        let _ = request;
    }

    /// Switches the session to Nucleic mode `mode` (an approved plan runs in the mode the
    /// person chose): every later call is judged under it.
    fn set_mode(&self, mode: SessionMode) -> Result<(), String>;
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
