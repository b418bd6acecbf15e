//! The sequencer: the one way an event gets into a transcript. It numbers events (`seq`), stamps
//! them and appends them; events a failed write held back are kept and written first next time.
//! Every writer uses it — the live controller, host-made events, recovery, import — and at most
//! one exists per transcript: see [`WriterLock`](crate::writer_lock::WriterLock).

use std::path::Path;

use nucleic_protocol::{Backend, Event, EventKind, Timestamp};
use nucleic_store::{ClosedTranscript, SharedIndex, StoreError, TranscriptWriter, WrittenLines};

use crate::error::CoreError;
use crate::writer_lock::WriterLock;

/// An event before the sequencer numbers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub native_type: Option<String>,
    pub kind: EventKind,
    /// When it happened; now, when `None` (an import keeps the original times).
    pub at: Option<Timestamp>,
    /// Where in the agent's output it came from (see [`Event::origin`]).
    pub origin: Option<String>,
}

impl Draft {
    /// An event the host makes now.
    pub fn host(kind: EventKind) -> Draft {
        Draft { native_type: None, kind, at: None, origin: None }
    }
}

/// What one append did.
#[derive(Debug, Default)]
pub struct Appended {
    /// The events written by this append, in `seq` order (held-back ones first).
    pub written: Vec<Event>,
    /// Why nothing was written: the events are held back and retried by the next append.
    pub error: Option<StoreError>,
}

/// The single writer of one transcript.
#[derive(Debug)]
pub struct Sequencer {
    session_id: String,
    backend: Backend,
    transcript: TranscriptWriter,
    /// Numbered events a failed write held back.
    unwritten: Vec<Event>,
    truncated_bytes: u64,
    // Dropped last: the transcript is closed before another writer may open it.
    _lock: WriterLock,
}

impl Sequencer {
    /// Becomes the writer of the transcript at `path` (created if needed), or refuses when
    /// another writer — in this process or another — has it. A torn last line is cut off.
    pub fn open(session_id: &str, backend: Backend, path: &Path) -> Result<Sequencer, CoreError> {
        let lock = WriterLock::acquire(path)?;
        let opened = TranscriptWriter::open(path)?;
        Ok(Sequencer {
            session_id: session_id.to_owned(),
            backend,
            transcript: opened.writer,
            unwritten: Vec::new(),
            truncated_bytes: opened.truncated_bytes,
            _lock: lock,
        })
    }

    /// The `seq` of the last event written.
    pub fn last_seq(&self) -> u64 {
        self.transcript.last_seq()
    }

    /// Bytes of a torn last line cut off when the transcript was opened.
    pub fn truncated_bytes(&self) -> u64 {
        self.truncated_bytes
    }

    /// Events held back by a failed write.
    pub fn unwritten(&self) -> usize {
        self.unwritten.len()
    }

    /// The transcript's seq → offset index, for readers.
    pub fn index(&self) -> SharedIndex {
        self.transcript.index()
    }

    /// Where the transcript lives.
    pub fn path(&self) -> &Path {
        self.transcript.path()
    }

    /// Numbers `drafts` after every event written or held back, then writes them (held-back
    /// events first) with one append. On failure, they are all held back for the next append.
    pub fn append(&mut self, drafts: Vec<Draft>) -> Appended {
        if drafts.is_empty() && self.unwritten.is_empty() {
            return Appended::default();
        }
        let mut seq = self.transcript.last_seq() + self.unwritten.len() as u64;
        let mut events = std::mem::take(&mut self.unwritten);
        events.extend(drafts.into_iter().map(|d| {
            seq += 1;
            Event {
                seq,
                at: d.at.unwrap_or_else(now),
                session_id: self.session_id.clone(),
                backend: self.backend,
                native_type: d.native_type,
                kind: d.kind,
                origin: d.origin,
            }
        }));
        match self.transcript.append(&events) {
            Ok(()) => Appended { written: events, error: None },
            Err(e) => {
                self.unwritten = events;
                Appended { written: Vec::new(), error: Some(e) }
            }
        }
    }

    /// Appends and syncs `drafts`, or fails with nothing held back: for writers that write once
    /// and close (host events of a dormant session, recovery, import).
    pub fn append_now(&mut self, drafts: Vec<Draft>) -> Result<Vec<Event>, CoreError> {
        let appended = self.append(drafts);
        if let Some(e) = appended.error {
            self.unwritten.clear();
            return Err(e.into());
        }
        self.sync()?;
        Ok(appended.written)
    }

    /// Takes the transcript lines the last successful append wrote (one per event of its
    /// `written`; empty when taken already).
    pub fn take_last_lines(&mut self) -> WrittenLines {
        self.transcript.take_last_lines()
    }

    /// Forces written events to stable storage.
    pub fn sync(&mut self) -> Result<(), CoreError> {
        Ok(self.transcript.sync()?)
    }

    /// Syncs, closes the transcript and gives up being its writer, keeping what
    /// [`Released::reopen`] needs to go on. Refused (the sequencer handed back) while a failed
    /// write holds events back, or when the sync fails.
    pub fn release(mut self) -> Result<Released, Box<Sequencer>> {
        if !self.unwritten.is_empty() || self.sync().is_err() {
            return Err(Box::new(self));
        }
        let Sequencer { session_id, backend, transcript, _lock, .. } = self;
        // The file is closed before the lock goes.
        let closed = transcript.close();
        drop(_lock);
        Ok(Released { session_id, backend, closed })
    }
}

/// A sequencer that let its transcript go (an idle session's writer): no open file, no lock,
/// no buffers; [`Released::reopen`] makes it the writer again.
#[derive(Debug)]
pub struct Released {
    session_id: String,
    backend: Backend,
    closed: ClosedTranscript,
}

impl Released {
    /// The `seq` of the last event written before the release.
    pub fn last_seq(&self) -> u64 {
        self.closed.last_seq()
    }

    /// Becomes the transcript's writer again (refused, like [`Sequencer::open`], while another
    /// writer has it), going on from where the release left it.
    pub fn reopen(&self) -> Result<Sequencer, CoreError> {
        let lock = WriterLock::acquire(self.closed.path())?;
        let transcript = self.closed.reopen()?;
        Ok(Sequencer {
            session_id: self.session_id.clone(),
            backend: self.backend,
            transcript,
            unwritten: Vec::new(),
            truncated_bytes: 0,
            _lock: lock,
        })
    }
}

fn now() -> Timestamp {
    Timestamp::from_datetime(time::OffsetDateTime::now_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_protocol::{SessionUpdated, TextBlock};
    use proptest::prelude::*;

    fn text(t: &str) -> Draft {
        Draft::host(EventKind::UserText(TextBlock {
            is_partial: false,
            message_id: "m".into(),
            text: t.into(),
        }))
    }

    #[test]
    fn numbers_from_what_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s").join("transcript.jsonl");
        let mut first = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        let written = first.append_now(vec![text("a"), text("b")]).unwrap();
        assert_eq!(written.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        drop(first);
        let mut second = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        assert_eq!(second.last_seq(), 2);
        let update = EventKind::SessionUpdated(SessionUpdated {
            title: Some("t".into()),
            archived: None,
            mode: None,
            note: None,
            by: "test".into(),
        });
        let written = second.append_now(vec![Draft::host(update)]).unwrap();
        assert_eq!(written[0].seq, 3);
        assert_eq!(written[0].session_id, "s");
    }

    #[test]
    fn keeps_the_time_a_draft_carries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let mut s = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        let at = Timestamp::from_unix_millis(1_000);
        let written = s.append_now(vec![Draft { at: Some(at), ..text("old") }]).unwrap();
        assert_eq!(written[0].at, at);
    }

    #[test]
    fn a_released_sequencer_frees_the_transcript_and_goes_on_where_it_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let mut s = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        s.append_now(vec![text("a"), text("b")]).unwrap();
        let released = s.release().unwrap();
        assert_eq!(released.last_seq(), 2);
        // Let go: another writer may take the transcript meanwhile (and appends two events).
        let mut other = Sequencer::open("s", Backend::Simulated, &path).unwrap();
        other.append_now(vec![text("c"), text("d")]).unwrap();
        assert!(released.reopen().is_err(), "refused while the other writer has it");
        drop(other);
        // The file changed behind it: reopening scans it and numbers after what it holds.
        let mut s = released.reopen().unwrap();
        assert_eq!(s.last_seq(), 4);
        assert_eq!(s.append_now(vec![text("e")]).unwrap()[0].seq, 5);
        // Unchanged: it goes on without a scan, and the shared index is the same one.
        let index = s.index();
        let released = s.release().unwrap();
        let mut s = released.reopen().unwrap();
        assert!(std::sync::Arc::ptr_eq(&index, &s.index()));
        assert_eq!(s.append_now(vec![text("f")]).unwrap()[0].seq, 6);
        let seqs: Vec<u64> = nucleic_store::read_transcript(&path, 1)
            .unwrap()
            .events
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// However appends are split (and reopened in between), the file holds 1..=n in order.
        #[test]
        fn seq_is_gapless_across_appends_and_reopens(
            batches in proptest::collection::vec((0usize..6, any::<bool>()), 1..12)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("transcript.jsonl");
            let mut s = Sequencer::open("s", Backend::Simulated, &path).unwrap();
            let mut total = 0u64;
            for (size, reopen) in batches {
                if reopen {
                    drop(s);
                    s = Sequencer::open("s", Backend::Simulated, &path).unwrap();
                }
                let written = s.append((0..size).map(|i| text(&i.to_string())).collect()).written;
                for e in &written {
                    total += 1;
                    prop_assert_eq!(e.seq, total);
                }
            }
            let read = nucleic_store::read_transcript(&path, 1).unwrap();
            let seqs: Vec<u64> = read.events.iter().map(|e| e.seq).collect();
            prop_assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
        }
    }
}
