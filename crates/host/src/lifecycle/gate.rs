//! The launch gate: agent starts under way, and whether the host is stopping.

use crate::error::HostError;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Whether the host is stopping, and how many agent starts are under way: a start either sees
/// the flag and is refused, or is counted and waited for, so no agent starts behind a shutdown.
/// Also the processes of every agent tree a shutdown began stopping, for a forced exit.
#[derive(Debug, Default)]
pub(crate) struct LaunchGate {
    pub(crate) state: Mutex<GateState>,
    pub(crate) trees: Arc<Mutex<Vec<Member>>>,
}

/// One process of an agent's tree: its pid and start time (so a reused pid is never signalled).
pub(crate) type Member = (u32, u64);

#[derive(Debug, Default)]
pub(crate) struct GateState {
    pub(crate) stopping: bool,
    pub(crate) starting: usize,
}

/// An agent start in progress; dropping it ends the start.
#[derive(Debug)]
pub(crate) struct StartPass<'a>(pub(crate) &'a LaunchGate);

impl Drop for StartPass<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.starting = state.starting.saturating_sub(1);
    }
}

impl LaunchGate {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        lock(&self.state)
    }

    /// Counts an agent start, or refuses it once the host is stopping.
    pub(crate) fn enter(&self) -> Result<StartPass<'_>, HostError> {
        let mut state = self.lock();
        if state.stopping {
            return Err(stopping_error());
        }
        state.starting += 1;
        Ok(StartPass(self))
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.lock().stopping
    }

    /// Refuses every later start; waits (until `deadline`) for the ones under way. Returns how
    /// many were still under way at the deadline.
    pub(crate) async fn close(&self, deadline: Instant) -> usize {
        self.lock().stopping = true;
        loop {
            let starting = self.lock().starting;
            if starting == 0 || Instant::now() >= deadline {
                return starting;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub(crate) fn stopping_error() -> HostError {
    HostError::Invalid(
        "the host is stopping: no agent starts now; try again once it is back".into(),
    )
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
