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

/// A permission ask (or PreToolUse hook) the CLI is blocked on.
#[derive(Debug)]
struct PendingAsk {
    tool_name: String,
    /// A PreToolUse hook callback, not a `can_use_tool` request.
    hook: bool,
}

#[derive(Debug)]
struct Shared {
    process: Arc<AgentProcess>,
    /// The CLI's open `can_use_tool` requests; a reply is only ever sent for one of these.
    asks: Mutex<HashMap<String, PendingAsk>>,
    next_request: AtomicU64,
    /// The `initialize` line that registers the host's PreToolUse hook, written before any other
    /// line (taken by the first write).
    initialize: tokio::sync::Mutex<Option<String>>,
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
    Ok(run_claude(process, streams, Supervision::default(), opts.host_hooks))
}

/// Supervises a started Claude Code process. With `hooks`, the first line it is sent registers
/// the host's PreToolUse hook (not for a re-adopted process: it has it already).
pub(crate) fn run_claude(
    process: Arc<AgentProcess>,
    streams: Streams,
    supervision: Supervision,
    hooks: bool,
) -> (ClaudeHandle, mpsc::Receiver<AgentOutput>) {
    let initialize =
        hooks.then(|| input::initialize_with_hooks("nucleic_init")).and_then(Result::ok);
    let shared = Shared {
        process: process.clone(),
        asks: Mutex::new(HashMap::new()),
        next_request: AtomicU64::new(1),
        initialize: tokio::sync::Mutex::new(initialize),
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
            | ControlIn::HookAsked { .. }
            | ControlIn::TurnEnded
            | ControlIn::Answered { .. }) => self.on_replayed_control(bookkeeping),
        }
        Ok(())
    }

    /// The bookkeeping of control traffic (also for lines acted on live, in `on_control`).
    fn on_replayed_control(&self, control: ControlIn) {
        match control {
            ControlIn::PermissionAsked { request_id, tool_name, .. } => {
                self.asks().insert(request_id, PendingAsk { tool_name, hook: false });
            }
            // Whether the previous host answered it shows in the transcript: a hook answered by
            // the policy was recorded with its answer (its line is then behind the checkpoint
            // and never handed over again); one it did not answer is replayed live.
            ControlIn::HookAsked { request_id } => {
                self.asks().insert(request_id, PendingAsk { tool_name: String::new(), hook: true });
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
        let mut initialize = self.shared.initialize.lock().await;
        if let Some(first) = initialize.take() {
            self.shared.process.write_line(&first).await?;
        }
        drop(initialize);
        self.shared.process.write_line(line).await
    }

    /// Answers a PreToolUse hook the CLI waits on.
    async fn answer_hook(
        &self,
        request_id: &str,
        verdict: input::HookVerdict,
        reason: &str,
    ) -> Result<(), AgentError> {
        match self.asks().get(request_id) {
            Some(ask) if ask.hook => {}
            _ => return Err(AgentError::UnknownRequest(request_id.to_owned())),
        }
        self.write_line(&input::hook_reply(request_id, verdict, reason)?).await?;
        self.asks().remove(request_id);
        Ok(())
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
            Some(ask) if ask.hook => None,
            Some(ask) => Some(ask.tool_name.clone()),
            None => return Err(AgentError::UnknownRequest(request_id.to_owned())),
        };
        let Some(tool_name) = tool_name else {
            let (verdict, reason) = match decision {
                Decision::Allow => (input::HookVerdict::Allow, "allowed by the host"),
                Decision::Deny { message } | Decision::DenyAndStop { message } => {
                    (input::HookVerdict::Deny, message.as_str())
                }
                Decision::AllowEdited { .. }
                | Decision::AllowAlways { .. }
                | Decision::ApprovePlan { .. }
                | Decision::Answer { .. } => {
                    return Err(AgentError::InvalidInput(
                        "a PreToolUse hook is answered allow or deny".into(),
                    ));
                }
            };
            return self.answer_hook(request_id, verdict, reason).await;
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

    fn is_precheck(&self, request_id: &str) -> bool {
        self.asks().get(request_id).is_some_and(|a| a.hook)
    }

    async fn defer(&self, request_id: &str) -> Result<(), AgentError> {
        self.answer_hook(request_id, input::HookVerdict::Ask, "the host asks a person").await
    }

    fn process(&self) -> Option<&AgentProcess> {
        Some(&self.shared.process)
    }
}
