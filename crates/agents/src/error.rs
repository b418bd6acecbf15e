//! Errors of the agent layer, with the context a person needs to act on them.

use std::path::PathBuf;

/// An agent operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot start agent {program}: {reason}")]
    Spawn { program: PathBuf, reason: String },
    #[error("refused to send an invalid message to the agent: {0}")]
    InvalidInput(String),
    #[error("no pending request {0} (already answered, cancelled, or never asked)")]
    UnknownRequest(String),
    #[error("the agent's input is closed (the process ended or input was closed)")]
    InputClosed,
    #[error("writing to the agent failed: {0}")]
    Write(#[source] std::io::Error),
    #[error("{what} timed out after {} s", after.as_secs_f32())]
    Timeout { what: String, after: std::time::Duration },
    #[error("this backend does not support {0}")]
    Unsupported(&'static str),
    /// A launch the backend cannot do (a fork, an option it has no flag for, no such mode).
    #[error("{0}")]
    Refused(String),
}
