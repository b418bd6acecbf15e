//! What can go wrong at the egress boundary, with what was being done.

/// An egress error.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("allow-list entry {entry:?}: {why}")]
    BadEntry { entry: String, why: String },
    #[error("not a destination (host:port): {0:?}")]
    BadDestination(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl EgressError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> EgressError {
        EgressError::Io { what: what.into(), source }
    }
}
