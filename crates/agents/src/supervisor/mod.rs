//! The one supervisor of every agent process: it starts the process ([`launch`]), reads its
//! stdout and stderr line by line under a length cap, decodes and batches what it reads, acts on
//! control traffic, watches for stalls, waits for the exit, drains what is left of the output,
//! and reports how the run ended — once, for every backend.
//!
//! A backend supplies only a [`LineDecoder`] (one native line in, events out) and a [`Protocol`]
//! (its bookkeeping per line, its answers to control requests, its stall test, its exit
//! classification). Everything else lives here.
//!
//! Waits: every write to the agent's input has a deadline ([`INPUT_DEADLINE`]) and says what
//! timed out; so does the drain after the exit. Two waits have none, on purpose: the agent's
//! lifetime (the watchdog and [`AgentProcess::stop`] end a stuck agent) and the controller taking
//! outputs (backpressure: a slow disk slows the agent down rather than losing its output).
//!
//! The supervisor does not care where the agent's stdio comes from: the readers take any
//! [`AsyncRead`], the input any [`AsyncWrite`](tokio::io::AsyncWrite), the exit any future ([`Streams::new`],
//! [`AgentProcess::new`]), so a keeper process owning the agent's stdio can stand in for the
//! child later.

mod exit;
mod input;
mod lines;
mod origin;
mod output;
mod readers;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use nucleic_protocol::{EventKind, RunFinished};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use crate::agent::AgentOutput;
use crate::error::AgentError;
use crate::process::{SpawnSpec, Spawned, spawn_group};

pub use input::{AgentProcess, INPUT_DEADLINE};
pub use lines::{Frame, LineReader, MAX_LINE_BYTES, MAX_STDERR_LINE_BYTES};
pub use origin::{Checkpoint, Origins, OutputStream, Place, exit_origin, origin, parse_origin};
pub use output::{live_readers, pipe_reader};

/// What one native line decoded to.
#[derive(Debug)]
pub struct DecodedLine<C> {
    /// The line's native type (`system/init`, `turn/completed`, `item.completed:…`; `invalid`
    /// for a line that is not JSON).
    pub native_type: String,
    /// At least one event per line.
    pub events: Vec<EventKind>,
    /// Something the adapter must act on.
    pub control: Option<C>,
}

/// A backend's stateful decoder of its agent's stdout, one line at a time. It must never panic
/// nor drop a line: what it cannot map becomes a `raw` event (and is counted unknown).
pub trait LineDecoder: Send + 'static {
    /// The control traffic the backend's [`Protocol`] acts on.
    type Control: Send + 'static;
    /// Decodes one line (without its newline).
    fn decode_line(&mut self, line: &str) -> DecodedLine<Self::Control>;
    /// Lines it could not map to anything known.
    fn unknown_lines(&self) -> u64;
}

/// Implements [`LineDecoder`] for a decoder type whose inherent `decode(&mut self, &str)` and
/// `unknown_lines(&self)` already do the work (they stay its public API).
macro_rules! line_decoder {
    ($decoder:ty, $control:ty) => {
        impl $crate::supervisor::LineDecoder for $decoder {
            type Control = $control;
            fn decode_line(&mut self, line: &str) -> $crate::supervisor::DecodedLine<$control> {
                self.decode(line)
            }
            fn unknown_lines(&self) -> u64 {
                <$decoder>::unknown_lines(self)
            }
        }
    };
}
pub(crate) use line_decoder;

/// The protocol logic of one backend; the supervisor calls it, in this order of a run's life:
/// [`Protocol::on_line`] and [`Protocol::on_control`] for each stdout line (in the reader's
/// task, before the line's events are handed over), [`Protocol::stalled`] from the watchdog,
/// and [`Protocol::finish`] once after the exit. The reader's task shares the agents' output
/// thread with every other agent's readers: nothing called there may block the thread (wait
/// by awaiting, as writes to the agent's input do).
pub trait Protocol: Clone + Send + Sync + 'static {
    type Decoder: LineDecoder;

    /// Bookkeeping for one decoded line; may rewrite its events. Must not block.
    fn on_line(&self, _line: &mut DecodedLine<Control<Self>>) {}

    /// Acts on a line's control traffic (e.g. answers on the agent's input, which has a
    /// deadline). An error is reported as an `error` event; the run goes on.
    fn on_control(
        &self,
        control: Control<Self>,
    ) -> impl Future<Output = Result<(), AgentError>> + Send;

    /// A line's control traffic that a previous host already acted on, seen again while a
    /// re-adopted agent's output is replayed (see [`Origins`]): bookkeeping only (e.g. which
    /// approvals the agent waits on), never a write to the agent.
    fn on_replayed_control(&self, _control: Control<Self>) {}

    /// The watchdog's question, every tick while the agent runs: `Some(why)` gives up on it (the
    /// supervisor reports `why` as a `timeout` error and stops the agent). The protocol keeps
    /// `why` for [`Protocol::finish`]. Only asked when [`Supervision::watchdog`] is set.
    fn stalled(&self, _limit: Duration) -> Option<String> {
        None
    }

    /// How the run ended, once the process is gone and its output read (or given up on).
    fn finish(&self, exit: ProcessExit<Self::Decoder>) -> impl Future<Output = RunFinished> + Send;
}

/// The control type of a protocol's decoder.
pub type Control<P> = <<P as Protocol>::Decoder as LineDecoder>::Control;

/// How the process ended, as the OS reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessEnd {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ProcessEnd {
    /// The end `wait` reported; an error waiting is an unknown end.
    pub fn from_wait(status: std::io::Result<std::process::ExitStatus>) -> ProcessEnd {
        match status {
            Ok(s) => ProcessEnd { code: s.code(), signal: s.signal() },
            Err(_) => ProcessEnd::default(),
        }
    }
}

/// Everything the supervisor knows when the run is over, for [`Protocol::finish`].
#[derive(Debug)]
pub struct ProcessExit<D> {
    pub end: ProcessEnd,
    /// [`AgentProcess::stop`] was called (by a person, the watchdog, or an orphaned reader).
    pub stop_requested: bool,
    /// The last non-empty stderr line, for the one-line reason.
    pub last_stderr: Option<String>,
    /// The decoder after the last line; `None` when the output was given up on (a process the
    /// agent started still held it open after the drain period).
    pub decoder: Option<D>,
}

/// How a run is supervised: its limits and its watchdog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Supervision {
    /// Longest stdout line kept whole; a longer one becomes a preview and an error.
    pub max_line: usize,
    /// Most events handed over in one message (lines already buffered are batched).
    pub max_batch: usize,
    /// How long the output may go without a new line after the exit before it is given up on.
    pub drain: Duration,
    /// Give up on the agent when [`Protocol::stalled`] says so, asking this often-ish (a
    /// quarter of it, between 50 ms and 1 s); `None`: no watchdog.
    pub watchdog: Option<Duration>,
    /// Tag events with where they came from in the output, and skip those already written
    /// (an agent re-adopted after a host restart); `None`: no origins.
    pub origins: Option<Origins>,
}

/// Events handed to the controller in one message, at most (see [`Supervision::max_batch`]).
pub const MAX_BATCH: usize = 128;

/// How long output may lag behind the process's exit (see [`Supervision::drain`]).
pub const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Outputs the controller has not taken yet before the readers wait for it.
const CHANNEL_CAPACITY: usize = 1024;

impl Default for Supervision {
    fn default() -> Supervision {
        Supervision {
            max_line: MAX_LINE_BYTES,
            max_batch: MAX_BATCH,
            drain: OUTPUT_DRAIN,
            watchdog: None,
            origins: None,
        }
    }
}

/// The agent's exit, as a future.
pub type ExitFuture = Pin<Box<dyn Future<Output = ProcessEnd> + Send>>;

/// One of the agent's output streams, read by a task.
pub type OutputReader = Box<dyn AsyncRead + Send + Unpin>;

/// What the supervisor reads from a running agent: its stdout and stderr and its exit.
pub struct Streams {
    stdout: OutputReader,
    stderr: OutputReader,
    exit: ExitFuture,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Streams")
    }
}

impl Streams {
    /// Any two byte streams and a future that resolves when the agent is gone. Dropping the
    /// future before it resolves must stop the agent (as [`launch`]'s does) — unless the agent
    /// is meant to outlive the host (a keeper's, `crate::keeper::attach`).
    pub fn new(
        stdout: impl AsyncRead + Send + Unpin + 'static,
        stderr: impl AsyncRead + Send + Unpin + 'static,
        exit: impl Future<Output = ProcessEnd> + Send + 'static,
    ) -> Streams {
        Streams { stdout: Box::new(stdout), stderr: Box::new(stderr), exit: Box::pin(exit) }
    }

    /// The stdout, stderr and exit, for a reader of its own.
    pub fn into_parts(self) -> (OutputReader, OutputReader, ExitFuture) {
        (self.stdout, self.stderr, self.exit)
    }
}

/// Starts `spec` (see [`spawn_group`]: own process group, bubblewrap when asked, the host's
/// variables scrubbed). Returns the input side and what the supervisor reads. Must be called
/// inside a Tokio runtime.
pub fn launch(spec: &SpawnSpec) -> Result<(Arc<AgentProcess>, Streams), AgentError> {
    let Spawned { mut child, stdout, stderr } = spawn_group(spec)?;
    let readers = pipe_reader(stdout).and_then(|out| Ok((out, pipe_reader(stderr)?)));
    let (stdout, stderr) = readers.map_err(|e| AgentError::Spawn {
        program: spec.program.clone(),
        reason: format!("cannot read the agent's output pipes: {e}"),
    })?;
    let pid = child.id();
    let process = match child.stdin.take() {
        Some(stdin) => AgentProcess::new(stdin, pid),
        None => AgentProcess::new(tokio::io::sink(), pid),
    };
    // The child moves into the future: dropped unfinished (runtime shutdown), it takes its tree
    // down with it (see `AgentChild`).
    let exit = async move { ProcessEnd::from_wait(child.wait().await) };
    Ok((Arc::new(process), Streams::new(stdout, stderr, exit)))
}

/// Supervises a started agent with `protocol` and `decoder`. Returns the outputs, which end with
/// exactly one [`AgentOutput::Exited`]. Must be called inside a Tokio runtime.
pub fn supervise<P: Protocol>(
    process: Arc<AgentProcess>,
    streams: Streams,
    protocol: P,
    decoder: P::Decoder,
    supervision: Supervision,
) -> mpsc::Receiver<AgentOutput> {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let watchdog = supervision.watchdog;
    let run = readers::Run::new(process, tx, supervision);
    let Streams { stdout, stderr, exit } = streams;
    let readers = output::runtime();
    let stderr_task = {
        let run = run.clone();
        readers.spawn(async move { run.read_stderr(stderr).await })
    };
    let stdout_task = {
        let (run, protocol) = (run.clone(), protocol.clone());
        readers.spawn(async move { run.read_stdout(stdout, &protocol, decoder).await })
    };
    if let Some(limit) = watchdog {
        tokio::spawn(exit::watchdog(run.clone(), protocol.clone(), limit));
    }
    tokio::spawn(exit::supervise_exit(run, protocol, exit, stdout_task, stderr_task));
    rx
}

/// Events of the host's own making (no native type).
pub(crate) fn host_error(code: nucleic_protocol::ErrorCode, message: String) -> EventKind {
    EventKind::Error(nucleic_protocol::ErrorEvent { code, message, http_status: None })
}
