//! What recovery did at open, for the log and for `nucleic gc`.

use std::path::PathBuf;

/// What recovery did, for the log and for `nucleic gc`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The catalog was unreadable and was rebuilt from transcripts (old file kept here).
    pub catalog_rebuilt_from: Option<PathBuf>,
    /// Sessions whose catalog row caught up with events it had missed.
    pub rows_caught_up: usize,
    /// Sessions that were live when the host died, now closed as interrupted.
    pub interrupted: Vec<String>,
    /// Agent processes of the dead host that were still running and were stopped.
    pub orphans_stopped: Vec<u32>,
    /// Torn transcript tails cut off.
    pub torn_tails: usize,
    /// Sessions whose worktree directory is gone (git's stale entries were pruned).
    pub missing_worktrees: Vec<String>,
    /// Sessions whose agent ran under a keeper: re-adopted (or, if that fails, closed as
    /// interrupted) once the host is open, instead of being stopped here.
    pub kept: Vec<String>,
}

impl RecoveryReport {
    /// True when nothing needed repair.
    pub fn is_clean(&self) -> bool {
        self == &RecoveryReport::default()
    }
}
