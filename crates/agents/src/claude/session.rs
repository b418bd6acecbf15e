//! A running Claude Code process: the stdout pump (decode → outputs), the stdin side
//! ([`ClaudeHandle`]), and the bookkeeping that keeps replies tied to requests the CLI really made.

use std::collections::{HashMap, VecDeque};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_protocol::{Decision, ErrorCode, ErrorEvent, EventKind, RawJson, StderrLine};
use serde_json::{Value, json};
use std::io::{BufReader, PipeReader};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities, NativeEvent, host_events};
use crate::error::AgentError;
use crate::process::{
    AgentChild, MAX_LINE_BYTES, ReadLine, Spawned, read_line_capped, spawn_group, terminate_tree,
};

use super::decode::{ClaudeDecoder, ControlIn};
use super::exit::{ExitFacts, ProcessEnd, classify};
use super::input;
use super::launch::ClaudeOptions;

/// What Claude Code supports through this adapter.
pub const CLAUDE_CAPABILITIES: Capabilities = Capabilities {
    interactive_approvals: true,
    edited_tool_input: true,
    allow_always: true,
    deny_and_stop: true,
    interrupt: true,
    set_model: true,
    set_permission_mode: true,
    resume: true,
    fork: true,
    partial_deltas: true,
};

/// Most events handed to the controller in one message (lines already buffered are batched).
const MAX_BATCH: usize = 128;

/// How long output may lag behind the process's exit before the exit is reported anyway.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// A permission ask the CLI is blocked on.
#[derive(Debug)]
struct PendingAsk {
    tool_name: String,
}

#[derive(Debug)]
struct Shared {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// The CLI's open `can_use_tool` requests; a reply is only ever sent for one of these.
    asks: Mutex<HashMap<String, PendingAsk>>,
    stop_requested: AtomicBool,
    next_request: AtomicU64,
    pid: Option<u32>,
    /// Lines the stdout reader has taken (progress, seen by the supervisor).
    lines_read: AtomicU64,
    /// The process is gone and its stdout stayed open: the reader must not report any more.
    output_abandoned: AtomicBool,
}

/// The stdin side of a running Claude Code process. Cheap to share.
#[derive(Debug, Clone)]
pub struct ClaudeHandle {
    shared: Arc<Shared>,
}

/// Starts Claude Code with `opts`. Returns the handle and the stream of outputs, which ends with
/// exactly one [`AgentOutput::Exited`].
pub fn spawn_claude(
    opts: &ClaudeOptions,
) -> Result<(ClaudeHandle, mpsc::Receiver<AgentOutput>), AgentError> {
    let spec = opts.spawn_spec()?;
    let Spawned { mut child, stdout, stderr } = spawn_group(&spec)?;
    let stdin = child.stdin.take();
    let shared = Arc::new(Shared {
        stdin: tokio::sync::Mutex::new(stdin),
        asks: Mutex::new(HashMap::new()),
        stop_requested: AtomicBool::new(false),
        next_request: AtomicU64::new(1),
        pid: child.id(),
        lines_read: AtomicU64::new(0),
        output_abandoned: AtomicBool::new(false),
    });
    let (tx, rx) = mpsc::channel(1024);
    let handle = ClaudeHandle { shared };
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_task = {
        let (tx, tail) = (tx.clone(), tail.clone());
        tokio::task::spawn_blocking(move || read_stderr(stderr, &tx, &tail))
    };
    let rt = tokio::runtime::Handle::current();
    let stdout_task = {
        let (tx, handle) = (tx.clone(), handle.clone());
        tokio::task::spawn_blocking(move || read_stdout(stdout, &handle, &tx, &rt))
    };
    tokio::spawn(supervise(child, handle.clone(), tx, stdout_task, stderr_task, tail));
    Ok((handle, rx))
}

/// Forwards stderr lines as events and keeps the last few for the exit message.
fn read_stderr(stderr: PipeReader, tx: &mpsc::Sender<AgentOutput>, tail: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        let text = match read_line_capped(&mut reader, &mut buf, 64 * 1024) {
            Ok(ReadLine::Line(l)) => l,
            Ok(ReadLine::Oversized { head, .. }) => head,
            Ok(ReadLine::Eof) | Err(_) => break,
        };
        if text.trim().is_empty() {
            continue;
        }
        if let Ok(mut t) = tail.lock() {
            if t.len() == 20 {
                t.pop_front();
            }
            t.push_back(text.clone());
        }
        let out = AgentOutput::Events(vec![NativeEvent {
            native_type: Some("stderr".into()),
            kind: EventKind::Stderr(StderrLine { text }),
        }]);
        if tx.blocking_send(out).is_err() {
            break;
        }
    }
}

/// Reads and decodes stdout until EOF (on its own thread), handing events over in batches;
/// returns the decoder, which knows how the last turn ended.
fn read_stdout(
    stdout: PipeReader,
    handle: &ClaudeHandle,
    tx: &mpsc::Sender<AgentOutput>,
    rt: &tokio::runtime::Handle,
) -> ClaudeDecoder {
    let mut decoder = ClaudeDecoder::new();
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::new();
    let mut batch: Vec<NativeEvent> = Vec::new();
    let mut orphaned = false;
    loop {
        let mut done = false;
        match read_line_capped(&mut reader, &mut buf, MAX_LINE_BYTES) {
            Ok(ReadLine::Line(line)) if line.trim().is_empty() => {}
            Ok(ReadLine::Line(line)) => {
                handle.shared.lines_read.fetch_add(1, Ordering::SeqCst);
                let decoded = decoder.decode(&line);
                if let Some(control) = decoded.control {
                    rt.block_on(handle.on_control(control));
                }
                batch.extend(NativeEvent::from_line(&decoded.native_type, decoded.events));
            }
            Ok(ReadLine::Oversized { head, len }) => batch.extend(oversized(&head, len)),
            Ok(ReadLine::Eof) => done = true,
            Err(e) => {
                let message = format!("reading agent output failed: {e}");
                batch.extend(host_events(vec![host_error(ErrorCode::AgentExited, message)]));
                done = true;
            }
        }
        // Hand over what we have unless another complete line is already buffered.
        let more_buffered = reader.buffer().contains(&b'\n');
        if handle.shared.output_abandoned.load(Ordering::SeqCst) {
            return decoder;
        }
        if !batch.is_empty() && (done || batch.len() >= MAX_BATCH || !more_buffered) {
            let out = AgentOutput::Events(std::mem::take(&mut batch));
            if tx.blocking_send(out).is_err() && !orphaned {
                // Nobody listens any more: stop the agent rather than let it run unobserved.
                orphaned = true;
                let _guard = rt.enter();
                handle.stop(Duration::from_secs(2));
            }
        }
        if done {
            return decoder;
        }
    }
}

/// Waits for the output readers and the process, then reports how the run ended.
async fn supervise(
    mut child: AgentChild,
    handle: ClaudeHandle,
    tx: mpsc::Sender<AgentOutput>,
    stdout_task: tokio::task::JoinHandle<ClaudeDecoder>,
    stderr_task: tokio::task::JoinHandle<()>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let status = child.wait().await;
    // Normally stdout ends with the process; a grandchild holding it open must not delay the
    // exit report forever (how the last turn ended is then unknown).
    let mut stdout_task = stdout_task;
    let decoder = loop {
        let before = handle.shared.lines_read.load(Ordering::SeqCst);
        match tokio::time::timeout(OUTPUT_DRAIN, &mut stdout_task).await {
            Ok(result) => break result.unwrap_or_default(),
            // Still reading what the process wrote before it exited: keep waiting.
            Err(_) if handle.shared.lines_read.load(Ordering::SeqCst) != before => {}
            Err(_) => {
                handle.shared.output_abandoned.store(true, Ordering::SeqCst);
                break ClaudeDecoder::new();
            }
        }
    };
    handle.shared.stdin.lock().await.take();
    if let Ok(mut asks) = handle.shared.asks.lock() {
        asks.clear();
    }
    let _ = tokio::time::timeout(OUTPUT_DRAIN, stderr_task).await;
    let end = match status {
        Ok(s) => ProcessEnd { code: s.code(), signal: s.signal() },
        Err(_) => ProcessEnd { code: None, signal: None },
    };
    let last_stderr = tail.lock().ok().and_then(|t| t.back().cloned());
    let mut finished = classify(&ExitFacts {
        end,
        last_turn: decoder.last_turn(),
        turn_open: decoder.turn_open(),
        stop_requested: handle.shared.stop_requested.load(Ordering::SeqCst),
        last_stderr: last_stderr.as_deref(),
    });
    finished.unknown_lines = decoder.unknown_lines();
    let _ = tx.send(AgentOutput::Exited(finished)).await;
}

fn oversized(head: &str, len: usize) -> Vec<NativeEvent> {
    let preview: String = head.chars().take(200).collect();
    host_events(vec![
        EventKind::raw(RawJson::from_value(&Value::String(preview))),
        EventKind::Error(ErrorEvent {
            code: ErrorCode::Decode,
            message: format!(
                "agent wrote a {len}-byte line, over the {MAX_LINE_BYTES}-byte cap; kept its start only"
            ),
            http_status: None,
        }),
    ])
}

fn host_error(code: ErrorCode, message: String) -> EventKind {
    EventKind::Error(ErrorEvent { code, message, http_status: None })
}

impl ClaudeHandle {
    async fn on_control(&self, control: ControlIn) {
        match control {
            ControlIn::PermissionAsked { request_id, tool_name, .. } => {
                if let Ok(mut asks) = self.shared.asks.lock() {
                    asks.insert(request_id, PendingAsk { tool_name });
                }
            }
            ControlIn::Unsupported { request_id, subtype } => {
                // Silence would leave the CLI waiting forever; an error reply lets it go on.
                if let Ok(line) = input::control_error(
                    &request_id,
                    &format!("nucleic does not serve control requests of subtype {subtype}"),
                ) {
                    let _ = self.write_line(line).await;
                }
            }
            ControlIn::TurnEnded => {
                if let Ok(mut asks) = self.shared.asks.lock() {
                    asks.clear();
                }
            }
            ControlIn::Answered { .. } => {}
        }
    }

    async fn write_line(&self, mut line: String) -> Result<(), AgentError> {
        input::validate_line(&line)?;
        line.push('\n');
        let mut stdin = self.shared.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or(AgentError::InputClosed)?;
        pipe.write_all(line.as_bytes()).await.map_err(AgentError::Write)?;
        pipe.flush().await.map_err(AgentError::Write)
    }

    async fn control(&self, request: Value) -> Result<(), AgentError> {
        let n = self.shared.next_request.fetch_add(1, Ordering::SeqCst);
        let id = format!("nucleic_{n}");
        self.write_line(input::control_request(&id, request)?).await
    }
}

impl AgentControl for ClaudeHandle {
    fn capabilities(&self) -> Capabilities {
        CLAUDE_CAPABILITIES
    }

    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        self.write_line(input::user_text(text)?).await
    }

    async fn respond(&self, request_id: &str, decision: &Decision) -> Result<(), AgentError> {
        decision.validate().map_err(AgentError::InvalidInput)?;
        let tool_name = {
            let asks = self
                .shared
                .asks
                .lock()
                .map_err(|_| AgentError::UnknownRequest(request_id.into()))?;
            match asks.get(request_id) {
                Some(ask) => ask.tool_name.clone(),
                None => return Err(AgentError::UnknownRequest(request_id.to_owned())),
            }
        };
        let line = input::permission_reply(request_id, &tool_name, decision)?;
        self.write_line(line).await?;
        if let Ok(mut asks) = self.shared.asks.lock() {
            asks.remove(request_id);
        }
        Ok(())
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        self.control(json!({"subtype": "interrupt"})).await
    }

    async fn set_model(&self, model: &str) -> Result<(), AgentError> {
        if model.trim().is_empty() {
            return Err(AgentError::InvalidInput("empty model name".into()));
        }
        self.control(json!({"subtype": "set_model", "model": model})).await
    }

    async fn set_permission_mode(&self, mode: &str) -> Result<(), AgentError> {
        if !input::PERMISSION_MODES.contains(&mode) {
            return Err(AgentError::InvalidInput(format!("unknown permission mode {mode:?}")));
        }
        self.control(json!({"subtype": "set_permission_mode", "mode": mode})).await
    }

    async fn close_input(&self) {
        self.shared.stdin.lock().await.take();
    }

    fn stop(&self, grace: Duration) {
        self.shared.stop_requested.store(true, Ordering::SeqCst);
        if let Some(pid) = self.shared.pid {
            terminate_tree(pid, grace);
        }
    }

    fn pid(&self) -> Option<u32> {
        self.shared.pid
    }
}
