//! Host errors, each mapped to the sync protocol's error code.

use nucleic_protocol::ProtocolErrorCode;

/// A host operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Limit(String),
    #[error("cursor {from_seq} is past the end of the session (last seq {last_seq})")]
    BadCursor { from_seq: u64, last_seq: u64 },
    #[error(transparent)]
    Git(#[from] nucleic_git::GitError),
    #[error(transparent)]
    Catalog(#[from] nucleic_catalog::CatalogError),
    #[error(transparent)]
    Core(#[from] nucleic_core::CoreError),
    #[error(transparent)]
    Agent(#[from] nucleic_agents::AgentError),
    #[error(transparent)]
    Store(#[from] nucleic_store::StoreError),
    #[error(transparent)]
    Keeper(#[from] nucleic_agents::keeper::KeeperError),
    #[error("a host task failed: {0}")]
    Task(String),
    #[error("refused: required checks fail ({0}); fix them, or force with a reason")]
    ChecksFailed(String),
    /// What the principal may not do, and why (an MCP grant's scopes and limits).
    #[error("refused: {0}")]
    Forbidden(String),
}

impl HostError {
    /// The wire code clients see.
    pub fn code(&self) -> ProtocolErrorCode {
        use nucleic_core::CoreError;
        match self {
            HostError::NotFound(_) => ProtocolErrorCode::NotFound,
            HostError::Invalid(_) => ProtocolErrorCode::InvalidRequest,
            HostError::Limit(_) => ProtocolErrorCode::LimitReached,
            HostError::ChecksFailed(_) => ProtocolErrorCode::GitRefused,
            HostError::Forbidden(_) => ProtocolErrorCode::Forbidden,
            HostError::BadCursor { .. } => ProtocolErrorCode::BadCursor,
            HostError::Git(e) => match e {
                nucleic_git::GitError::NotARepo { .. }
                | nucleic_git::GitError::UnknownRef { .. } => ProtocolErrorCode::InvalidRequest,
                _ => ProtocolErrorCode::GitRefused,
            },
            HostError::Core(e) => match e {
                CoreError::AlreadyResolved { .. } => ProtocolErrorCode::AlreadyResolved,
                // A request the session never asked: not an answer that came too late.
                CoreError::UnknownRequest(_) => ProtocolErrorCode::NotFound,
                CoreError::Unsupported(_) => ProtocolErrorCode::Unsupported,
                CoreError::AgentGone
                | CoreError::SessionEnded
                | CoreError::NeedsConfirmation { .. } => ProtocolErrorCode::InvalidRequest,
                CoreError::Agent(_) => ProtocolErrorCode::InvalidRequest,
                CoreError::Store(_) | CoreError::Lock { .. } => ProtocolErrorCode::Internal,
                CoreError::WriterBusy { .. } => ProtocolErrorCode::InvalidRequest,
            },
            HostError::Agent(_) => ProtocolErrorCode::InvalidRequest,
            HostError::Catalog(_)
            | HostError::Store(_)
            | HostError::Task(_)
            | HostError::Keeper(_) => ProtocolErrorCode::Internal,
        }
    }

    /// For `alreadyResolved`: who answered first.
    pub fn resolved_by(&self) -> Option<&str> {
        match self {
            HostError::Core(nucleic_core::CoreError::AlreadyResolved { by, .. }) => Some(by),
            _ => None,
        }
    }
}

/// Runs blocking work (git, SQLite) off the async workers.
pub(crate) async fn blocking<T, E>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, HostError>
where
    T: Send + 'static,
    E: Into<HostError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HostError::Task(e.to_string()))?
        .map_err(Into::into)
}
