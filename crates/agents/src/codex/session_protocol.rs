//! The `codex app-server` protocol logic the supervisor calls: progress and approval-id
//! bookkeeping per line, acting on JSON-RPC traffic (responses to our requests, server requests
//! we do not serve, turn starts and ends), the stall test, and the exit classification.

use std::time::{Duration, Instant};

use nucleic_protocol::{EventKind, RunFinished};
use serde_json::{Value, json};

use super::{CodexHandle, Sent};
use crate::codex::exit::{CodexExit, classify_codex, give_up};
use crate::codex::{AppServerDecoder, ControlIn, DecodedLine, RequestId, RpcError};
use crate::error::AgentError;
use crate::supervisor::{ProcessExit, Protocol};

crate::supervisor::line_decoder!(AppServerDecoder, ControlIn);

impl Protocol for CodexHandle {
    type Decoder = AppServerDecoder;

    fn on_line(&self, line: &mut DecodedLine) {
        self.note_progress(line);
        self.tag_asks(line);
    }

    /// The bookkeeping of control traffic (also for lines acted on live, in `on_control`).
    fn on_replayed_control(&self, control: ControlIn) {
        let mut st = self.state();
        match control {
            ControlIn::ApprovalAsked { request_id, .. } => {
                let key = self.ask_key(&request_id.to_string());
                st.asks.insert(key, request_id);
            }
            ControlIn::RequestResolved { request_id } => {
                let key = self.ask_key(&request_id.to_string());
                st.asks.remove(&key);
            }
            ControlIn::TurnStarted { turn_id, .. } => {
                st.turn_id = Some(turn_id);
                st.turn_open = true;
                st.turn_busy = true;
            }
            ControlIn::TurnEnded { status } => {
                st.asks.clear();
                st.turn_id = None;
                st.turn_open = false;
                st.turn_busy = false;
                st.running_tools.clear();
                st.last_turn = Some(status);
            }
            // Answered by the previous host (or responses to its requests).
            ControlIn::Unsupported { .. } | ControlIn::Response { .. } => {}
        }
    }

    async fn on_control(&self, control: ControlIn) -> Result<(), AgentError> {
        match control {
            ControlIn::Unsupported { request_id, method } => {
                // Silence would leave codex waiting forever; an error makes it fail the call closed.
                let reply = json!({
                    "id": request_id.to_json(),
                    "error": {"code": -32601, "message": format!("nucleic does not serve {method}")},
                });
                self.write_value(&reply).await?;
            }
            ControlIn::Response { id, outcome } => self.on_response(&id, outcome).await?,
            ended @ ControlIn::TurnEnded { .. } => {
                self.on_replayed_control(ended);
                self.pump_queue().await?;
            }
            bookkeeping @ (ControlIn::ApprovalAsked { .. }
            | ControlIn::RequestResolved { .. }
            | ControlIn::TurnStarted { .. }) => self.on_replayed_control(bookkeeping),
        }
        Ok(())
    }

    /// A turn that shows no progress for `limit` while nobody is deciding an approval and no
    /// tool is running: codex retries an unreachable provider forever. The run then finishes as
    /// `apiError` with the same text.
    fn stalled(&self, limit: Duration) -> Option<String> {
        let mut st = self.state();
        let stalled = st.turn_busy
            && st.asks.is_empty()
            && st.running_tools.is_empty()
            && st.last_progress.is_some_and(|t| t.elapsed() >= limit);
        stalled.then(|| give_up(&mut st.gave_up, "codex", " during a turn", limit))
    }

    async fn finish(&self, exit: ProcessExit<AppServerDecoder>) -> RunFinished {
        self.shared.leftovers.clean_after_exit().await;
        let facts = {
            let mut st = self.state();
            st.asks.clear();
            CodexExit {
                code: exit.end.code,
                signal: exit.end.signal,
                last_turn: st.last_turn.clone(),
                turn_open: st.turn_open,
                setup_failed: st.setup_failed.clone(),
                stop_requested: exit.stop_requested,
                gave_up: st.gave_up.clone(),
                turn_error: st.turn_error.clone(),
                last_stderr: exit.last_stderr,
            }
        };
        classify_codex(&facts)
    }
}

impl CodexHandle {
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
                    // Known here first when the output is replayed for a re-adopted agent.
                    let mut st = self.state();
                    if st.thread_id.is_none() {
                        st.thread_id = Some(started.backend_session_id.clone());
                    }
                }
                _ => {}
            }
        }
    }

    async fn on_response(
        &self,
        id: &RequestId,
        outcome: Result<Value, RpcError>,
    ) -> Result<(), AgentError> {
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
                        self.pump_queue().await?;
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
                self.pump_queue().await?;
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
        Ok(())
    }
}
