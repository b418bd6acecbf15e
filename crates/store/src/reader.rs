//! Reading a transcript back: every complete line from a given `seq`, a torn tail tolerated.

use std::io::{BufRead, BufReader};
use std::path::Path;

use nucleic_protocol::Event;

use crate::error::StoreError;

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
    /// Byte length of the complete lines (where a torn tail starts).
    pub complete_len: u64,
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
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadOutcome::default()),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut out = ReadOutcome::default();
    let mut buf = Vec::with_capacity(1024);
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| StoreError::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            out.torn_tail = true;
            break;
        }
        out.complete_len += n as u64;
        let body = &buf[..buf.len() - 1];
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(body) {
            Ok(event) => {
                out.last_seq = out.last_seq.max(event.seq);
                if event.seq >= from_seq {
                    out.events.push(event);
                }
            }
            Err(e) => out.skipped.push(SkippedLine {
                line: line_no,
                error: e.to_string(),
            }),
        }
    }
    Ok(out)
}
