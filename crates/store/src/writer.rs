//! The transcript writer: appends events in strict `seq` order, one JSON object per line.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use nucleic_protocol::Event;

use crate::error::StoreError;
use crate::index::{INDEX_STRIDE, SharedIndex};
use crate::reader::{ReadOutcome, read_transcript};

/// Appends to one session's transcript. Not shared: the session's single writer owns it.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    file: File,
    last_seq: u64,
    /// Bytes in the file (where the next event starts).
    len: u64,
    index: SharedIndex,
    /// The lines of the last append, as written.
    buf: Vec<u8>,
    /// Where each line of `buf` ends (after its newline).
    ends: Vec<usize>,
}

/// The lines of one append: `bytes` holds them back to back, `ends[i]` is where line `i` ends
/// (just after its newline).
#[derive(Debug, Clone, Default)]
pub struct WrittenLines {
    pub bytes: Vec<u8>,
    pub ends: Vec<usize>,
}

/// A writer plus what opening an existing transcript found.
#[derive(Debug)]
pub struct OpenedTranscript {
    pub writer: TranscriptWriter,
    /// Bytes of a torn last line that were cut off (0 when the file was clean).
    pub truncated_bytes: u64,
    /// Complete lines that did not decode (kept in the file, reported here).
    pub skipped_lines: usize,
}

impl TranscriptWriter {
    /// Opens (creating if needed) the transcript at `path`. An existing file is scanned: its last
    /// `seq` becomes the writer's starting point and a torn last line is truncated away.
    pub fn open(path: &Path) -> Result<OpenedTranscript, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| StoreError::io(dir, e))?;
        }
        let ReadOutcome { last_seq, complete_len, torn_tail, skipped, mut index, .. } =
            read_transcript(path, u64::MAX)?;
        index.truncate_after(last_seq);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| StoreError::io(path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
        let mut truncated_bytes = 0;
        if torn_tail && len > complete_len {
            file.set_len(complete_len).map_err(|e| StoreError::io(path, e))?;
            truncated_bytes = len - complete_len;
        }
        Ok(OpenedTranscript {
            writer: TranscriptWriter {
                path: path.to_path_buf(),
                file,
                last_seq,
                len: len - truncated_bytes,
                index: Arc::new(RwLock::new(index)),
                buf: Vec::new(),
                ends: Vec::new(),
            },
            truncated_bytes,
            skipped_lines: skipped.len(),
        })
    }

    /// The `seq` of the last event in the file (0 for a new transcript).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The seq → offset index, kept current by every append; share it with readers.
    pub fn index(&self) -> SharedIndex {
        self.index.clone()
    }

    /// Where the transcript lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `events` with one write. Each must carry `seq == previous + 1`; on any error
    /// nothing is written.
    pub fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        let appended = self.encode_and_write(events);
        if appended.is_err() {
            self.ends.clear();
        }
        appended
    }

    fn encode_and_write(&mut self, events: &[Event]) -> Result<(), StoreError> {
        self.buf.clear();
        self.ends.clear();
        let mut last = self.last_seq;
        let mut starts = Vec::new();
        for event in events {
            if event.seq != last + 1 {
                return Err(StoreError::SeqGap { path: self.path.clone(), last, got: event.seq });
            }
            if (event.seq - 1).is_multiple_of(INDEX_STRIDE) {
                starts.push((event.seq, self.len + self.buf.len() as u64));
            }
            serde_json::to_writer(&mut self.buf, event).map_err(|source| StoreError::Encode {
                path: self.path.clone(),
                seq: event.seq,
                source,
            })?;
            self.buf.push(b'\n');
            self.ends.push(self.buf.len());
            last = event.seq;
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            // A partial write would leave a torn line; cut it so the file stays a clean prefix.
            let _ = self.file.set_len(self.len);
            return Err(StoreError::io(&self.path, e));
        }
        self.len += self.buf.len() as u64;
        self.last_seq = last;
        if let Ok(mut index) = self.index.write() {
            for (seq, offset) in starts {
                index.record(seq, offset);
            }
        }
        Ok(())
    }

    /// Takes the lines the last successful append wrote, exactly as written (each event's JSON
    /// and a newline), so that a caller can share them instead of encoding the events again
    /// (the writer then starts a new buffer of the same size). Empty after a failed append or
    /// when taken already.
    pub fn take_last_lines(&mut self) -> WrittenLines {
        if self.ends.is_empty() {
            return WrittenLines::default();
        }
        let size = self.buf.len();
        let bytes = std::mem::replace(&mut self.buf, Vec::with_capacity(size));
        WrittenLines { bytes, ends: std::mem::take(&mut self.ends) }
    }

    /// Forces written events to stable storage (called at turn ends and on close, not per event).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.file.sync_data().map_err(|e| StoreError::io(&self.path, e))
    }

    /// Closes the file (sync first: [`TranscriptWriter::sync`]), keeping only what
    /// [`ClosedTranscript::reopen`] needs to go on without scanning the file again (an idle
    /// session's writer letting go of its transcript).
    pub fn close(self) -> ClosedTranscript {
        ClosedTranscript {
            path: self.path,
            last_seq: self.last_seq,
            len: self.len,
            index: self.index,
        }
    }
}

/// A transcript a writer closed: where it ended, and its index (still shared with readers).
#[derive(Debug)]
pub struct ClosedTranscript {
    path: PathBuf,
    last_seq: u64,
    len: u64,
    index: SharedIndex,
}

impl ClosedTranscript {
    /// The `seq` of the last event when it was closed.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Where the transcript lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the transcript again for appending. A file still as long as it was closed goes on
    /// from there; one that changed meanwhile (another writer appended, or cut a torn tail) is
    /// scanned like [`TranscriptWriter::open`], and its index replaces the shared one's content.
    pub fn reopen(&self) -> Result<TranscriptWriter, StoreError> {
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| StoreError::io(&self.path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(&self.path, e))?.len();
        if len == self.len {
            return Ok(TranscriptWriter {
                path: self.path.clone(),
                file,
                last_seq: self.last_seq,
                len,
                index: self.index.clone(),
                buf: Vec::new(),
                ends: Vec::new(),
            });
        }
        drop(file);
        let mut writer = TranscriptWriter::open(&self.path)?.writer;
        let scanned = writer.index.read().map(|i| i.clone()).unwrap_or_default();
        if let Ok(mut shared) = self.index.write() {
            *shared = scanned;
        }
        writer.index = self.index.clone();
        Ok(writer)
    }
}
