//! Writers of sessions: starting one per session at a time, writing outside one (and recording
//! a host event either way), retiring them.

use super::writing::write_and_index;
use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::sessions::follower::summary_of;
use nucleic_core::{Draft, SessionHandle};
use nucleic_protocol::{Backend, EventKind, SessionSummary};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::Duration;

impl Context {
    /// Sets how long an idle session (agent alive, waiting for input, nothing pending) keeps
    /// its writer's transcript, lock and live bus before letting them go (reopened when the
    /// agent speaks or a client acts); `None` keeps them. Applies to every live writer.
    pub async fn set_idle_release(&self, after: Option<Duration>) {
        *self.idle_release.0.lock().unwrap_or_else(PoisonError::into_inner) = after;
        let live: Vec<SessionHandle> =
            self.live.lock().map(|l| l.values().cloned().collect()).unwrap_or_default();
        for handle in live {
            let _ = handle.release_when_idle(after).await;
        }
    }

    /// Once the run of `session` has ended and the catalog holds its end, closes its writer and
    /// forgets it: a finished session keeps nothing in memory (no writer task, no bus of recent
    /// batches). The next prompt resumes it under a new writer, which subscribers follow through
    /// [`Context::writes`]; host events go through `host::writing` meanwhile.
    pub(crate) fn retire_when_finished(&self, id: &str, session: &SessionHandle) {
        let (me, id, session) = (self.me.clone(), id.to_owned(), session.clone());
        tokio::spawn(async move {
            let idle = me.upgrade().and_then(|host| host.idle_release.get());
            if idle.is_some() {
                let _ = session.release_when_idle(idle).await;
            }
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
                host.stop_egress(&id);
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

    /// Records a host event in a session's transcript (through its writer when it has one).
    pub(crate) async fn record(&self, id: &str, kind: EventKind) -> Result<(), HostError> {
        if let Some(recorded) = record_by_writer(self.live_handle(id), &kind).await {
            return recorded;
        }
        let _turn = self.writer_turns.take(id).await?;
        // A follow-up may have started a writer while this waited for its turn.
        if let Some(recorded) = record_by_writer(self.live_handle(id), &kind).await {
            return recorded;
        }
        let row = self.session_row(id).await?;
        let transcript = PathBuf::from(&row.transcript);
        self.write_events(id, row.backend, &transcript, vec![Draft::host(kind)]).await?;
        Ok(())
    }
}

/// Records `kind` through the session's writer; `None` when it has none, or its writer closed
/// before taking the event (a resume replaced it): then it is written outside a writer.
async fn record_by_writer(
    handle: Option<SessionHandle>,
    kind: &EventKind,
) -> Option<Result<(), HostError>> {
    match handle?.record(kind.clone()).await {
        Err(nucleic_core::CoreError::SessionEnded) => None,
        other => Some(other.map_err(HostError::from)),
    }
}
