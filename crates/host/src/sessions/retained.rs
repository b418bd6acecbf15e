//! What the host holds in memory per session, counted: a leak check for tests and the memory
//! bench (a session created, finished and discarded must leave no entry behind).

use crate::context::Context;

/// Per-session entries the host holds right now (entries kept only until the next use of their
/// map are forgotten before counting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    /// Sessions with a writer in memory (their agent alive, or finished and not yet retired).
    pub writers: usize,
    /// Of those, writers whose agent has exited.
    pub finished_writers: usize,
    /// Of those, writers of idle sessions that let their transcript go.
    pub released_writers: usize,
    /// Transcripts with a writer anywhere in this process (`nucleic_core::open_writers`).
    pub open_transcripts: usize,
    /// Agents' output readers alive anywhere in this process, two per running agent
    /// (`nucleic_agents::supervisor::live_readers`).
    pub agent_readers: usize,
    /// Session policies still alive.
    pub policies: usize,
    /// Keeper directories this host runs or re-adopted and has not released.
    pub keepers: usize,
    /// Sessions with a check running.
    pub checks: usize,
    /// Sessions whose snapshot or review lock is held.
    pub review_locks: usize,
    /// Sessions whose writer turn is taken or waited for.
    pub writer_turns: usize,
    /// Client message ids being answered.
    pub reply_turns: usize,
    /// Sessions whose egress proxy is served.
    pub egress_proxies: usize,
}

impl Retained {
    /// The sum of every count but the process-wide `open_transcripts` and `agent_readers`.
    pub fn total(&self) -> usize {
        self.writers
            + self.policies
            + self.keepers
            + self.checks
            + self.review_locks
            + self.writer_turns
            + self.reply_turns
            + self.egress_proxies
    }
}

impl Context {
    /// Counts what the host holds per session (see [`Retained`]).
    pub fn retained(&self) -> Retained {
        let (writers, finished_writers, released_writers) =
            self.live.lock().map_or((0, 0, 0), |live| {
                let states: Vec<_> = live.values().map(|h| h.state()).collect();
                let finished = states.iter().filter(|s| s.finished.is_some()).count();
                (live.len(), finished, states.iter().filter(|s| s.released).count())
            });
        Retained {
            writers,
            finished_writers,
            released_writers,
            open_transcripts: nucleic_core::open_writers(),
            agent_readers: nucleic_agents::supervisor::live_readers(),
            policies: self.policies.held(),
            keepers: self.keepers.lock().map_or(0, |k| k.len()),
            checks: self.checks.held(),
            review_locks: self.review_locks.held(),
            writer_turns: self.writer_turns.held(),
            reply_turns: self.reply_turns.held(),
            egress_proxies: self.egress.held(),
        }
    }
}
