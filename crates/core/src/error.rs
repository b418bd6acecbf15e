//! Errors of the session core.

use nucleic_agents::AgentError;
use nucleic_protocol::DecisionKind;
use nucleic_store::StoreError;

/// A session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("no pending approval {0} in this session")]
    UnknownRequest(String),
    #[error("approval {request_id} was already answered ({decision:?}) by {by}")]
    AlreadyResolved { request_id: String, decision: DecisionKind, by: String },
    #[error(
        "approval {request_id} is critical ({reasons}): allowing it needs a second, explicit confirmation; it is still pending"
    )]
    NeedsConfirmation { request_id: String, reasons: String },
    #[error("the session has ended")]
    SessionEnded,
    #[error("the session's agent is no longer running")]
    AgentGone,
    #[error("{0}")]
    Unsupported(String),
    #[error("transcript {path} already has a writer in {holder}; refusing a second one")]
    WriterBusy { path: std::path::PathBuf, holder: &'static str },
    #[error("cannot lock transcript {path} for writing: {source}")]
    Lock {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}
