//! Turn starts that cost no git process: a watch on the worktree from its last turn's end
//! snapshot, and when nothing below it changed since, the next turn starts from that tree.
//!
//! The watch (`pool_watch`: inotify on every directory, sticky once anything changed, an
//! overflowed or broken one counts as changed) starts before the end snapshot reads the
//! worktree, so a write the snapshot might have missed is seen. What inotify cannot see — a
//! write through a shared memory map made after the file was closed — is not lost: the next
//! end snapshot reads the whole worktree again, so it shows in that turn's diff.
//!
//! Opening and closing a watch are blocking work (closing waits for the kernel to release its
//! marks, an RCU grace period): both happen on the boundary's blocking thread, never on an
//! async worker (dropped there, the paced bench's p99 went from 3 to 50 ms).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use crate::worktrees::pool_watch::Watch;

/// At most this many sessions keep a watch (one inotify instance each; the per-user limit is
/// often 128, and the worktree pools watch too). Past it, a turn start takes its snapshot.
const MAX_WATCHED: usize = 64;

/// Each session's end tree and the watch that started before it was read.
#[derive(Debug, Default)]
pub(crate) struct TurnWatches {
    sessions: Mutex<HashMap<String, (String, Watch)>>,
}

impl TurnWatches {
    /// Starts watching `worktree` for a snapshot about to be taken; `None` when inotify is
    /// unavailable, its limits are reached, or enough sessions are watched already.
    pub(crate) fn watch(&self, worktree: &Path) -> Option<Watch> {
        if self.sessions.lock().unwrap_or_else(PoisonError::into_inner).len() >= MAX_WATCHED {
            return None;
        }
        Watch::start(worktree)
    }

    /// Keeps the end snapshot `tree` of session `id` and the watch started before it; what it
    /// replaces is the caller's to drop (off the async workers: see [`TurnWatches::take`]).
    #[must_use]
    pub(crate) fn keep(&self, id: &str, tree: String, watch: Watch) -> Option<(String, Watch)> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.insert(id.to_owned(), (tree, watch))
    }

    /// The session's last end tree and its watch, no longer kept. Closing a watch waits for
    /// the kernel to let go of its marks (an RCU grace period, milliseconds): drop it on a
    /// blocking thread, never on an async worker.
    #[must_use]
    pub(crate) fn take(&self, id: &str) -> Option<(String, Watch)> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
    }
}

/// The end tree of a taken watch if nothing below its worktree changed since; the watch is
/// closed either way (call on a blocking thread).
pub(crate) fn unchanged(taken: Option<(String, Watch)>) -> Option<String> {
    let (tree, watch) = taken?;
    (!watch.changed()).then_some(tree)
}
