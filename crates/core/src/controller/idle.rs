//! An idle writer lets its transcript go: once a session with a live agent has been waiting for
//! input (no pending approval, nothing held back) for the host's idle deadline, its writer
//! closes the transcript, gives up the writer lock and drops its live bus and buffers. The next
//! event — the agent speaking, a person's prompt, a host record — reopens the transcript where
//! it ended and publishes a new bus before anything is written, so subscriptions (which follow
//! the writer's buses, `Subscription`) go on with the next `seq`: no gap, no duplicate.

use nucleic_agents::AgentControl;
use nucleic_protocol::SessionStatus;
use tokio::sync::broadcast;
use tokio::time::{Duration, Instant};

use super::{BUS_CAPACITY, Writer};
use crate::error::CoreError;
use crate::sequencer::{Released, Sequencer};

/// The writer's transcript: open, or let go while the session is idle.
#[derive(Debug)]
pub(super) struct Transcript {
    open: Option<Sequencer>,
    released: Option<Released>,
}

impl Transcript {
    pub(super) fn new(sequencer: Sequencer) -> Transcript {
        Transcript { open: Some(sequencer), released: None }
    }

    /// The sequencer, unless the transcript is let go.
    pub(super) fn open_mut(&mut self) -> Option<&mut Sequencer> {
        self.open.as_mut()
    }

    fn release(&mut self) -> bool {
        let Some(sequencer) = self.open.take() else { return false };
        match sequencer.release() {
            Ok(released) => {
                self.released = Some(released);
                true
            }
            Err(sequencer) => {
                self.open = Some(*sequencer);
                false
            }
        }
    }

    /// Reopens a let-go transcript; true if it was let go.
    fn reopen(&mut self) -> Result<bool, CoreError> {
        if self.open.is_some() {
            return Ok(false);
        }
        let Some(released) = &self.released else {
            return Err(CoreError::Unsupported("the writer has no transcript".into()));
        };
        self.open = Some(released.reopen()?);
        self.released = None;
        Ok(true)
    }
}

/// When an idle writer lets its transcript go.
#[derive(Debug, Default)]
pub(super) struct IdleRelease {
    /// After this long idle (never, when `None`: `SessionHandle::release_when_idle` sets it).
    pub(super) after: Option<Duration>,
    /// The writer's last event or command.
    last: Option<Instant>,
}

impl IdleRelease {
    pub(super) fn touch(&mut self) {
        self.last = Some(Instant::now());
    }
}

impl<A: AgentControl> Writer<A> {
    /// Events numbered or drafted but not written yet.
    pub(super) fn unwritten(&mut self) -> usize {
        self.transcript.open_mut().map_or(0, |s| s.unwritten()) + self.held.len()
    }

    /// Waiting for a person with nothing to write, and the agent alive.
    fn is_idle(&mut self) -> bool {
        matches!(self.status, SessionStatus::Idle | SessionStatus::AwaitingInput)
            && self.approvals.pending_count() == 0
            && self.unwritten() == 0
            && self.state.borrow().finished.is_none()
    }

    /// When the open transcript of an idle session is let go if nothing happens before.
    pub(super) fn release_deadline(&mut self) -> Option<Instant> {
        let after = self.idle.after?;
        if self.transcript.open.is_none() || !self.is_idle() {
            return None;
        }
        Some(self.idle.last.unwrap_or_else(Instant::now) + after)
    }

    /// Lets the transcript, the lock and the live bus go (subscribers keep waiting for the next
    /// bus). Does nothing unless the session is still idle.
    pub(super) fn release_transcript(&mut self) {
        if !self.is_idle() || !self.transcript.release() {
            self.idle.touch();
            return;
        }
        self.buses.send_replace(None);
        self.bus = None;
        self.settled.shrink_to_fit();
        let mut state = self.state.borrow().clone();
        state.released = true;
        state.releases += 1;
        let _ = self.state.send(state);
    }

    /// Reopens a let-go transcript, and publishes a new live bus before anything is written on
    /// it (a subscription that takes it reads the transcript from its cursor after).
    pub(super) fn reopen_transcript(&mut self) -> Result<(), CoreError> {
        if self.transcript.reopen()? {
            let (bus, _) = broadcast::channel(BUS_CAPACITY);
            self.buses.send_replace(Some(bus.downgrade()));
            self.bus = Some(bus);
        }
        Ok(())
    }
}
