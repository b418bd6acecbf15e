//! Project checks: named commands (tests, lint, build) the host runs itself in a session's
//! worktree — argv, no shell, a scrubbed environment, a timeout, the whole process tree killed at
//! the end, the output saved (capped) and streamed in throttled pieces — and the pure parsers
//! that read test counts from the common runners' output (`parse`) and a model's claims from
//! its prose (`claims`).

pub mod claims;
pub mod parse;
pub mod run;

pub use claims::{Claim, ClaimKind, claims_in};
pub use parse::{Counts, Tally, counts_in};
pub use run::{CheckCommand, CheckError, CheckRun, LOG_CAP_BYTES, run_check};
