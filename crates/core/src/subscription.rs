//! Subscriptions: every event from a chosen `seq`, with no gap and no duplicate. Catch-up comes
//! from the transcript on disk (in bounded chunks, starting near the cursor thanks to the
//! transcript's index); live events from the bus; a reader that falls behind the bus goes back
//! to disk for exactly what it missed. Events come as slices of the batches the writer
//! published (or read from disk), shared, never copied. An idle writer that lets its transcript
//! go drops its bus; a subscription then waits for the writer's next bus and reads from disk
//! what was written before it took it, so it goes on as if nothing happened.

use std::path::PathBuf;

use nucleic_store::{SharedIndex, read_range};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};

use crate::batch::{EventBatch, EventSlice, SharedEvent};
use crate::error::CoreError;

/// Most events read from disk at a time.
const CATCH_UP_CHUNK: usize = 4096;

/// The writer's current live bus (`None` while it let its transcript go); closed when the writer
/// ends.
pub(crate) type Buses = watch::Receiver<Option<broadcast::WeakSender<EventBatch>>>;

/// A cursor over one session's events.
#[derive(Debug)]
pub struct Subscription {
    next_seq: u64,
    /// Events received and not yet handed out (some may be below the cursor).
    backlog: Option<EventSlice>,
    live: Option<broadcast::Receiver<EventBatch>>,
    /// The writer's current bus, while the writer lives (`None`: a replay, or the writer ended).
    buses: Option<Buses>,
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
        buses: Option<Buses>,
    ) -> Result<Subscription, CoreError> {
        let mut sub = Subscription {
            next_seq: from_seq.max(1),
            backlog: None,
            live,
            buses,
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
        Subscription::start(transcript, index, from_seq, None, None)
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
        let found = !read.events.is_empty();
        let batch = EventBatch::new(read.events);
        self.backlog = Some(EventSlice::new(batch.clone(), 0..batch.len()));
        Ok(found)
    }

    /// The next event, or `None` once the session's writer is gone and everything was delivered.
    /// Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<SharedEvent>, CoreError> {
        Ok(self.next_up_to(1).await?.and_then(|slice| {
            let (batch, range) = slice.parts();
            SharedEvent::new(batch.clone(), range.start)
        }))
    }

    /// The next events: as many as are ready now, at least one, consecutive from the cursor and
    /// all of one batch; `None` once the session's writer is gone and everything was delivered.
    /// Cancel-safe.
    pub async fn next_batch(&mut self) -> Result<Option<EventSlice>, CoreError> {
        self.next_up_to(usize::MAX).await
    }

    async fn next_up_to(&mut self, max: usize) -> Result<Option<EventSlice>, CoreError> {
        loop {
            if let Some(ready) = self.take_ready(max)? {
                return Ok(Some(ready));
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
                if self.next_bus().await {
                    // Whatever was written before the bus was taken is on disk.
                    self.refill()?;
                    continue;
                }
                // The writer is gone, perhaps before this took its last bus (it reopened,
                // wrote and ended in between): what it wrote is on disk.
                if self.refill()? {
                    continue;
                }
                return Ok(None);
            };
            match live.recv().await {
                Ok(batch) => {
                    let first = batch.events().first().map_or(u64::MAX, |e| e.seq);
                    if first > self.next_seq {
                        // Ahead of us: everything before it is on disk (written first).
                        self.refill()?;
                    } else {
                        self.backlog = Some(EventSlice::new(batch.clone(), 0..batch.len()));
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

    /// Waits for the writer's next live bus (an idle writer that let its transcript go publishes
    /// one before it writes again) and takes a receiver of it; false once the writer is gone.
    /// Cancel-safe.
    async fn next_bus(&mut self) -> bool {
        let Some(buses) = self.buses.as_mut() else { return false };
        loop {
            let bus = buses.borrow_and_update().as_ref().and_then(broadcast::WeakSender::upgrade);
            if let Some(bus) = bus {
                self.live = Some(bus.subscribe());
                return true;
            }
            if buses.changed().await.is_err() {
                self.buses = None;
                return false;
            }
        }
    }

    /// Takes up to `max` events from the backlog that continue the cursor exactly: events below
    /// it are skipped (already delivered), a run stops before any jump, and a backlog that
    /// starts above the cursor is a hole in the file itself.
    fn take_ready(&mut self, max: usize) -> Result<Option<EventSlice>, CoreError> {
        let Some(backlog) = self.backlog.take() else { return Ok(None) };
        let (batch, range) = backlog.parts();
        let events = batch.events().get(range.clone()).unwrap_or_default();
        let skip = events.iter().take_while(|e| e.seq < self.next_seq).count();
        let Some(first) = events.get(skip) else { return Ok(None) };
        if first.seq > self.next_seq {
            return Err(CoreError::Unsupported(format!(
                "transcript {} has no event {}",
                self.transcript.display(),
                self.next_seq
            )));
        }
        let run = events
            .iter()
            .skip(skip)
            .take(max)
            .zip(self.next_seq..)
            .take_while(|(e, seq)| e.seq == *seq)
            .count();
        let start = range.start + skip;
        let ready = EventSlice::new(batch.clone(), start..start + run);
        if start + run < range.end {
            self.backlog = Some(EventSlice::new(batch.clone(), start + run..range.end));
        }
        self.next_seq += run as u64;
        Ok(Some(ready))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use nucleic_protocol::{Backend, EventKind, StderrLine};
    use proptest::prelude::*;

    use super::*;
    use crate::sequencer::{Draft, Sequencer};

    fn line(n: usize) -> Draft {
        Draft::host(EventKind::Stderr(StderrLine { text: format!("line {n} \"q\" é") }))
    }

    /// Reads `sub` to its end, one event or one slice at a time as `modes`' bits say; checks
    /// every slice is consecutive and every event's shared JSON is its serialization.
    async fn read_all(mut sub: Subscription, mut modes: u64) -> Vec<u64> {
        let mut seqs = Vec::new();
        loop {
            modes = modes.rotate_right(1);
            if modes & 1 == 1 {
                let Some(slice) = sub.next_batch().await.unwrap() else { break };
                let (batch, range) = slice.parts();
                assert!(!range.is_empty());
                for (i, event) in range.zip(slice.events()) {
                    assert_eq!(batch.json(i).unwrap(), serde_json::to_string(event).unwrap());
                    if let Some(last) = seqs.last() {
                        assert_eq!(event.seq, last + 1, "a slice continues the cursor");
                    }
                    seqs.push(event.seq);
                }
            } else {
                let Some(event) = sub.next().await.unwrap() else { break };
                assert_eq!(event.json().unwrap(), serde_json::to_string(&*event).unwrap());
                seqs.push(event.seq);
            }
        }
        seqs
    }

    /// A writer that reopens, writes and ends while a subscription waits for its next bus, before
    /// the subscription could take it (the bus is gone when it upgrades it): the subscription
    /// still gets what was written, from disk, and only then ends.
    #[tokio::test]
    async fn a_writer_gone_before_its_new_bus_was_taken_leaves_nothing_undelivered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let mut sequencer = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        let index = sequencer.index();
        sequencer.append((0..3).map(line).collect());
        // Let go: no bus. The subscription reads everything, then waits for the next bus.
        let (buses_tx, buses) = watch::channel(None);
        let sub = Subscription::start(path.clone(), index.clone(), 1, None, Some(buses)).unwrap();
        let reader = tokio::spawn(read_all(sub, 0));
        // (This test's runtime has one thread: the reader runs, and parks, while this sleeps.)
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!reader.is_finished(), "the reader waits for the writer's next bus");
        // Without yielding: the writer reopens with a new bus, writes, and ends (bus and watch
        // dropped).
        let (bus, _) = broadcast::channel::<EventBatch>(4);
        buses_tx.send_replace(Some(bus.downgrade()));
        let appended = sequencer.append((3..5).map(line).collect());
        let _ = bus.send(EventBatch::written(appended.written, sequencer.take_last_lines()));
        drop(bus);
        drop(buses_tx);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
            .await
            .expect("the subscription ends within 5 s")
            .unwrap();
        assert_eq!(got, vec![1, 2, 3, 4, 5]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// However writes are split, however far behind a reader falls (the bus holds 4
        /// batches) and whether it takes events one by one or in slices, it gets every event
        /// from its cursor once, in order, with the JSON the transcript holds.
        #[test]
        fn readers_get_every_event_once_in_order_with_its_json(
            writes in proptest::collection::vec(1usize..40, 1..30),
            readers in proptest::collection::vec((1u64..300, any::<u64>(), any::<bool>()), 1..4),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("transcript.jsonl");
                let mut sequencer = Sequencer::open("s", Backend::Simulated, &path).unwrap();
                let (bus, _) = broadcast::channel::<EventBatch>(4);
                let index = sequencer.index();
                let early: Vec<_> = readers
                    .iter()
                    .filter(|r| r.2)
                    .map(|&(from, modes, _)| {
                        let live = Some(bus.subscribe());
                        (from, modes, Subscription::start(path.clone(), index.clone(), from, live, None).unwrap())
                    })
                    .collect();
                let mut total = 0;
                for size in writes {
                    let appended = sequencer.append((total..total + size).map(line).collect());
                    total += size;
                    let _ = bus.send(EventBatch::written(appended.written, sequencer.take_last_lines()));
                }
                drop(bus);
                let late = readers.iter().filter(|r| !r.2).map(|&(from, modes, _)| {
                    (from, modes, Subscription::replay(path.clone(), from).unwrap())
                });
                let all: Vec<_> = early.into_iter().chain(late.collect::<Vec<_>>()).collect();
                for (from, modes, sub) in all {
                    let got = read_all(sub, modes).await;
                    let want: Vec<u64> = (from..=total as u64).collect();
                    assert_eq!(got, want);
                }
            });
        }
    }
}
