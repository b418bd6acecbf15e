//! Approval requests and their resolutions, as they appear in the event stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::interactive::{QuestionAnswer, SessionMode};

/// The `toolName` of an approval the host asks itself (no tool call of the agent's): may the
/// session's egress proxy connect to a name that is not on its allow-list? Its `input` is
/// [`EgressAsked`]; it is answered `allow` (this session), `allowAlways` (added to the
/// project's sandbox domains) or `deny`. An agent's own request of this name is refused.
pub const EGRESS_APPROVAL: &str = "egress";

/// The `input` of an [`EGRESS_APPROVAL`] request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct EgressAsked {
    /// The name asked about (lower case).
    pub host: String,
    pub port: u16,
    /// The request's method (`CONNECT` for HTTPS, else the plain HTTP method).
    pub method: String,
}

impl EgressAsked {
    /// `host:port`, as the question shows it.
    pub fn destination(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The approval request asking it, with id `request_id`.
    pub fn request(&self, request_id: String) -> ApprovalRequested {
        ApprovalRequested {
            request_id,
            tool_call_id: None,
            tool_name: EGRESS_APPROVAL.to_owned(),
            input: serde_json::to_value(self).unwrap_or(Value::Null),
            description: Some(format!("allow network access to {}?", self.destination())),
            blocked_path: None,
            risk: Some(Risk::Medium),
            risk_reasons: vec!["network: a destination not on the allow-list".to_owned()],
        }
    }

    /// What `request` asks, when it is an [`EGRESS_APPROVAL`].
    pub fn of(request: &ApprovalRequested) -> Option<EgressAsked> {
        (request.tool_name == EGRESS_APPROVAL)
            .then(|| serde_json::from_value(request.input.clone()).ok())
            .flatten()
    }
}

/// A gated tool call waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ApprovalRequested {
    /// The id decisions must quote; unique within the session.
    #[serde(rename = "requestID")]
    pub request_id: String,
    #[serde(rename = "toolCallID", default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(rename = "toolName")]
    pub tool_name: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The path outside the allowed set that triggered the ask, if the agent said.
    #[serde(rename = "blockedPath", default, skip_serializing_if = "Option::is_none")]
    pub blocked_path: Option<String>,
    /// How much harm the call could do, as the host's policy classified it (absent when the
    /// host has no policy, e.g. `nucleic run`, or in transcripts written before it had one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// What makes it risky ("network", "deletes 2 files", …), most serious first.
    #[serde(rename = "riskReasons", default, skip_serializing_if = "Vec::is_empty")]
    pub risk_reasons: Vec<String>,
}

/// Where an "always" rule is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    /// This session only (in memory).
    Session,
    /// Every session of this project (the host's per-project rule file).
    Project,
    /// Every session of this host (the host's rule file).
    Host,
}

/// How much harm a tool call could do. A `critical` approval needs a second, explicit
/// confirmation in every client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads, builds, tests.
    Low,
    /// Writes in the worktree, network reads, unknown commands.
    Medium,
    /// Deletes trees, discards work, installs dependencies, publishes.
    High,
    /// Breaks a hard invariant or could take the machine down.
    Critical,
}

/// A pending approval was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ApprovalResolved {
    #[serde(rename = "requestID")]
    pub request_id: String,
    pub decision: DecisionKind,
    /// Who answered: a client/device name, `policy:<rule>`, or `host` for cancellations.
    pub by: String,
    /// The input that will run, when the person edited it.
    #[serde(rename = "updatedInput", default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// The reason given to the model on a deny, why the host cancelled, or the rules an
    /// "always" in a scope kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// An approved plan: the mode the session executes it in (switched before the agent went on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SessionMode>,
}

/// The shape of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum DecisionKind {
    /// Run the call as proposed.
    Allow,
    /// Run the call with a person's edited input.
    AllowEdited,
    /// Run it, and stop asking about this tool for the rest of the session.
    AllowAlways,
    /// Refuse; the reason goes back to the model and the turn continues.
    Deny,
    /// Refuse and stop the turn.
    DenyAndStop,
    /// Nobody answered in time, the turn ended, or the agent died: the request is void.
    Cancelled,
    /// The agent's plan was approved, to be executed in the resolution's `mode`.
    ApprovePlan,
    /// The agent's questions were answered (the answers are in `updatedInput`).
    Answered,
}

/// What a person (or policy) decided about one approval request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Decision {
    /// Run the call as proposed.
    Allow,
    /// Run the call with this input instead (must be a JSON object).
    AllowEdited {
        #[serde(rename = "updatedInput")]
        updated_input: Value,
    },
    /// Run it and stop asking. Without `scope`: the agent's own "always" for this tool in this
    /// session. With `scope`: the host adds the narrowest rule that allows this call to the
    /// session (in memory), the project's or this host's rule file (kept across restarts).
    AllowAlways {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<RuleScope>,
    },
    /// Refuse; `message` is fed back to the model.
    Deny { message: String },
    /// Refuse and stop the turn.
    DenyAndStop { message: String },
    /// Approve the agent's plan (`ExitPlanMode`) and execute it in `mode`: the session switches
    /// to that mode before the agent goes on. (To reject a plan, `deny` with the feedback.)
    ApprovePlan { mode: SessionMode },
    /// Answer the agent's questions (`AskUserQuestion`): one answer per question asked.
    Answer { answers: Vec<QuestionAnswer> },
}

impl Decision {
    /// The kind recorded in `approvalResolved`.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Allow => DecisionKind::Allow,
            Decision::AllowEdited { .. } => DecisionKind::AllowEdited,
            Decision::AllowAlways { .. } => DecisionKind::AllowAlways,
            Decision::Deny { .. } => DecisionKind::Deny,
            Decision::DenyAndStop { .. } => DecisionKind::DenyAndStop,
            Decision::ApprovePlan { .. } => DecisionKind::ApprovePlan,
            Decision::Answer { .. } => DecisionKind::Answered,
        }
    }

    /// Checks what every backend requires: edited input is an object, deny reasons are not empty.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Decision::AllowEdited { updated_input } if !updated_input.is_object() => {
                Err("edited tool input must be a JSON object".into())
            }
            Decision::Deny { message } | Decision::DenyAndStop { message }
                if message.trim().is_empty() =>
            {
                Err("a deny needs a reason for the model".into())
            }
            Decision::Answer { answers } if answers.is_empty() => {
                Err("an answer needs one answer per question".into())
            }
            Decision::Allow
            | Decision::AllowEdited { .. }
            | Decision::AllowAlways { .. }
            | Decision::Deny { .. }
            | Decision::DenyAndStop { .. }
            | Decision::ApprovePlan { .. }
            | Decision::Answer { .. } => Ok(()),
        }
    }

    /// The approvalResolved payload for this decision.
    pub fn resolution(&self, request_id: &str, by: &str) -> ApprovalResolved {
        let (updated_input, message) = match self {
            Decision::AllowEdited { updated_input } => (Some(updated_input.clone()), None),
            Decision::Deny { message } | Decision::DenyAndStop { message } => {
                (None, Some(message.clone()))
            }
            Decision::Allow
            | Decision::AllowAlways { .. }
            | Decision::ApprovePlan { .. }
            | Decision::Answer { .. } => (None, None),
        };
        let mode = match self {
            Decision::ApprovePlan { mode } => Some(*mode),
            _ => None,
        };
        ApprovalResolved {
            request_id: request_id.to_owned(),
            decision: self.kind(),
            by: by.to_owned(),
            updated_input,
            message,
            mode,
        }
    }
}
