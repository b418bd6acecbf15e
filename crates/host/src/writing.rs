//! Events no live controller writes (a failed setup, a rename of a dormant session, recovery's
//! "interrupted", an import) take one step: the core's sequencer numbers and writes them, the
//! catalog folds them, clients are told. Writer starts and these writes are serialised per
//! session, so concurrent follow-ups to a dormant session start one writer, not several; and a
//! writer whose run has ended is retired (closed and forgotten) in the same turn.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nucleic_catalog::Catalog;
use nucleic_core::{Draft, Sequencer, SessionHandle};
use nucleic_protocol::{Backend, SessionSummary};
use tokio::sync::OwnedMutexGuard;

use crate::error::{HostError, blocking};
use crate::follower::summary_of;
use crate::host::Host;

/// Longest wait for another writer start or host write of the same session to finish.
const TURN_WITHIN: Duration = Duration::from_secs(60);

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
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A session's turn; dropping it lets the next caller in.
#[derive(Debug)]
pub(crate) struct Turn {
    _guard: OwnedMutexGuard<()>,
}

impl WriterTurns {
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

impl Host {
    /// Once the run of `session` has ended and the catalog holds its end, closes its writer and
    /// forgets it: a finished session keeps nothing in memory (no writer task, no bus of recent
    /// batches). The next prompt resumes it under a new writer, which subscribers follow through
    /// [`Host::writes`]; host events go through `host::writing` meanwhile.
    pub(crate) fn retire_when_finished(&self, id: &str, session: &SessionHandle) {
        let (me, id, session) = (self.me.clone(), id.to_owned(), session.clone());
        tokio::spawn(async move {
            session.wait_finished().await;
            if session.state().finished.is_none() {
                return; // the writer went without an end (the host is stopping)
            }
            let Some(host) = me.upgrade() else { return };
            // The catalog folds the end first (a bounded wait), so the row is current.
            let _ = host.session_row(&id).await;
            let Ok(_turn) = host.writer_turns.take(&id).await else { return };
            let retired = host.live.lock().ok().and_then(|mut live| {
                let same = live.get(&id).is_some_and(|h| h.is_same(&session));
                if same { live.remove(&id) } else { None }
            });
            if let Some(handle) = retired {
                let _ = handle.close().await;
            }
        });
    }

    /// Write → index → announce, for events of a session no controller writes. The caller
    /// holds the session's turn (or the session is new).
    pub(crate) async fn write_events(
        &self,
        id: &str,
        backend: Backend,
        transcript: &Path,
        drafts: Vec<Draft>,
    ) -> Result<SessionSummary, HostError> {
        let (catalog, key, path) = (self.catalog.clone(), id.to_owned(), transcript.to_owned());
        let row = blocking(move || {
            write_and_index(&catalog, &key, backend, &path, drafts)?;
            Ok::<_, HostError>(catalog.session(&key)?)
        })
        .await?
        .ok_or_else(|| HostError::NotFound(format!("session {id}")))?;
        let _ = self.writes.send(id.to_owned());
        let summary = summary_of(&row);
        let _ = self.changes.send(summary.clone());
        Ok(summary)
    }
}
