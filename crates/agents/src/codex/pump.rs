//! The background side of a running `codex app-server`: the stdout pump (decode, act on
//! control traffic, hand events over in batches), the stderr reader, the supervisor that reports
//! the exit, and the watchdog that gives up on stalled turns.

use std::collections::VecDeque;
use std::io::{BufReader, PipeReader};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_protocol::{ErrorCode, ErrorEvent, EventKind, RawJson, StderrLine};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{CodexHandle, MAX_BATCH, OUTPUT_DRAIN};
use crate::agent::{AgentControl, AgentOutput, NativeEvent, host_events};
use crate::codex::AppServerDecoder;
use crate::codex::exit::{CodexExit, classify_codex};
use crate::process::{AgentChild, MAX_LINE_BYTES, ReadLine, read_line_capped};

/// Gives up on a turn that shows no progress for `limit` while nobody is deciding an approval
/// and no tool is running: codex retries an unreachable provider forever. Reports an `error`
/// and stops codex; the run then finishes as `apiError` with the same text.
pub(super) async fn watchdog(handle: CodexHandle, tx: mpsc::Sender<AgentOutput>, limit: Duration) {
    let tick = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        if handle.shared.ended.load(Ordering::SeqCst)
            || handle.shared.stop_requested.load(Ordering::SeqCst)
        {
            return;
        }
        let stalled = {
            let st = handle.state();
            st.turn_busy
                && st.asks.is_empty()
                && st.running_tools.is_empty()
                && st.last_progress.is_some_and(|t| t.elapsed() >= limit)
        };
        if stalled {
            let why = format!(
                "codex made no progress for {} s during a turn (its model provider is unreachable or not answering, and codex retries forever); Nucleic gave up and stopped it",
                limit.as_secs_f32()
            );
            handle.state().gave_up = Some(why.clone());
            let error = host_events(vec![host_error(ErrorCode::Timeout, why)]);
            let _ = tx.send(AgentOutput::Events(error)).await;
            handle.stop(Duration::from_secs(2));
            return;
        }
    }
}

/// Forwards stderr lines as events and keeps the last few for the exit message.
pub(in crate::codex) fn read_stderr(
    stderr: PipeReader,
    tx: &mpsc::Sender<AgentOutput>,
    tail: &Mutex<VecDeque<String>>,
) {
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

/// Reads and decodes stdout until EOF (on its own thread), acting on control traffic and
/// handing events over in batches; returns the decoder (for its unknown-line count).
pub(super) fn read_stdout(
    stdout: PipeReader,
    handle: &CodexHandle,
    tx: &mpsc::Sender<AgentOutput>,
    rt: &tokio::runtime::Handle,
) -> AppServerDecoder {
    let mut decoder = AppServerDecoder::new();
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
                let mut decoded = decoder.decode(&line);
                handle.note_progress(&decoded);
                handle.tag_asks(&mut decoded);
                batch.extend(NativeEvent::from_line(&decoded.native_type, decoded.events));
                if let Some(control) = decoded.control {
                    rt.block_on(handle.on_control(control));
                }
            }
            Ok(ReadLine::Oversized { head, len }) => batch.extend(oversized(&head, len)),
            Ok(ReadLine::Eof) => done = true,
            Err(e) => {
                let message = format!("reading agent output failed: {e}");
                batch.extend(host_events(vec![host_error(ErrorCode::AgentExited, message)]));
                done = true;
            }
        }
        let more_buffered = reader.buffer().contains(&b'\n');
        if handle.shared.output_abandoned.load(Ordering::SeqCst) {
            return decoder;
        }
        if !batch.is_empty() && (done || batch.len() >= MAX_BATCH || !more_buffered) {
            let out = AgentOutput::Events(std::mem::take(&mut batch));
            if tx.blocking_send(out).is_err() && !orphaned {
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
pub(super) async fn supervise(
    mut child: AgentChild,
    handle: CodexHandle,
    tx: mpsc::Sender<AgentOutput>,
    mut stdout_task: tokio::task::JoinHandle<AppServerDecoder>,
    stderr_task: tokio::task::JoinHandle<()>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let status = child.wait().await;
    handle.shared.ended.store(true, Ordering::SeqCst);
    let decoder = loop {
        let before = handle.shared.lines_read.load(Ordering::SeqCst);
        match tokio::time::timeout(OUTPUT_DRAIN, &mut stdout_task).await {
            Ok(result) => break result.unwrap_or_default(),
            Err(_) if handle.shared.lines_read.load(Ordering::SeqCst) != before => {}
            Err(_) => {
                handle.shared.output_abandoned.store(true, Ordering::SeqCst);
                break AppServerDecoder::new();
            }
        }
    };
    handle.shared.stdin.lock().await.take();
    let _ = tokio::time::timeout(OUTPUT_DRAIN, stderr_task).await;
    handle.shared.leftovers.clean_after_exit().await;
    let (code, signal) = match status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    let last_stderr = tail.lock().ok().and_then(|t| t.back().cloned());
    let facts = {
        let mut st = handle.state();
        st.asks.clear();
        CodexExit {
            code,
            signal,
            last_turn: st.last_turn.clone(),
            turn_open: st.turn_open,
            setup_failed: st.setup_failed.clone(),
            stop_requested: handle.shared.stop_requested.load(Ordering::SeqCst),
            gave_up: st.gave_up.clone(),
            turn_error: st.turn_error.clone(),
            last_stderr,
        }
    };
    let mut finished = classify_codex(&facts);
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
