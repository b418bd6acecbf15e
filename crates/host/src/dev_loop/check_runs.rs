//! The checks running per session and the switches that stop them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// The checks running per session: one run of a session's checks at a time, and the switch
/// that stops them.
#[derive(Debug, Default)]
pub(crate) struct CheckRuns {
    pub(crate) sessions: Mutex<HashMap<String, SessionChecks>>,
}

#[derive(Debug, Clone)]
pub(crate) struct SessionChecks {
    pub(crate) turn: Arc<tokio::sync::Mutex<()>>,
    pub(crate) stop: watch::Sender<bool>,
}

impl CheckRuns {
    pub(crate) fn of(&self, id: &str) -> SessionChecks {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget sessions with no check running (a running one holds its `turn`).
        sessions.retain(|_, s| Arc::strong_count(&s.turn) > 1);
        sessions
            .entry(id.to_owned())
            .or_insert_with(|| SessionChecks {
                turn: Arc::default(),
                stop: watch::channel(false).0,
            })
            .clone()
    }

    /// Sessions with a check running (entries of finished ones are forgotten first).
    pub(crate) fn held(&self) -> usize {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, s| Arc::strong_count(&s.turn) > 1);
        sessions.len()
    }

    /// Kills the checks a session is running (if any).
    pub(crate) fn stop(&self, id: &str) {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = sessions.get(id) {
            s.stop.send_replace(true);
        }
    }

    /// Kills every running check (the host is stopping).
    pub(crate) fn stop_all(&self) {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        for s in sessions.values() {
            s.stop.send_replace(true);
        }
    }
}
