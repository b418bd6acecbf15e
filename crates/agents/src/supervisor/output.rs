//! The agents' output thread: one thread running a runtime of its own, on which every agent's
//! stdout and stderr readers are tasks.
//!
//! A reader per agent on a thread of its own cost an idle agent two threads; as tasks on the
//! host's runtime, a streaming agent's reader and the controller it wakes took turns on one
//! worker (the woken task waits in the waker's slot), and the stream path lost a fifth of its
//! throughput (`docs/benchmarks.md`). Here reading and decoding run beside the host's workers, as
//! the threads did, and an agent waiting for its next prompt costs nothing but its buffers.

use std::sync::OnceLock;

use tokio::net::unix::pipe::Receiver;
use tokio::runtime::Handle;

static OUTPUT: OnceLock<Option<Handle>> = OnceLock::new();

/// The output thread's runtime; the caller's when that thread cannot be started (the readers
/// then run on the host's workers: slower, never wrong). Must be called inside a runtime.
pub(super) fn runtime() -> Handle {
    OUTPUT.get_or_init(start).clone().unwrap_or_else(Handle::current)
}

fn start() -> Option<Handle> {
    let started =
        tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(|rt| {
            let handle = rt.handle().clone();
            std::thread::Builder::new()
                .name("nucleic-agent-output".into())
                .spawn(move || rt.block_on(std::future::pending::<()>()))
                .map(|_| handle)
        });
    match started {
        Ok(handle) => Some(handle),
        Err(e) => {
            eprintln!(
                "nucleic: no agent output thread ({e}); agents' output is read on the host's workers"
            );
            None
        }
    }
}

/// Tasks alive on the output thread — two readers per running agent, and briefly what a reader
/// started (an orphaned agent's SIGKILL timer): a leak check, like the host's other counts of
/// what it holds per session.
pub fn live_readers() -> usize {
    OUTPUT.get().and_then(Option::as_ref).map_or(0, |h| h.metrics().num_alive_tasks())
}

/// The read end of a pipe, for a reader task: non-blocking, and registered with the output
/// thread's runtime (its readiness is seen there, with no hop through the host's workers).
/// Must be called inside a runtime.
pub fn pipe_reader(pipe: std::io::PipeReader) -> std::io::Result<Receiver> {
    let _output = runtime().enter();
    Receiver::from_owned_fd(std::os::fd::OwnedFd::from(pipe))
}
