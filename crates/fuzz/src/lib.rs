//! Deterministic mutation fuzzing of the parsers that read untrusted bytes (agent CLI output,
//! client frames, transcripts, imports): seed corpora from the test fixtures, mutated by a
//! seeded PRNG, each input checked for panics and for the parser's contract. See
//! `docs/robustness.md`.
//!
//! - [`mutate`]: the mutations.
//! - [`targets`]: the parsers, their seeds and invariants.
//! - [`campaign`]: running N inputs of a target and reporting.

pub mod campaign;
pub mod mutate;
pub mod targets;

pub use campaign::{Finding, Report, run_campaign};
pub use targets::{Harness, Input, TARGETS, Target};
