//! Stopping on Ctrl-C or SIGTERM, with the handlers installed before anyone is told the process
//! is up (a signal that arrived earlier would kill it without cleaning up). The first signal
//! starts a graceful stop; from then on a second signal, or the stop outlasting its bound, ends
//! the process at once (see [`force_exit_after`]).

use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Ctrl-C (SIGINT) and SIGTERM, caught from the moment this exists.
#[derive(Debug)]
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

/// Which stop signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        }
    }

    /// The exit code of a process ended by this signal (128 + its number).
    pub fn exit_code(self) -> i32 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

impl StopSignals {
    /// Installs the handlers now.
    pub fn install() -> std::io::Result<StopSignals> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves on the next of them.
    pub async fn next(&mut self) -> StopSignal {
        tokio::select! {
            _ = self.interrupt.recv() => StopSignal::Interrupt,
            _ = self.terminate.recv() => StopSignal::Terminate,
        }
    }
}

/// Once a graceful stop began: a second signal, or `bound` passing, runs `force` (which must not
/// block for long: kill what must not outlive the process, remove what names it) and exits at
/// once with a failure code. The bound is kept by a plain thread, so a wedged runtime cannot hold
/// it up.
pub fn force_exit_after(
    mut signals: StopSignals,
    bound: Duration,
    force: impl Fn(&str) + Send + Sync + 'static,
) {
    let force = std::sync::Arc::new(force);
    {
        let force = std::sync::Arc::clone(&force);
        tokio::spawn(async move {
            let second = signals.next().await;
            force(&format!("a second {}", second.name()));
            std::process::exit(second.exit_code());
        });
    }
    std::thread::spawn(move || {
        std::thread::sleep(bound);
        force(&format!("stopping took longer than {} s", bound.as_secs()));
        std::process::exit(1);
    });
}
