//! `TransferError`: why an export could not be written or an import could not be read.

use std::path::{Path, PathBuf};

/// An export or import failed. Line numbers are 1-based lines of the input text.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text is neither a Nucleic session export nor a JSONL stream of Nucleic events.
    #[error("not a Nucleic export: {why}")]
    NotAnExport { why: String },
    /// A line of the raw events section (or of a JSONL file) is not a Nucleic event.
    #[error("line {line}: not a Nucleic event: {source}")]
    BadEvent {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    /// Events must be numbered 1, 2, 3, … without gaps.
    #[error(
        "line {line}: event seq {got} where {expected} was expected (seq starts at 1 and grows by 1)"
    )]
    SeqGap { line: usize, expected: u64, got: u64 },
    /// All events of one export belong to one session.
    #[error("line {line}: event of session {got} in an export of session {expected}")]
    MixedSessions { line: usize, expected: String, got: String },
    /// The text is not a Claude Code transcript.
    #[error("not a Claude Code transcript: {why}")]
    NotAClaudeTranscript { why: String },
    /// The text is not a Codex rollout.
    #[error("not a Codex rollout: {why}")]
    NotACodexRollout { why: String },
}

impl TransferError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> TransferError {
        TransferError::Io { path: path.to_path_buf(), source }
    }
}

/// Shorthand for this crate's results.
pub type Result<T, E = TransferError> = std::result::Result<T, E>;
