//! One lock per session for its host-kept review files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One lock per session for its host-kept review files (`turns.json`, `review.json`).
#[derive(Debug, Default)]
pub(crate) struct SessionLocks {
    pub(crate) sessions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl SessionLocks {
    pub(crate) fn of(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget sessions nobody holds a lock of (the map would otherwise grow per session).
        sessions.retain(|_, lock| Arc::strong_count(lock) > 1);
        sessions.entry(id.to_owned()).or_default().clone()
    }

    /// Sessions whose lock someone holds (the others are forgotten first).
    pub(crate) fn held(&self) -> usize {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, lock| Arc::strong_count(lock) > 1);
        sessions.len()
    }
}
