//! Worktrees: warm pools and disk use (measure, reclaim, restore).

pub(crate) mod disk;
pub(crate) mod pool;
pub(crate) mod pool_take;
pub(crate) mod pool_watch;
pub(crate) mod tend;
