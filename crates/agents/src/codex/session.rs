//! A running `codex app-server` process: the JSON-RPC client side ([`CodexHandle`]: handshake,
//! thread, turns, approval replies) and the bookkeeping that keeps replies tied to requests codex
//! really made. Its protocol logic for the supervisor is in `session_protocol.rs`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use nucleic_protocol::Decision;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::error::AgentError;
use crate::supervisor::{AgentProcess, Streams, Supervision, launch, supervise};

use super::launch::CodexOptions;
use super::leftovers::Leftovers;
use super::{AppServerDecoder, RequestId};

#[path = "session_protocol.rs"]
mod protocol;

/// What Codex supports through this adapter.
pub const CODEX_CAPABILITIES: Capabilities = Capabilities {
    interactive_approvals: true,
    edited_tool_input: false,
    allow_always: true,
    deny_and_stop: true,
    interrupt: true,
    set_model: false,
    set_permission_mode: false,
    resume: true,
    // app-server's `thread/fork`: a new thread carrying the history, in the session's worktree.
    fork: true,
    partial_deltas: true,
};

/// The first JSON-RPC id a re-adopted handle uses: responses to the previous host's requests
/// (numbered from 1) can never be taken for ours.
const ADOPTED_FIRST_ID: i64 = 1 << 40;

/// The `clientInfo` sent in `initialize`.
const CLIENT_NAME: &str = "nucleic";

/// What one of our requests was, so its response can be acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Initialize,
    Thread,
    TurnStart,
    Other,
}

/// Session bookkeeping, shared by the reader thread and the handle.
#[derive(Debug, Default)]
struct State {
    /// Our requests awaiting a response, by id.
    sent: HashMap<i64, Sent>,
    /// Approval requests codex is blocked on, by their id as shown in events.
    asks: HashMap<String, RequestId>,
    thread_id: Option<String>,
    /// The turn in progress (for `turn/interrupt`).
    turn_id: Option<String>,
    /// A `turn/start` was sent and its turn has not ended.
    turn_busy: bool,
    /// A turn started and has not ended.
    turn_open: bool,
    /// How the last turn ended (`completed`, `interrupted`, `failed`).
    last_turn: Option<String>,
    /// Texts waiting for the thread, or for the running turn to end.
    queued: VecDeque<String>,
    /// Why the session could not be set up (initialize or thread start refused).
    setup_failed: Option<String>,
    /// When codex last showed progress (any stdout line but an `error` retry notice).
    last_progress: Option<Instant>,
    /// Tool items started and not yet completed (a silent long command is not a stall).
    running_tools: HashSet<String>,
    /// Why the adapter gave up on a stalled turn.
    gave_up: Option<String>,
    /// The error of the last turn that failed.
    turn_error: Option<String>,
}

#[derive(Debug)]
struct Shared {
    process: Arc<AgentProcess>,
    state: Mutex<State>,
    thread_request: (&'static str, Value),
    next_id: AtomicI64,
    /// Put before codex's JSON-RPC ids in `approvalRequested` events: codex numbers its requests
    /// from 0 in every process, and a resumed session must not reuse an answered id.
    ask_prefix: String,
    /// The Nucleic permission mode, reported in `sessionStarted` instead of codex's policy.
    permission_mode: String,
    /// Sandbox mount points to remove at exit.
    leftovers: Leftovers,
}

/// The JSON-RPC client side of a running `codex app-server`. Cheap to share.
#[derive(Debug, Clone)]
pub struct CodexHandle {
    shared: Arc<Shared>,
}

/// Starts `codex app-server` with `opts`, performs the handshake and starts (or resumes) the
/// thread. Returns the handle and the stream of outputs, which ends with exactly one
/// [`AgentOutput::Exited`]. Texts sent before the thread exists are queued.
pub fn spawn_codex(
    opts: &CodexOptions,
) -> Result<(CodexHandle, mpsc::Receiver<AgentOutput>), AgentError> {
    let (process, streams) = launch(&opts.spawn_spec()?)?;
    let supervision = Supervision { watchdog: opts.provider_timeout, ..Supervision::default() };
    Ok(run_codex(opts, process, streams, supervision, false))
}

/// Supervises a started `codex app-server` and sends `initialize` — unless it is `adopted`
/// from a previous host (whose handshake it already had: its thread and turn are learnt again
/// from the replayed output, and our request ids start far above the old ones).
pub(crate) fn run_codex(
    opts: &CodexOptions,
    process: Arc<AgentProcess>,
    streams: Streams,
    supervision: Supervision,
    adopted: bool,
) -> (CodexHandle, mpsc::Receiver<AgentOutput>) {
    // Approval ids must be the same when a re-adopted agent's output is decoded again.
    let tag = match &supervision.origins {
        Some(origins) => origins.run.chars().filter(char::is_ascii_alphanumeric).take(8).collect(),
        None => uuid::Uuid::new_v4().simple().to_string()[..8].to_owned(),
    };
    let shared = Shared {
        process: process.clone(),
        state: Mutex::new(State::default()),
        thread_request: opts.thread_request(),
        next_id: AtomicI64::new(if adopted { ADOPTED_FIRST_ID } else { 1 }),
        permission_mode: opts.common.permission_mode.clone(),
        leftovers: Leftovers::note(&opts.common.cwd),
        ask_prefix: format!("codex-{tag}-"),
    };
    let handle = CodexHandle { shared: Arc::new(shared) };
    let rx = supervise(process, streams, handle.clone(), AppServerDecoder::new(), supervision);
    if adopted {
        return (handle, rx);
    }
    let initializing = handle.clone();
    tokio::spawn(async move {
        let params = json!({
            "clientInfo": {"name": CLIENT_NAME, "title": "Nucleic", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"experimentalApi": false, "requestAttestation": false},
        });
        if let Err(e) = initializing.request("initialize", params, Sent::Initialize).await {
            initializing.state().setup_failed = Some(format!("cannot send initialize: {e}"));
        }
    });
    (handle, rx)
}

/// The `decision` codex expects for `decision` (command and file-change approvals alike).
fn wire_decision(decision: &Decision) -> Result<&'static str, AgentError> {
    match decision {
        Decision::Allow => Ok("accept"),
        Decision::AllowAlways { .. } => Ok("acceptForSession"),
        Decision::Deny { .. } => Ok("decline"),
        Decision::DenyAndStop { .. } => Ok("cancel"),
        Decision::AllowEdited { .. } => Err(AgentError::Unsupported("edited tool input")),
        Decision::ApprovePlan { .. } => Err(AgentError::Unsupported("plan approvals")),
        Decision::Answer { .. } => Err(AgentError::Unsupported("answers to questions")),
    }
}

impl CodexHandle {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep going with it.
        self.shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id events carry for codex's request `id`.
    fn ask_key(&self, id: &str) -> String {
        format!("{}{id}", self.shared.ask_prefix)
    }

    /// The thread id, once `thread/start` (or `thread/resume`) answered.
    pub fn thread_id(&self) -> Option<String> {
        self.state().thread_id.clone()
    }

    async fn write_value(&self, value: &Value) -> Result<(), AgentError> {
        let line =
            serde_json::to_string(value).map_err(|e| AgentError::InvalidInput(e.to_string()))?;
        self.shared.process.write_line(&line).await
    }

    async fn request(&self, method: &str, params: Value, sent: Sent) -> Result<i64, AgentError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        self.state().sent.insert(id, sent);
        let result = self.write_value(&json!({"id": id, "method": method, "params": params})).await;
        if let Err(e) = result {
            self.state().sent.remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    /// Sends `turn/start` with `text` now (the thread exists and no turn is running).
    async fn start_turn(&self, thread_id: &str, text: &str) -> Result<(), AgentError> {
        let params = json!({
            "threadId": thread_id,
            "input": [{"type": "text", "text": text, "text_elements": []}],
        });
        {
            let mut st = self.state();
            st.turn_busy = true;
            st.last_progress = Some(Instant::now());
        }
        if let Err(e) = self.request("turn/start", params, Sent::TurnStart).await {
            self.state().turn_busy = false;
            return Err(e);
        }
        Ok(())
    }

    /// Starts the next queued turn if the thread is ready and idle (an error: its text is lost).
    async fn pump_queue(&self) -> Result<(), AgentError> {
        let next = {
            let mut guard = self.state();
            let st = &mut *guard;
            match (&st.thread_id, st.turn_busy) {
                (Some(thread), false) => st.queued.pop_front().map(|t| (thread.clone(), t)),
                _ => None,
            }
        };
        match next {
            Some((thread, text)) => self.start_turn(&thread, &text).await,
            None => Ok(()),
        }
    }

    /// The session cannot work: remember why and close codex's input so it exits.
    async fn setup_failed(&self, why: String) {
        self.state().setup_failed = Some(why);
        self.shared.process.close_input().await;
    }
}

impl AgentControl for CodexHandle {
    fn capabilities(&self) -> Capabilities {
        CODEX_CAPABILITIES
    }

    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        if text.trim().is_empty() {
            return Err(AgentError::InvalidInput("empty message".into()));
        }
        if !self.shared.process.input_open().await {
            return Err(AgentError::InputClosed);
        }
        self.state().queued.push_back(text.to_owned());
        self.pump_queue().await
    }

    async fn respond(&self, request_id: &str, decision: &Decision) -> Result<(), AgentError> {
        decision.validate().map_err(AgentError::InvalidInput)?;
        let wire = wire_decision(decision)?;
        let id = self
            .state()
            .asks
            .get(request_id)
            .cloned()
            .ok_or_else(|| AgentError::UnknownRequest(request_id.to_owned()))?;
        self.write_value(&json!({"id": id.to_json(), "result": {"decision": wire}})).await?;
        self.state().asks.remove(request_id);
        Ok(())
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        let target = {
            let st = self.state();
            st.thread_id.clone().zip(st.turn_id.clone())
        };
        let Some((thread, turn)) = target else {
            return Err(AgentError::InvalidInput("no turn is running".into()));
        };
        self.request("turn/interrupt", json!({"threadId": thread, "turnId": turn}), Sent::Other)
            .await
            .map(|_| ())
    }

    fn process(&self) -> Option<&AgentProcess> {
        Some(&self.shared.process)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_map_to_codex_words() {
        assert_eq!(wire_decision(&Decision::Allow).unwrap(), "accept");
        assert_eq!(
            wire_decision(&Decision::AllowAlways { scope: None }).unwrap(),
            "acceptForSession"
        );
        assert_eq!(wire_decision(&Decision::Deny { message: "no".into() }).unwrap(), "decline");
        assert_eq!(
            wire_decision(&Decision::DenyAndStop { message: "no".into() }).unwrap(),
            "cancel"
        );
        assert!(wire_decision(&Decision::AllowEdited { updated_input: json!({}) }).is_err());
    }
}
