//! The two readers of a running agent, each a task on the agents' output thread: stdout
//! (framed, decoded, acted on, batched) and stderr (lines forwarded, the last one kept for the
//! exit message), and the one gate every output passes through on its way to the controller.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nucleic_protocol::{ErrorCode, EventKind, RawJson, StderrLine};
use serde_json::Value;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::lines::{Frame, LineReader, MAX_STDERR_LINE_BYTES};
use super::origin::{OutputStream, Place, origin};
use super::{AgentProcess, DecodedLine, LineDecoder, Protocol, Supervision, host_error};
use crate::agent::{AgentOutput, NativeEvent, host_events};
use crate::error::AgentError;

/// Characters of an oversized line kept as its preview.
const PREVIEW_CHARS: usize = 200;

/// How long an agent nobody listens to any more gets between SIGTERM and SIGKILL.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);

/// One supervised run, shared by its readers, its watchdog and its exit supervisor.
#[derive(Clone)]
pub(super) struct Run(Arc<RunState>);

pub(super) struct RunState {
    pub(super) process: Arc<AgentProcess>,
    pub(super) supervision: Supervision,
    tx: mpsc::Sender<AgentOutput>,
    /// Open until the exit is reported; held while an output is sent, so nothing follows
    /// [`AgentOutput::Exited`].
    open: tokio::sync::Mutex<bool>,
    /// Frames the stdout reader has taken (its progress, watched while draining).
    frames: AtomicU64,
    /// Nobody listens any more: the agent was stopped once.
    orphaned: AtomicBool,
    /// The last non-empty stderr line.
    last_stderr: Mutex<Option<String>>,
}

impl std::ops::Deref for Run {
    type Target = RunState;
    fn deref(&self) -> &RunState {
        &self.0
    }
}

impl Run {
    pub(super) fn new(
        process: Arc<AgentProcess>,
        tx: mpsc::Sender<AgentOutput>,
        supervision: Supervision,
    ) -> Run {
        Run(Arc::new(RunState {
            process,
            supervision,
            tx,
            open: tokio::sync::Mutex::new(true),
            frames: AtomicU64::new(0),
            orphaned: AtomicBool::new(false),
            last_stderr: Mutex::new(None),
        }))
    }

    /// Reads and decodes stdout until its end, acting on each line's control traffic and
    /// handing events over in batches; returns the decoder.
    pub(super) async fn read_stdout<P: Protocol>(
        &self,
        stdout: impl AsyncRead + Unpin,
        protocol: &P,
        mut decoder: P::Decoder,
    ) -> P::Decoder {
        let max_line = self.supervision.max_line;
        let mut lines = LineReader::new(stdout, max_line, 64 * 1024);
        let mut batch = Batch::new(self);
        loop {
            let frame = lines.next_frame().await;
            self.frames.fetch_add(1, Ordering::SeqCst);
            let done = match frame {
                Frame::Line(line) if line.trim().is_empty() => false,
                Frame::Line(line) => {
                    let (kept, mut decoded) = decode(decoder, line).await;
                    decoder = kept;
                    protocol.on_line(&mut decoded);
                    let end = lines.consumed();
                    let events = NativeEvent::from_line(&decoded.native_type, decoded.events);
                    batch.add(self.placed(OutputStream::Stdout, end, events));
                    let replayed = self.already_written(OutputStream::Stdout, end);
                    match decoded.control {
                        Some(control) if replayed => protocol.on_replayed_control(control),
                        Some(control) => {
                            if let Err(e) = protocol.on_control(control).await {
                                let message = format!("answering the agent failed: {e}");
                                batch.add(host_events(vec![host_error(error_code(&e), message)]));
                            }
                        }
                        None => {}
                    }
                    false
                }
                Frame::Oversized { head, len } => {
                    let events = oversized(&head, len, max_line);
                    batch.add(self.placed(OutputStream::Stdout, lines.consumed(), events));
                    false
                }
                Frame::Eof => true,
                Frame::Failed(e) => {
                    let message = format!("reading the agent's output failed: {e}");
                    batch.add(host_events(vec![host_error(ErrorCode::AgentExited, message)]));
                    true
                }
            };
            batch.hand_over(done || !lines.more_buffered()).await;
            if done {
                return decoder;
            }
        }
    }

    /// Forwards stderr lines as `stderr` events until its end and keeps the last one. A line
    /// over [`MAX_STDERR_LINE_BYTES`] keeps its head (stderr is free text: no error).
    pub(super) async fn read_stderr(&self, stderr: impl AsyncRead + Unpin) {
        let mut lines = LineReader::new(stderr, MAX_STDERR_LINE_BYTES, 8 * 1024);
        let mut batch = Batch::new(self);
        loop {
            let (text, done) = match lines.next_frame().await {
                Frame::Line(text) | Frame::Oversized { head: text, .. } => (text, false),
                Frame::Eof => (String::new(), true),
                Frame::Failed(e) => {
                    let message = format!("reading the agent's stderr failed: {e}");
                    batch.add(host_events(vec![host_error(ErrorCode::AgentExited, message)]));
                    (String::new(), true)
                }
            };
            if !text.trim().is_empty() {
                *lock(&self.last_stderr) = Some(text.clone());
                let event = NativeEvent {
                    origin: None,
                    native_type: Some("stderr".into()),
                    kind: EventKind::Stderr(StderrLine { text }),
                };
                batch.add(self.placed(OutputStream::Stderr, lines.consumed(), vec![event]));
            }
            batch.hand_over(done || !lines.more_buffered()).await;
            if done {
                return;
            }
        }
    }

    /// Tags the events of the line of `stream` ending at `end` with their origins and drops
    /// those already written (when the run tracks origins; else hands them back as they are).
    fn placed(&self, stream: OutputStream, end: u64, events: Vec<NativeEvent>) -> Vec<NativeEvent> {
        let Some(origins) = &self.supervision.origins else {
            return events;
        };
        let mut placed = Vec::with_capacity(events.len());
        for (index, mut event) in events.into_iter().enumerate() {
            let place = Place { offset: end, index: u32::try_from(index).unwrap_or(u32::MAX) };
            if !origins.after.covers(stream, place) {
                event.origin = Some(origin(&origins.run, stream, place));
                placed.push(event);
            }
        }
        placed
    }

    /// Whether a previous host already wrote (and acted on) the line of `stream` ending at `end`.
    fn already_written(&self, stream: OutputStream, end: u64) -> bool {
        self.supervision.origins.as_ref().is_some_and(|o| o.after.covers_line(stream, end))
    }

    /// Hands `out` to the controller unless the run was closed (waiting for the controller to
    /// take it: backpressure). Nobody listening any more stops the agent, once, if it still runs.
    pub(super) async fn send(&self, out: AgentOutput) {
        let open = self.open.lock().await;
        if !*open {
            return;
        }
        if self.tx.send(out).await.is_err()
            && !self.orphaned.swap(true, Ordering::SeqCst)
            && !self.process.ended()
        {
            self.process.stop(ORPHAN_GRACE);
        }
    }

    /// Sends the last outputs and closes the run: nothing is sent after them.
    pub(super) async fn close_with(&self, last: Vec<AgentOutput>) {
        let mut open = self.open.lock().await;
        for out in last {
            let _ = self.tx.send(out).await;
        }
        *open = false;
    }

    /// Frames the stdout reader has taken so far.
    pub(super) fn frames_read(&self) -> u64 {
        self.frames.load(Ordering::SeqCst)
    }

    pub(super) fn last_stderr(&self) -> Option<String> {
        lock(&self.last_stderr).clone()
    }
}

/// Lines at least this long are decoded on a blocking thread rather than on the output thread
/// every agent's readers share: parsing one takes milliseconds (the cap allows 64 MiB), and no
/// other agent's output should wait for it.
pub(super) const DECODE_APART_BYTES: usize = 1 << 20;

/// Decodes `line` with `decoder` (handed back): inline, or apart when it is long.
async fn decode<D: LineDecoder>(mut decoder: D, line: String) -> (D, DecodedLine<D::Control>) {
    if line.len() < DECODE_APART_BYTES {
        let decoded = decoder.decode_line(&line);
        return (decoder, decoded);
    }
    let apart = tokio::task::spawn_blocking(move || {
        let decoded = decoder.decode_line(&line);
        (decoder, decoded)
    });
    match apart.await {
        Ok(done) => done,
        // A decoder that panicked fails this reader as it would have inline (the run reports
        // "decoding the agent's output failed").
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("decoding a long line was cancelled: {e}"),
        },
    }
}

/// Events waiting to be handed over together.
struct Batch<'a> {
    run: &'a Run,
    events: Vec<NativeEvent>,
}

impl<'a> Batch<'a> {
    fn new(run: &'a Run) -> Batch<'a> {
        Batch { run, events: Vec::new() }
    }

    fn add(&mut self, events: Vec<NativeEvent>) {
        self.events.extend(events);
    }

    /// Hands the batch over when it is full, or `now` (nothing more is buffered: the agent is
    /// waiting, or its output ended).
    async fn hand_over(&mut self, now: bool) {
        if !self.events.is_empty() && (now || self.events.len() >= self.run.supervision.max_batch) {
            self.run.send(AgentOutput::Events(std::mem::take(&mut self.events))).await;
        }
    }
}

/// A line over the cap: a `raw` preview of its head and a `decode` error saying what was lost.
pub(super) fn oversized(head: &str, len: usize, cap: usize) -> Vec<NativeEvent> {
    let preview: String = head.chars().take(PREVIEW_CHARS).collect();
    host_events(vec![
        EventKind::raw(RawJson::from_value(&Value::String(preview))),
        host_error(
            ErrorCode::Decode,
            format!("agent wrote a {len}-byte line, over the {cap}-byte cap; kept its start only"),
        ),
    ])
}

/// The error code an adapter failure is reported with.
pub(super) fn error_code(e: &AgentError) -> ErrorCode {
    match e {
        AgentError::Timeout { .. } => ErrorCode::Timeout,
        AgentError::InvalidInput(_) => ErrorCode::InvalidInput,
        _ => ErrorCode::AgentExited,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
