//! Errors of the transcript store, each carrying the file it concerns.

use std::path::PathBuf;

/// A transcript operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("transcript {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "transcript {path}: event seq {got} does not follow {last} (seq must grow by exactly 1)"
    )]
    SeqGap { path: PathBuf, last: u64, got: u64 },
    #[error("transcript {path}: cannot encode event seq {seq}: {source}")]
    Encode {
        path: PathBuf,
        seq: u64,
        #[source]
        source: serde_json::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> StoreError {
        StoreError::Io { path: path.to_path_buf(), source }
    }
}
