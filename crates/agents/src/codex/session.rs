//! A running `codex app-server` process: the stdout pump (decode → outputs), the JSON-RPC client
//! side ([`CodexHandle`]: handshake, thread, turns, approval replies), and the bookkeeping that
//! keeps replies tied to requests codex really made.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nucleic_protocol::{Decision, EventKind};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::error::AgentError;
use crate::process::{Spawned, spawn_group, terminate_tree};

use super::launch::CodexOptions;
use super::leftovers::Leftovers;
use super::{ControlIn, DecodedLine, RequestId, RpcError};

#[path = "pump.rs"]
mod pump;

pub(super) use pump::read_stderr;
use pump::{read_stdout, supervise, watchdog};

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
    fork: false,
    partial_deltas: true,
};

/// The `clientInfo` sent in `initialize`.
const CLIENT_NAME: &str = "nucleic";

/// Most events handed to the controller in one message (lines already buffered are batched).
const MAX_BATCH: usize = 128;

/// How long output may lag behind the process's exit before the exit is reported anyway.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

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
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    state: Mutex<State>,
    thread_request: (&'static str, Value),
    next_id: AtomicI64,
    stop_requested: AtomicBool,
    pid: Option<u32>,
    lines_read: AtomicU64,
    output_abandoned: AtomicBool,
    /// The process is gone (the watchdog stops looking).
    ended: AtomicBool,
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
    let spec = opts.spawn_spec()?;
    let Spawned { mut child, stdout, stderr } = spawn_group(&spec)?;
    let stdin = child.stdin.take();
    let shared = Arc::new(Shared {
        stdin: tokio::sync::Mutex::new(stdin),
        state: Mutex::new(State::default()),
        thread_request: opts.thread_request(),
        next_id: AtomicI64::new(1),
        stop_requested: AtomicBool::new(false),
        pid: child.id(),
        lines_read: AtomicU64::new(0),
        output_abandoned: AtomicBool::new(false),
        ended: AtomicBool::new(false),
        permission_mode: opts.permission_mode.clone(),
        leftovers: Leftovers::note(&opts.cwd),
        ask_prefix: format!("codex-{}-", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    });
    let (tx, rx) = mpsc::channel(1024);
    let handle = CodexHandle { shared };
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
    {
        let handle = handle.clone();
        tokio::spawn(async move {
            let params = json!({
                "clientInfo": {"name": CLIENT_NAME, "title": "Nucleic", "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"experimentalApi": false, "requestAttestation": false},
            });
            if let Err(e) = handle.request("initialize", params, Sent::Initialize).await {
                handle.state().setup_failed = Some(format!("cannot send initialize: {e}"));
            }
        });
    }
    if let Some(limit) = opts.provider_timeout {
        tokio::spawn(watchdog(handle.clone(), tx.clone(), limit));
    }
    tokio::spawn(supervise(child, handle.clone(), tx, stdout_task, stderr_task, tail));
    Ok((handle, rx))
}

/// The `decision` codex expects for `decision` (command and file-change approvals alike).
fn wire_decision(decision: &Decision) -> Result<&'static str, AgentError> {
    match decision {
        Decision::Allow => Ok("accept"),
        Decision::AllowAlways => Ok("acceptForSession"),
        Decision::Deny { .. } => Ok("decline"),
        Decision::DenyAndStop { .. } => Ok("cancel"),
        Decision::AllowEdited { .. } => Err(AgentError::Unsupported("edited tool input")),
    }
}

impl CodexHandle {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep going with it.
        self.shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes what a decoded line says about progress: anything but a retry notice is progress;
    /// tool items are tracked from start to result.
    fn note_progress(&self, decoded: &DecodedLine) {
        let mut st = self.state();
        if decoded.native_type != "error" {
            st.last_progress = Some(Instant::now());
        }
        for event in &decoded.events {
            match event {
                EventKind::ToolCallStarted(call) => {
                    st.running_tools.insert(call.tool_call_id.clone());
                }
                EventKind::ToolResult(result) => {
                    st.running_tools.remove(&result.tool_call_id);
                }
                EventKind::TurnCompleted(turn) if turn.is_error => {
                    st.turn_error.clone_from(&turn.result);
                }
                _ => {}
            }
        }
    }

    /// Gives approval requests this process's unique ids (see `ask_prefix`), and reports the
    /// Nucleic permission mode in `sessionStarted` (codex reports its approval policy).
    fn tag_asks(&self, decoded: &mut DecodedLine) {
        for event in &mut decoded.events {
            match event {
                EventKind::ApprovalRequested(ask) => ask.request_id = self.ask_key(&ask.request_id),
                EventKind::SessionStarted(started) => {
                    started.permission_mode = Some(self.shared.permission_mode.clone());
                }
                _ => {}
            }
        }
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
        let mut line =
            serde_json::to_string(value).map_err(|e| AgentError::InvalidInput(e.to_string()))?;
        line.push('\n');
        let mut stdin = self.shared.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or(AgentError::InputClosed)?;
        pipe.write_all(line.as_bytes()).await.map_err(AgentError::Write)?;
        pipe.flush().await.map_err(AgentError::Write)
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

    /// Starts the next queued turn if the thread is ready and idle.
    async fn pump_queue(&self) {
        let next = {
            let mut guard = self.state();
            let st = &mut *guard;
            match (&st.thread_id, st.turn_busy) {
                (Some(thread), false) => st.queued.pop_front().map(|t| (thread.clone(), t)),
                _ => None,
            }
        };
        if let Some((thread, text)) = next {
            let _ = self.start_turn(&thread, &text).await;
        }
    }

    async fn on_control(&self, control: ControlIn) {
        match control {
            ControlIn::ApprovalAsked { request_id, .. } => {
                let key = self.ask_key(&request_id.to_string());
                self.state().asks.insert(key, request_id);
            }
            ControlIn::Unsupported { request_id, method } => {
                // Silence would leave codex waiting forever; an error makes it fail the call closed.
                let reply = json!({
                    "id": request_id.to_json(),
                    "error": {"code": -32601, "message": format!("nucleic does not serve {method}")},
                });
                let _ = self.write_value(&reply).await;
            }
            ControlIn::Response { id, outcome } => self.on_response(&id, outcome).await,
            ControlIn::RequestResolved { request_id } => {
                let key = self.ask_key(&request_id.to_string());
                self.state().asks.remove(&key);
            }
            ControlIn::TurnStarted { turn_id, .. } => {
                let mut st = self.state();
                st.turn_id = Some(turn_id);
                st.turn_open = true;
                st.turn_busy = true;
            }
            ControlIn::TurnEnded { status } => {
                {
                    let mut st = self.state();
                    st.asks.clear();
                    st.turn_id = None;
                    st.turn_open = false;
                    st.turn_busy = false;
                    st.running_tools.clear();
                    st.last_turn = Some(status);
                }
                self.pump_queue().await;
            }
        }
    }

    async fn on_response(&self, id: &RequestId, outcome: Result<Value, RpcError>) {
        let sent = match id {
            RequestId::Number(n) => self.state().sent.remove(n),
            RequestId::Text(_) => None,
        };
        match (sent, outcome) {
            (Some(Sent::Initialize), Ok(_)) => {
                let (method, params) = self.shared.thread_request.clone();
                let ok = self.write_value(&json!({"method": "initialized"})).await.is_ok()
                    && self.request(method, params, Sent::Thread).await.is_ok();
                if !ok {
                    self.state().setup_failed = Some("cannot write to codex".into());
                }
            }
            (Some(Sent::Thread), Ok(result)) => {
                let thread = result.pointer("/thread/id").and_then(Value::as_str);
                match thread {
                    Some(t) => {
                        self.state().thread_id = Some(t.to_owned());
                        self.pump_queue().await;
                    }
                    None => self.setup_failed("codex started no thread".into()).await,
                }
            }
            (Some(Sent::TurnStart), Ok(result)) => {
                if let Some(turn) = result.pointer("/turn/id").and_then(Value::as_str) {
                    let mut st = self.state();
                    if st.turn_busy && st.turn_id.is_none() {
                        st.turn_id = Some(turn.to_owned());
                    }
                }
            }
            (Some(Sent::TurnStart), Err(_)) => {
                self.state().turn_busy = false;
                self.pump_queue().await;
            }
            (Some(Sent::Initialize), Err(e)) => {
                self.setup_failed(format!("codex refused initialize: {}", e.message)).await;
            }
            (Some(Sent::Thread), Err(e)) => {
                let method = self.shared.thread_request.0;
                self.setup_failed(format!("codex refused {method}: {}", e.message)).await;
            }
            (Some(Sent::Other) | None, _) => {}
        }
    }

    /// The session cannot work: remember why and close codex's input so it exits.
    async fn setup_failed(&self, why: String) {
        self.state().setup_failed = Some(why);
        self.shared.stdin.lock().await.take();
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
        if self.shared.stdin.lock().await.is_none() {
            return Err(AgentError::InputClosed);
        }
        self.state().queued.push_back(text.to_owned());
        self.pump_queue().await;
        Ok(())
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

    async fn set_model(&self, _model: &str) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("changing the model mid-session (codex)"))
    }

    async fn set_permission_mode(&self, _mode: &str) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("changing the permission mode mid-session (codex)"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_map_to_codex_words() {
        assert_eq!(wire_decision(&Decision::Allow).unwrap(), "accept");
        assert_eq!(wire_decision(&Decision::AllowAlways).unwrap(), "acceptForSession");
        assert_eq!(wire_decision(&Decision::Deny { message: "no".into() }).unwrap(), "decline");
        assert_eq!(
            wire_decision(&Decision::DenyAndStop { message: "no".into() }).unwrap(),
            "cancel"
        );
        assert!(wire_decision(&Decision::AllowEdited { updated_input: json!({}) }).is_err());
    }
}
