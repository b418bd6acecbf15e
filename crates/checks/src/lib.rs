//! Project checks: named commands (tests, lint, build) the host runs itself in a session's
//! worktree — argv, no shell, a scrubbed environment, a timeout, the whole process tree killed at
//! the end, the output saved (capped) and streamed in throttled pieces — and the pure parsers
//! that read test counts from the common runners' output (`parse`) and a model's claims from
//! its prose (`claims`). See `docs/dev-loop.md`.
//!
//! - [`run`]: one check ([`run_check`]): argv in its own process group, scrubbed environment,
//!   optional bubblewrap, timeout, 0600 log capped at 16 MiB ([`LOG_CAP_BYTES`]) and counted
//!   beyond, output batched every 250 ms, the tree killed on timeout or stop and leftovers — its
//!   group, or processes carrying its run token — killed after.
//! - [`parse`]: test counts from cargo, nextest, pytest, go, vitest, jest, node's runner and the
//!   plain `N passed, N failed` line; pure, line by line.
//! - [`claims`]: what a model's prose claims (tests pass, fixed, N files changed); pure.

pub mod claims;
pub mod parse;
pub mod run;

pub use claims::{Claim, ClaimKind, claims_in};
pub use parse::{Counts, Tally, counts_in};
pub use run::{CheckCommand, CheckError, CheckRun, LOG_CAP_BYTES, run_check};
