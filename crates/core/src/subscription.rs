//! Subscriptions: every event from a chosen `seq`, with no gap and no duplicate. Catch-up comes
//! from the transcript on disk; live events from the bus; a reader that falls behind the bus goes
//! back to disk for what it missed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use nucleic_protocol::Event;
use nucleic_store::read_transcript;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::error::CoreError;

/// A cursor over one session's events.
#[derive(Debug)]
pub struct Subscription {
    next_seq: u64,
    backlog: VecDeque<Event>,
    live: Option<broadcast::Receiver<Arc<Event>>>,
    transcript: PathBuf,
}

impl Subscription {
    /// Starts at `from_seq` (1 = everything). The live receiver must be taken before the disk
    /// read so that nothing written in between is missed.
    pub(crate) fn start(
        transcript: PathBuf,
        from_seq: u64,
        live: Option<broadcast::Receiver<Arc<Event>>>,
    ) -> Result<Subscription, CoreError> {
        let mut sub = Subscription {
            next_seq: from_seq.max(1),
            backlog: VecDeque::new(),
            live,
            transcript,
        };
        sub.refill()?;
        Ok(sub)
    }

    /// The `seq` the next event will have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn refill(&mut self) -> Result<(), CoreError> {
        let read = read_transcript(&self.transcript, self.next_seq)?;
        self.backlog = read.events.into();
        Ok(())
    }

    /// The next event, or `None` once the session's writer is gone and everything was delivered.
    pub async fn next(&mut self) -> Result<Option<Event>, CoreError> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.seq == self.next_seq {
                    self.next_seq += 1;
                    return Ok(Some(event));
                }
                if event.seq < self.next_seq {
                    continue;
                }
                // A hole in the backlog cannot be filled from disk: the file itself has a gap.
                self.backlog.push_front(event);
                return Err(CoreError::Unsupported(format!(
                    "transcript {} has no event {}",
                    self.transcript.display(),
                    self.next_seq
                )));
            }
            let Some(live) = self.live.as_mut() else {
                return Ok(None);
            };
            match live.recv().await {
                Ok(event) if event.seq < self.next_seq => {}
                Ok(event) if event.seq == self.next_seq => {
                    self.next_seq += 1;
                    return Ok(Some(Event::clone(&event)));
                }
                // Ahead of us: everything before it is on disk already (written before sent).
                Ok(_) | Err(RecvError::Lagged(_)) => self.refill()?,
                Err(RecvError::Closed) => {
                    self.live = None;
                    self.refill()?;
                }
            }
        }
    }
}
