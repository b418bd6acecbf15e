//! A running Claude Code process: its protocol logic for the supervisor (control replies, exit
//! classification), the stdin side ([`ClaudeHandle`]), and the bookkeeping that keeps replies
//! tied to requests the CLI really made.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nucleic_protocol::{Decision, RunFinished};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::error::AgentError;
use crate::supervisor::{
    AgentProcess, ProcessExit, Protocol, Streams, Supervision, launch, supervise,
};

use super::decode::{ClaudeDecoder, ControlIn};
use super::exit::{ExitFacts, classify};
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

/// A permission ask the CLI is blocked on.
#[derive(Debug)]
struct PendingAsk {
    tool_name: String,
}

#[derive(Debug)]
struct Shared {
    process: Arc<AgentProcess>,
    /// The CLI's open `can_use_tool` requests; a reply is only ever sent for one of these.
    asks: Mutex<HashMap<String, PendingAsk>>,
    next_request: AtomicU64,
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
    let (process, streams) = launch(&opts.spawn_spec()?)?;
    Ok(run_claude(process, streams, Supervision::default()))
}

/// Supervises a started Claude Code process.
pub(crate) fn run_claude(
    process: Arc<AgentProcess>,
    streams: Streams,
    supervision: Supervision,
) -> (ClaudeHandle, mpsc::Receiver<AgentOutput>) {
    let shared = Shared {
        process: process.clone(),
        asks: Mutex::new(HashMap::new()),
        next_request: AtomicU64::new(1),
    };
    let handle = ClaudeHandle { shared: Arc::new(shared) };
    let rx = supervise(process, streams, handle.clone(), ClaudeDecoder::new(), supervision);
    (handle, rx)
}

crate::supervisor::line_decoder!(ClaudeDecoder, ControlIn);

impl Protocol for ClaudeHandle {
    type Decoder = ClaudeDecoder;

    async fn on_control(&self, control: ControlIn) -> Result<(), AgentError> {
        match control {
            ControlIn::Unsupported { request_id, subtype } => {
                // Silence would leave the CLI waiting forever; an error reply lets it go on.
                let line = input::control_error(
                    &request_id,
                    &format!("nucleic does not serve control requests of subtype {subtype}"),
                )?;
                self.write_line(&line).await?;
            }
            bookkeeping @ (ControlIn::PermissionAsked { .. }
            | ControlIn::TurnEnded
            | ControlIn::Answered { .. }) => self.on_replayed_control(bookkeeping),
        }
        Ok(())
    }

    /// The bookkeeping of control traffic (also for lines acted on live, in `on_control`).
    fn on_replayed_control(&self, control: ControlIn) {
        match control {
            ControlIn::PermissionAsked { request_id, tool_name, .. } => {
                self.asks().insert(request_id, PendingAsk { tool_name });
            }
            ControlIn::TurnEnded => self.asks().clear(),
            // Answered by the previous host.
            ControlIn::Unsupported { .. } | ControlIn::Answered { .. } => {}
        }
    }

    async fn finish(&self, exit: ProcessExit<ClaudeDecoder>) -> RunFinished {
        self.asks().clear();
        // Output given up on: how the last turn ended is unknown.
        let decoder = exit.decoder.unwrap_or_default();
        classify(&ExitFacts {
            end: exit.end,
            last_turn: decoder.last_turn(),
            turn_open: decoder.turn_open(),
            stop_requested: exit.stop_requested,
            last_stderr: exit.last_stderr.as_deref(),
        })
    }
}

impl ClaudeHandle {
    fn asks(&self) -> MutexGuard<'_, HashMap<String, PendingAsk>> {
        self.shared.asks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn write_line(&self, line: &str) -> Result<(), AgentError> {
        input::validate_line(line)?;
        self.shared.process.write_line(line).await
    }

    async fn control(&self, request: Value) -> Result<(), AgentError> {
        let n = self.shared.next_request.fetch_add(1, Ordering::SeqCst);
        let id = format!("nucleic_{n}");
        self.write_line(&input::control_request(&id, request)?).await
    }
}

impl AgentControl for ClaudeHandle {
    fn capabilities(&self) -> Capabilities {
        CLAUDE_CAPABILITIES
    }

    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        self.write_line(&input::user_text(text)?).await
    }

    async fn respond(&self, request_id: &str, decision: &Decision) -> Result<(), AgentError> {
        decision.validate().map_err(AgentError::InvalidInput)?;
        let tool_name = match self.asks().get(request_id) {
            Some(ask) => ask.tool_name.clone(),
            None => return Err(AgentError::UnknownRequest(request_id.to_owned())),
        };
        let line = input::permission_reply(request_id, &tool_name, decision)?;
        self.write_line(&line).await?;
        self.asks().remove(request_id);
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

    fn process(&self) -> Option<&AgentProcess> {
        Some(&self.shared.process)
    }
}
