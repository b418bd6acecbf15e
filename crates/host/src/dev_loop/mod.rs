//! The dev loop: checks, the turn report, the diff by turn, review comments.

pub(crate) mod check_runs;
pub(crate) mod checks;
pub(crate) mod report;
pub(crate) mod review;
pub(crate) mod session_locks;
pub(crate) mod turn_watch;
pub(crate) mod turns;
