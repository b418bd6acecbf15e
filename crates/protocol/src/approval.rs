//! Approval requests and their resolutions, as they appear in the event stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A gated tool call waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// A pending approval was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    #[serde(rename = "requestID")]
    pub request_id: String,
    pub decision: DecisionKind,
    /// Who answered: a client/device name, `policy:<rule>`, or `host` for cancellations.
    pub by: String,
    /// The input that will run, when the person edited it.
    #[serde(rename = "updatedInput", default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// The reason given to the model on a deny, or why the host cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The shape of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}
