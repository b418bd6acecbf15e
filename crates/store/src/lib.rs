//! Session transcripts: the append-only JSONL file that is each session's source of truth.
//!
//! One [`TranscriptWriter`] per session (owned by its single writer task) appends events in `seq`
//! order and refuses gaps; [`read_transcript`] reads them back, tolerating a torn last line left
//! by a crash. Files are created 0600 in 0700 directories.
//!
//! - `writer`: [`TranscriptWriter`] appends events in strict `seq` order with one `write` per
//!   batch, cuts a partial write back off, and truncates a torn tail on reopen.
//! - `index`: [`TranscriptIndex`], a sparse `seq` → byte-offset index, so readers start near any
//!   `seq` instead of at the file's first byte.
//! - `reader`: [`read_transcript`] / [`read_range`] read from any `seq`, tolerating a torn last
//!   line and reporting corrupt middle lines ([`SkippedLine`]).
//! - `error`: [`StoreError`], each carrying the file it concerns.

mod error;
mod index;
mod reader;
mod writer;

pub use error::StoreError;
pub use index::{INDEX_STRIDE, SharedIndex, TranscriptIndex};
pub use reader::{ReadOutcome, SkippedLine, read_range, read_transcript};
pub use writer::{ClosedTranscript, OpenedTranscript, TranscriptWriter, WrittenLines};
