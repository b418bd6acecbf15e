//! Subscriptions: every event from a chosen `seq`, with no gap and no duplicate. Catch-up comes
//! from the transcript on disk (in bounded chunks, starting near the cursor thanks to the
//! transcript's index); live events from the bus; a reader that falls behind the bus goes back
//! to disk for exactly what it missed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use nucleic_protocol::Event;
use nucleic_store::{SharedIndex, read_range};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::error::CoreError;
use crate::handle::EventBatch;

/// Most events read from disk at a time.
const CATCH_UP_CHUNK: usize = 4096;

/// A cursor over one session's events.
#[derive(Debug)]
pub struct Subscription {
    next_seq: u64,
    backlog: VecDeque<Arc<Event>>,
    live: Option<broadcast::Receiver<EventBatch>>,
    transcript: PathBuf,
    index: SharedIndex,
    /// Where the last disk read stopped, and the seq that follows it there: the next read
    /// continues from that byte instead of rescanning.
    resume_at: Option<(u64, u64)>,
    /// The last disk read stopped at its chunk limit: there may be more on disk.
    more_on_disk: bool,
}

impl Subscription {
    /// Starts at `from_seq` (1 = everything). The live receiver must be taken before the first
    /// disk read so that nothing written in between is missed.
    pub(crate) fn start(
        transcript: PathBuf,
        index: SharedIndex,
        from_seq: u64,
        live: Option<broadcast::Receiver<EventBatch>>,
    ) -> Result<Subscription, CoreError> {
        let mut sub = Subscription {
            next_seq: from_seq.max(1),
            backlog: VecDeque::new(),
            live,
            transcript,
            index,
            resume_at: None,
            more_on_disk: false,
        };
        sub.refill()?;
        Ok(sub)
    }

    /// Replays a transcript with no live writer (a finished or imported session).
    pub fn replay(transcript: PathBuf, from_seq: u64) -> Result<Subscription, CoreError> {
        let index = SharedIndex::default();
        Subscription::start(transcript, index, from_seq, None)
    }

    /// The `seq` the next event will have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Reads the next chunk from disk, starting at the cursor; true if it found anything.
    fn refill(&mut self) -> Result<bool, CoreError> {
        let indexed = self.index.read().map(|i| i.offset_before(self.next_seq)).unwrap_or(0);
        let offset = match self.resume_at {
            Some((offset, seq)) if seq == self.next_seq && offset >= indexed => offset,
            _ => indexed,
        };
        let read = read_range(&self.transcript, offset, self.next_seq, CATCH_UP_CHUNK)?;
        self.more_on_disk = read.events.len() == CATCH_UP_CHUNK;
        self.resume_at = read.events.last().map(|e| (read.complete_len, e.seq + 1));
        self.backlog = read.events.into_iter().map(Arc::new).collect();
        Ok(!self.backlog.is_empty())
    }

    /// The next event, or `None` once the session's writer is gone and everything was delivered.
    pub async fn next(&mut self) -> Result<Option<Arc<Event>>, CoreError> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.seq < self.next_seq {
                    continue;
                }
                if event.seq > self.next_seq {
                    // A hole the file itself has: nothing can fill it.
                    return Err(CoreError::Unsupported(format!(
                        "transcript {} has no event {}",
                        self.transcript.display(),
                        self.next_seq
                    )));
                }
                self.next_seq += 1;
                return Ok(Some(event));
            }
            // A full chunk means the catch-up is not over: read on before waiting for live
            // events (an idle session sends none).
            if self.more_on_disk && self.refill()? {
                continue;
            }
            let Some(live) = self.live.as_mut() else {
                if self.refill()? {
                    continue;
                }
                return Ok(None);
            };
            match live.recv().await {
                Ok(batch) => {
                    let first = batch.first().map_or(u64::MAX, |e| e.seq);
                    if first > self.next_seq {
                        // Ahead of us: everything before it is on disk (written first).
                        self.refill()?;
                    } else {
                        self.backlog
                            .extend(batch.iter().filter(|e| e.seq >= self.next_seq).cloned());
                    }
                }
                // We lagged: what we missed is on disk.
                Err(RecvError::Lagged(_)) => {
                    self.refill()?;
                }
                Err(RecvError::Closed) => {
                    self.live = None;
                }
            }
        }
    }
}
