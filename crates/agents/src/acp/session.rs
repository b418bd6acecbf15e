//! A running ACP agent: the JSON-RPC client side ([`AcpHandle`]: `initialize` under a deadline,
//! `session/new`, prompts queued one turn at a time, `session/cancel`, permission replies) and
//! the bookkeeping that ties replies to requests the agent really made. What the supervisor
//! calls is in `session_protocol.rs`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nucleic_protocol::Decision;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::error::AgentError;
use crate::supervisor::{AgentProcess, Streams, Supervision, launch, supervise};

use super::profile::AcpOptions;
use super::{AcpDecoder, PermissionOption, RequestId};

#[path = "session_protocol.rs"]
mod protocol;

/// What an ACP agent supports through this adapter.
pub const ACP_CAPABILITIES: Capabilities = Capabilities {
    interactive_approvals: true,
    edited_tool_input: false,
    allow_always: true,
    deny_and_stop: true,
    interrupt: true,
    set_model: false,
    set_permission_mode: false,
    resume: false,
    fork: false,
    partial_deltas: true,
};

/// The first JSON-RPC id a re-adopted handle uses: responses to the previous host's requests
/// (numbered from 1) can never be taken for ours.
const ADOPTED_FIRST_ID: i64 = 1 << 40;

/// How long a stopped agent gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What one of our requests was, so its response can be acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Initialize,
    NewSession,
    SetMode,
    Prompt,
}

/// Where the session's setup is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Initializing,
    Creating,
    Ready,
    Failed,
}

/// A permission request the agent waits on.
#[derive(Debug, Clone)]
struct Ask {
    id: RequestId,
    options: Vec<PermissionOption>,
}

/// Session bookkeeping, shared by the reader task and the handle.
#[derive(Debug)]
struct State {
    sent: HashMap<i64, Sent>,
    stage: Stage,
    session_id: Option<String>,
    /// Permission requests by their id as shown in events.
    asks: HashMap<String, Ask>,
    queued: VecDeque<String>,
    /// A `session/prompt` was sent and not answered.
    turn_busy: bool,
    /// How the last turn ended (its `stopReason`).
    last_stop: Option<String>,
    /// The error of the last prompt that failed.
    turn_error: Option<String>,
    /// Why the session could not be set up (refused, or a deadline passed).
    setup_failed: Option<String>,
}

#[derive(Debug)]
struct Shared {
    process: Arc<AgentProcess>,
    options: AcpOptions,
    state: Mutex<State>,
    next_id: AtomicI64,
    /// Put before the agent's request ids in `approvalRequested` events (agents number their
    /// requests from 0 in every process).
    ask_prefix: String,
    /// Taken over from a previous host: the session is learnt from the replayed output.
    adopted: bool,
}

/// The client side of a running ACP agent. Cheap to share.
#[derive(Debug, Clone)]
pub struct AcpHandle {
    shared: Arc<Shared>,
}

/// Starts the agent of `opts`, sends `initialize` and then creates its session. Returns the
/// handle and the outputs, which end with exactly one [`AgentOutput::Exited`]. Texts sent
/// before the session exists are queued.
pub fn spawn_acp(
    opts: &AcpOptions,
) -> Result<(AcpHandle, mpsc::Receiver<AgentOutput>), AgentError> {
    let (process, streams) = launch(&opts.spawn_spec()?)?;
    Ok(run_acp(opts, process, streams, Supervision::default(), false))
}

/// Supervises a started ACP agent and starts its setup — unless it is `adopted` from a
/// previous host (whose handshake it already had: its session and pending permission requests
/// are learnt again from the replayed output, and our request ids start far above the old ones).
pub(crate) fn run_acp(
    opts: &AcpOptions,
    process: Arc<AgentProcess>,
    streams: Streams,
    supervision: Supervision,
    adopted: bool,
) -> (AcpHandle, mpsc::Receiver<AgentOutput>) {
    // Approval ids must be the same when a re-adopted agent's output is decoded again.
    let tag: String = match &supervision.origins {
        Some(origins) => origins.run.chars().filter(char::is_ascii_alphanumeric).take(8).collect(),
        None => uuid::Uuid::new_v4().simple().to_string().chars().take(8).collect(),
    };
    let state = State {
        sent: HashMap::new(),
        stage: if adopted { Stage::Creating } else { Stage::Initializing },
        session_id: None,
        asks: HashMap::new(),
        queued: VecDeque::new(),
        turn_busy: false,
        last_stop: None,
        turn_error: None,
        setup_failed: None,
    };
    let shared = Shared {
        process: process.clone(),
        options: opts.clone(),
        state: Mutex::new(state),
        next_id: AtomicI64::new(if adopted { ADOPTED_FIRST_ID } else { 1 }),
        ask_prefix: format!("acp-{tag}-"),
        adopted,
    };
    let handle = AcpHandle { shared: Arc::new(shared) };
    let rx =
        supervise(process, streams, handle.clone(), AcpDecoder::new(opts.profile), supervision);
    if adopted {
        return (handle, rx);
    }
    let setup = handle.clone();
    tokio::spawn(async move { setup.initialize().await });
    (handle, rx)
}

impl AcpHandle {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep going with it.
        self.shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The agent's session id, once `session/new` answered.
    pub fn session_id(&self) -> Option<String> {
        self.state().session_id.clone()
    }

    /// The id events carry for the agent's request `id`.
    fn ask_key(&self, id: &RequestId) -> String {
        format!("{}{id}", self.shared.ask_prefix)
    }

    fn label(&self) -> &'static str {
        self.shared.options.profile.label
    }

    async fn write_value(&self, value: &Value) -> Result<(), AgentError> {
        let line =
            serde_json::to_string(value).map_err(|e| AgentError::InvalidInput(e.to_string()))?;
        self.shared.process.write_line(&line).await
    }

    async fn request(&self, method: &str, params: Value, sent: Sent) -> Result<i64, AgentError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        self.state().sent.insert(id, sent);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.write_value(&message).await {
            self.state().sent.remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), AgentError> {
        self.write_value(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    async fn reply(&self, id: &RequestId, result: Value) -> Result<(), AgentError> {
        self.write_value(&json!({"jsonrpc": "2.0", "id": id.to_json(), "result": result})).await
    }

    async fn reply_error(
        &self,
        id: &RequestId,
        code: i64,
        message: &str,
    ) -> Result<(), AgentError> {
        let error = json!({"code": code, "message": message});
        self.write_value(&json!({"jsonrpc": "2.0", "id": id.to_json(), "error": error})).await
    }

    /// Sends `initialize` and watches the setup's deadline: an agent that does not answer
    /// `initialize` (or then `session/new`) in time is stopped, and the run says which timed out.
    async fn initialize(&self) {
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false},
            "clientInfo": {"name": "nucleic", "title": "Nucleic", "version": env!("CARGO_PKG_VERSION")},
        });
        if let Err(e) = self.request("initialize", params, Sent::Initialize).await {
            self.setup_failed(format!("cannot send initialize to {}: {e}", self.label())).await;
            return;
        }
        let deadline = self.shared.options.setup_deadline;
        for stage in [Stage::Initializing, Stage::Creating] {
            tokio::time::sleep(deadline).await;
            let what = match stage {
                Stage::Initializing => "initialize",
                _ => "session/new",
            };
            let late = self.state().stage == stage;
            if late {
                let why = format!(
                    "{} did not answer {what} within {} s; Nucleic stopped it",
                    self.label(),
                    deadline.as_secs_f32()
                );
                self.setup_failed(why).await;
                self.shared.process.stop(STOP_GRACE);
                return;
            }
            if self.state().stage != Stage::Creating {
                return;
            }
        }
    }

    /// The session cannot work: remember why and close the agent's input so it exits.
    async fn setup_failed(&self, why: String) {
        {
            let mut st = self.state();
            st.stage = Stage::Failed;
            st.setup_failed.get_or_insert(why);
        }
        self.shared.process.close_input().await;
    }

    /// Sends the next queued prompt if the session is ready and idle (an error: its text is lost).
    async fn pump_queue(&self) -> Result<(), AgentError> {
        let next = {
            let mut guard = self.state();
            let st = &mut *guard;
            match (&st.session_id, st.stage, st.turn_busy) {
                (Some(session), Stage::Ready, false) => {
                    let text = st.queued.pop_front();
                    if text.is_some() {
                        st.turn_busy = true;
                    }
                    text.map(|t| (session.clone(), t))
                }
                _ => None,
            }
        };
        let Some((session, text)) = next else { return Ok(()) };
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        if let Err(e) = self.request("session/prompt", params, Sent::Prompt).await {
            self.state().turn_busy = false;
            return Err(e);
        }
        Ok(())
    }

    /// The option of `ask` for `decision`, by kind (option ids differ between agents).
    fn option_for(ask: &Ask, decision: &Decision) -> Result<Option<String>, AgentError> {
        let pick = |kinds: &[&str]| {
            kinds
                .iter()
                .find_map(|k| ask.options.iter().find(|o| o.kind == *k))
                .map(|o| o.option_id.clone())
        };
        match decision {
            Decision::Allow => pick(&["allow_once", "allow_always"]).map(Some).ok_or_else(|| {
                AgentError::InvalidInput("the agent offered no option that allows the call".into())
            }),
            Decision::AllowAlways { .. } => {
                pick(&["allow_always", "allow_once"]).map(Some).ok_or_else(|| {
                    AgentError::InvalidInput(
                        "the agent offered no option that allows the call".into(),
                    )
                })
            }
            // No reject option: the request is answered `cancelled`, which refuses it too.
            Decision::Deny { .. } | Decision::DenyAndStop { .. } => {
                Ok(pick(&["reject_once", "reject_always"]))
            }
            Decision::AllowEdited { .. } => Err(AgentError::Unsupported("edited tool input")),
            Decision::ApprovePlan { .. } => Err(AgentError::Unsupported("plan approvals")),
            Decision::Answer { .. } => Err(AgentError::Unsupported("answers to questions")),
        }
    }

    /// Sends `session/cancel` and answers every pending permission request `cancelled`.
    async fn cancel_turn(&self) -> Result<(), AgentError> {
        let (session, asks) = {
            let mut st = self.state();
            let asks: Vec<Ask> = st.asks.drain().map(|(_, a)| a).collect();
            (st.session_id.clone(), asks)
        };
        let Some(session) = session else {
            return Err(AgentError::InvalidInput("no session is running".into()));
        };
        self.notify("session/cancel", json!({"sessionId": session})).await?;
        for ask in asks {
            self.reply(&ask.id, json!({"outcome": {"outcome": "cancelled"}})).await?;
        }
        Ok(())
    }
}

impl AgentControl for AcpHandle {
    fn capabilities(&self) -> Capabilities {
        ACP_CAPABILITIES
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
        let ask = self
            .state()
            .asks
            .get(request_id)
            .cloned()
            .ok_or_else(|| AgentError::UnknownRequest(request_id.to_owned()))?;
        let outcome = match Self::option_for(&ask, decision)? {
            Some(option) => json!({"outcome": "selected", "optionId": option}),
            None => json!({"outcome": "cancelled"}),
        };
        self.reply(&ask.id, json!({"outcome": outcome})).await?;
        self.state().asks.remove(request_id);
        if matches!(decision, Decision::DenyAndStop { .. }) {
            self.cancel_turn().await?;
        }
        Ok(())
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        if !self.state().turn_busy {
            return Err(AgentError::InvalidInput("no turn is running".into()));
        }
        self.cancel_turn().await
    }

    fn process(&self) -> Option<&AgentProcess> {
        Some(&self.shared.process)
    }
}
