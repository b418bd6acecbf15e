//! Session transcripts: the append-only JSONL file that is each session's source of truth.
//!
//! One [`TranscriptWriter`] per session (owned by its single writer task) appends events in `seq`
//! order and refuses gaps; [`read_transcript`] reads them back, tolerating a torn last line left
//! by a crash. Files are created 0600 in 0700 directories.

mod error;
mod index;
mod reader;
mod writer;

pub use error::StoreError;
pub use index::{INDEX_STRIDE, SharedIndex, TranscriptIndex};
pub use reader::{ReadOutcome, SkippedLine, read_range, read_transcript};
pub use writer::{ClosedTranscript, OpenedTranscript, TranscriptWriter, WrittenLines};
