//! Component tests of nucleic-transfer: export layout, import round trips, Claude transcripts.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod claude;
mod export;
mod import;
mod support;
