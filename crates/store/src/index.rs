//! A sparse `seq` → byte-offset index of a transcript, so readers can start near any `seq`
//! instead of parsing the file from its first byte.

use std::sync::{Arc, RwLock};

/// Every how many events an offset is kept.
pub const INDEX_STRIDE: u64 = 256;

/// Offsets of events `1, 1 + STRIDE, 1 + 2·STRIDE, …`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TranscriptIndex {
    offsets: Vec<u64>,
}

/// The index shared between a session's writer and its readers.
pub type SharedIndex = Arc<RwLock<TranscriptIndex>>;

impl TranscriptIndex {
    /// Notes that event `seq` starts at byte `offset` (kept only on stride boundaries).
    pub fn record(&mut self, seq: u64, offset: u64) {
        if seq == 0 || !(seq - 1).is_multiple_of(INDEX_STRIDE) {
            return;
        }
        let slot = ((seq - 1) / INDEX_STRIDE) as usize;
        if slot == self.offsets.len() {
            self.offsets.push(offset);
        }
    }

    /// A byte offset at or before event `seq` (0 when nothing better is known).
    pub fn offset_before(&self, seq: u64) -> u64 {
        if seq == 0 || self.offsets.is_empty() {
            return 0;
        }
        let slot = ((seq - 1) / INDEX_STRIDE) as usize;
        self.offsets[slot.min(self.offsets.len() - 1)]
    }

    /// Forgets offsets of events after `last_seq` (after a torn tail was cut off).
    pub fn truncate_after(&mut self, last_seq: u64) {
        let keep = last_seq.div_ceil(INDEX_STRIDE) as usize;
        self.offsets.truncate(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_found_at_or_before_a_seq() {
        let mut idx = TranscriptIndex::default();
        for seq in 1..=1000u64 {
            idx.record(seq, seq * 10);
        }
        assert_eq!(idx.offset_before(1), 10);
        assert_eq!(idx.offset_before(256), 10);
        assert_eq!(idx.offset_before(257), 2570);
        assert_eq!(idx.offset_before(5000), 7690, "past the end: the last known offset");
        idx.truncate_after(300);
        assert_eq!(idx.offset_before(900), 2570);
    }
}
