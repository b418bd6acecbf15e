//! A session's lifecycle status, as tracked by its single writer.

use serde::{Deserialize, Serialize};

/// Where a session stands. Spelled on the wire exactly as in the product docs
/// (`idle / running / awaiting-approval / awaiting-input / finished / error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum SessionStatus {
    /// Created, nothing sent to the agent yet.
    Idle,
    /// The agent is working on a turn.
    Running,
    /// At least one approval is pending; the agent waits for a person.
    AwaitingApproval,
    /// The turn is over and the agent process waits for a follow-up.
    AwaitingInput,
    /// The agent process ended and its last turn succeeded (or it was stopped on request).
    Finished,
    /// The agent process ended in failure (crash, API error, spawn failure, …).
    Error,
}

impl SessionStatus {
    /// True once the agent process is gone for good.
    pub fn is_terminal(self) -> bool {
        match self {
            SessionStatus::Finished | SessionStatus::Error => true,
            SessionStatus::Idle
            | SessionStatus::Running
            | SessionStatus::AwaitingApproval
            | SessionStatus::AwaitingInput => false,
        }
    }

    /// The wire name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::AwaitingApproval => "awaiting-approval",
            SessionStatus::AwaitingInput => "awaiting-input",
            SessionStatus::Finished => "finished",
            SessionStatus::Error => "error",
        }
    }
}
