//! Lifecycle: the private data dir, crash recovery, shutdown, export / import / gc.

pub(crate) mod gate;
pub(crate) mod portable;
pub(crate) mod private;
pub(crate) mod recovery;
pub(crate) mod recovery_report;
pub(crate) mod shutdown;
