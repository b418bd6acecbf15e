//! Stopping on Ctrl-C or SIGTERM, with the handlers installed before anyone is told the process
//! is up (a signal that arrived earlier would kill it without cleaning up).

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Ctrl-C (SIGINT) and SIGTERM, caught from the moment this exists.
#[derive(Debug)]
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Installs the handlers now.
    pub fn install() -> std::io::Result<StopSignals> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves on the first of them.
    pub async fn wait(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
