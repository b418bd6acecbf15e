//! Events no live controller writes (a failed setup, a rename of a dormant session, recovery's
//! "interrupted", an import) take one step: the core's sequencer numbers and writes them, the
//! catalog folds them, clients are told. Writer starts and these writes are serialised per
//! session, so concurrent follow-ups to a dormant session start one writer, not several; and a
//! writer whose run has ended is retired (closed and forgotten) in the same turn; one whose agent
//! is alive but idle lets its transcript go after the idle deadline ([`IdleRelease`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nucleic_catalog::Catalog;
use nucleic_core::{Draft, Sequencer};
use nucleic_protocol::Backend;
use tokio::sync::OwnedMutexGuard;

use crate::error::HostError;

/// Longest wait for another writer start or host write of the same session to finish.
pub(crate) const TURN_WITHIN: Duration = Duration::from_secs(60);

/// How long a session waits for input (agent alive, nothing pending) before its writer lets
/// the transcript, its lock and its live bus go, unless [`crate::Context::set_idle_release`] says else.
pub const IDLE_RELEASE_AFTER: Duration = Duration::from_secs(30);

/// The idle deadline of new writers (`None`: writers of idle sessions stay open).
#[derive(Debug)]
pub(crate) struct IdleRelease(pub(crate) Mutex<Option<Duration>>);

impl Default for IdleRelease {
    fn default() -> IdleRelease {
        IdleRelease(Mutex::new(Some(IDLE_RELEASE_AFTER)))
    }
}

impl IdleRelease {
    pub(crate) fn get(&self) -> Option<Duration> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What writing to a transcript outside a controller found.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Written {
    /// Bytes of a torn last line cut off when the transcript was opened.
    pub truncated_bytes: u64,
}

/// Becomes the writer of `transcript` (refused if it has one), writes `drafts` durably, lets the
/// writer go and folds the events into the catalog. Blocking.
pub(crate) fn write_and_index(
    catalog: &Catalog,
    id: &str,
    backend: Backend,
    transcript: &Path,
    drafts: Vec<Draft>,
) -> Result<Written, HostError> {
    let mut sequencer = Sequencer::open(id, backend, transcript)?;
    let truncated_bytes = sequencer.truncated_bytes();
    let events = sequencer.append_now(drafts)?;
    drop(sequencer);
    catalog.apply_events(id, transcript, &events)?;
    Ok(Written { truncated_bytes })
}

/// One turn per session at starting a writer or writing outside one.
#[derive(Debug, Default)]
pub(crate) struct WriterTurns {
    pub(crate) turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A session's turn; dropping it lets the next caller in.
#[derive(Debug)]
pub(crate) struct Turn {
    pub(crate) _guard: OwnedMutexGuard<()>,
}

impl WriterTurns {
    /// Sessions whose turn is taken or waited for (the others are forgotten first).
    pub(crate) fn held(&self) -> usize {
        let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
        turns.retain(|_, l| Arc::strong_count(l) > 1);
        turns.len()
    }

    /// Waits (at most [`TURN_WITHIN`]) for the session's turn.
    pub(crate) async fn take(&self, id: &str) -> Result<Turn, HostError> {
        let lock = {
            let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
            // Forget sessions nobody is waiting for.
            turns.retain(|_, l| Arc::strong_count(l) > 1);
            Arc::clone(turns.entry(id.to_owned()).or_default())
        };
        match tokio::time::timeout(TURN_WITHIN, lock.lock_owned()).await {
            Ok(guard) => Ok(Turn { _guard: guard }),
            Err(_) => Err(HostError::Invalid(format!(
                "session {id}: another agent start or write did not finish within {} s",
                TURN_WITHIN.as_secs()
            ))),
        }
    }
}
