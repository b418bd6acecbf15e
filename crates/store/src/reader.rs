//! Reading a transcript back: every complete line from a given `seq`, a torn tail tolerated.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use nucleic_protocol::Event;

use crate::error::StoreError;
use crate::index::TranscriptIndex;

/// What a read found.
#[derive(Debug, Default)]
pub struct ReadOutcome {
    /// Events with `seq >= from_seq`, in file order.
    pub events: Vec<Event>,
    /// The file ended in a partial line (a write cut short by a crash); it was ignored.
    pub torn_tail: bool,
    /// Complete lines that did not decode; reported, not fatal.
    pub skipped: Vec<SkippedLine>,
    /// The highest `seq` in the file (0 when empty).
    pub last_seq: u64,
    /// Byte offset just past the last complete line read (where a torn tail starts).
    pub complete_len: u64,
    /// Offsets seen while reading (complete only when the read started at byte 0).
    pub index: TranscriptIndex,
}

/// A complete line that did not decode as an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    pub error: String,
}

/// Reads the events of `path` with `seq >= from_seq`. A missing file reads as empty.
pub fn read_transcript(path: &Path, from_seq: u64) -> Result<ReadOutcome, StoreError> {
    read_range(path, 0, from_seq, usize::MAX)
}

/// Reads at most `max_events` events with `seq >= from_seq`, starting at byte `offset` (which
/// must be the start of a line, e.g. from a [`TranscriptIndex`]).
pub fn read_range(
    path: &Path,
    offset: u64,
    from_seq: u64,
    max_events: usize,
) -> Result<ReadOutcome, StoreError> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadOutcome::default()),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    if offset > 0 {
        file.seek(SeekFrom::Start(offset)).map_err(|e| StoreError::io(path, e))?;
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut out = ReadOutcome { complete_len: offset, ..ReadOutcome::default() };
    let mut buf = Vec::with_capacity(1024);
    let mut line_no = 0usize;
    while out.events.len() < max_events {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| StoreError::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            out.torn_tail = true;
            break;
        }
        let line_start = out.complete_len;
        out.complete_len += n as u64;
        let body = &buf[..buf.len() - 1];
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(body) {
            Ok(event) => {
                out.index.record(event.seq, line_start);
                out.last_seq = out.last_seq.max(event.seq);
                if event.seq >= from_seq {
                    out.events.push(event);
                }
            }
            Err(e) => out.skipped.push(SkippedLine { line: line_no, error: e.to_string() }),
        }
    }
    Ok(out)
}
