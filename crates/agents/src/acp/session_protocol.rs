//! The ACP protocol logic the supervisor calls: per-line bookkeeping (approval ids, the
//! session's cwd and mode, a failed prompt as a failed turn), acting on JSON-RPC traffic
//! (setup responses, permission requests, file calls, requests we do not serve), and the exit
//! classification.

use nucleic_protocol::{EventKind, RunFinished, RunOutcome, TurnCompleted, Usage};
use serde_json::{Value, json};

use super::{ADOPTED_FIRST_ID, AcpHandle, Ask, Sent, Stage};
use crate::acp::fs;
use crate::acp::{AcpControl, AcpDecoder, DecodedLine, RequestId, RpcError};
use crate::error::AgentError;
use crate::supervisor::{ProcessExit, Protocol};

crate::supervisor::line_decoder!(AcpDecoder, AcpControl);

impl Protocol for AcpHandle {
    type Decoder = AcpDecoder;

    fn on_line(&self, line: &mut DecodedLine) {
        let failed_prompt = match &line.control {
            Some(AcpControl::Response { id: RequestId::Number(n), outcome: Err(e) }) => {
                let sent = self.state().sent.get(n).copied();
                // A re-adopted agent's failed request of the previous host: its prompt (setup
                // requests were answered long before a host could be killed).
                let previous_hosts = self.shared.adopted && sent.is_none() && *n < ADOPTED_FIRST_ID;
                (sent == Some(Sent::Prompt) || previous_hosts).then(|| e.message.clone())
            }
            _ => None,
        };
        if let Some(message) = failed_prompt {
            line.events.push(EventKind::TurnCompleted(TurnCompleted {
                stop_reason: None,
                usage: Usage::default(),
                is_error: true,
                terminal_reason: Some("api_error".into()),
                result: Some(message),
                duration_ms: None,
            }));
        }
        for event in &mut line.events {
            match event {
                EventKind::ApprovalRequested(ask) => {
                    ask.request_id = format!("{}{}", self.shared.ask_prefix, ask.request_id);
                }
                EventKind::SessionStarted(started) => {
                    if self.shared.adopted {
                        self.learn_session(&started.backend_session_id);
                    }
                    started.cwd = self.shared.options.common.cwd.to_string_lossy().into_owned();
                    started.permission_mode =
                        Some(self.shared.options.common.permission_mode.clone());
                }
                _ => {}
            }
        }
    }

    fn on_replayed_control(&self, control: AcpControl) {
        if let AcpControl::PermissionAsked { id, options } = control {
            let key = self.ask_key(&id);
            self.state().asks.insert(key, Ask { id, options });
        }
    }

    async fn on_control(&self, control: AcpControl) -> Result<(), AgentError> {
        match control {
            AcpControl::Response { id, outcome } => self.on_response(&id, outcome).await,
            asked @ AcpControl::PermissionAsked { .. } => {
                self.on_replayed_control(asked);
                Ok(())
            }
            AcpControl::ReadFile { id, path, line, limit } => {
                let root = self.shared.options.common.cwd.clone();
                let empty = self.shared.options.profile.missing_file_as_empty;
                let read = tokio::task::spawn_blocking(move || {
                    fs::read(&root, &path, line, limit, empty).map_err(|e| (e, path))
                })
                .await;
                match read {
                    Ok(Ok(content)) => self.reply(&id, json!({"content": content})).await,
                    Ok(Err((refusal, path))) => {
                        self.refuse(&id, "fs/read_text_file", &path, refusal).await
                    }
                    Err(e) => self.reply_error(&id, -32603, &format!("read failed: {e}")).await,
                }
            }
            AcpControl::WriteFile { id, path, content } => {
                let root = self.shared.options.common.cwd.clone();
                let sandbox = self.shared.options.common.isolation.clone();
                let written = tokio::task::spawn_blocking(move || {
                    fs::write(&root, sandbox.as_ref(), &path, &content).map_err(|e| (e, path))
                })
                .await;
                match written {
                    Ok(Ok(())) => self.reply(&id, json!({})).await,
                    Ok(Err((refusal, path))) => {
                        self.refuse(&id, "fs/write_text_file", &path, refusal).await
                    }
                    Err(e) => self.reply_error(&id, -32603, &format!("write failed: {e}")).await,
                }
            }
            AcpControl::Unsupported { id, method } => {
                // Silence would leave the agent waiting forever.
                self.reply_error(
                    &id,
                    -32601,
                    &format!("Method not found: nucleic does not serve {method}"),
                )
                .await
            }
        }
    }

    async fn finish(&self, exit: ProcessExit<AcpDecoder>) -> RunFinished {
        let unknown_lines = exit.decoder.as_ref().map_or(0, AcpDecoder::unknown_lines);
        let label = self.label();
        let st = self.state();
        let code = exit.end.code;
        let done = |outcome, message: String| RunFinished {
            outcome,
            message: Some(message),
            exit_code: code,
            unknown_lines,
        };
        let how = match (code, exit.end.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended".into(),
        };
        let with_stderr = |base: String| match &exit.last_stderr {
            Some(line) => format!("{base}: {line}"),
            None => base,
        };
        if let Some(why) = &st.setup_failed {
            return done(RunOutcome::AgentError, why.clone());
        }
        if exit.stop_requested {
            return done(RunOutcome::Stopped, "stopped on request".into());
        }
        if st.turn_busy {
            return done(RunOutcome::Crashed, with_stderr(format!("{label} {how} during a turn")));
        }
        if let Some(error) = &st.turn_error {
            return done(RunOutcome::ApiError, format!("{label}'s last turn failed: {error}"));
        }
        if code != Some(0) && st.stage != Stage::Ready {
            return done(
                RunOutcome::Crashed,
                with_stderr(format!("{label} {how} before its session was ready")),
            );
        }
        match st.last_stop.as_deref() {
            Some("cancelled") => {
                done(RunOutcome::Interrupted, format!("{label} {how}; its last turn was cancelled"))
            }
            Some("max_tokens" | "max_turn_requests") => {
                done(RunOutcome::LimitReached, format!("{label} {how}; its last turn hit a limit"))
            }
            _ if code == Some(0) || code.is_none() && exit.end.signal.is_none() => {
                done(RunOutcome::Completed, format!("{label} {how}"))
            }
            // Its input closed, it went on until signalled or failed: not a clean exit.
            _ => done(RunOutcome::Crashed, with_stderr(format!("{label} {how}"))),
        }
    }
}

impl AcpHandle {
    /// A re-adopted agent's session, seen in its replayed output: prompts go to it from now.
    fn learn_session(&self, session: &str) {
        let mut st = self.state();
        if st.session_id.is_none() {
            st.session_id = Some(session.to_owned());
            st.stage = Stage::Ready;
        }
    }

    /// Answers a refused file call with its JSON-RPC error, and reports it (an `error` event).
    async fn refuse(
        &self,
        id: &RequestId,
        method: &str,
        path: &str,
        refusal: fs::FsRefusal,
    ) -> Result<(), AgentError> {
        self.reply_error(id, refusal.code, &refusal.message).await?;
        Err(AgentError::Refused(format!("{method} {path} refused: {refusal}")))
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
        let label = self.label();
        match (sent, outcome) {
            (Some(Sent::Initialize), Ok(_)) => {
                self.state().stage = Stage::Creating;
                let cwd = self.shared.options.common.cwd.to_string_lossy().into_owned();
                let params = json!({"cwd": cwd, "mcpServers": []});
                if let Err(e) = self.request("session/new", params, Sent::NewSession).await {
                    self.setup_failed(format!("cannot send session/new to {label}: {e}")).await;
                }
            }
            (Some(Sent::NewSession), Ok(result)) => {
                let Some(session) = result.get("sessionId").and_then(Value::as_str) else {
                    self.setup_failed(format!("{label} started no session")).await;
                    return Ok(());
                };
                self.state().session_id = Some(session.to_owned());
                let mode = self.shared.options.agent_mode()?;
                let current = result.pointer("/modes/currentModeId").and_then(Value::as_str);
                if current.is_some_and(|c| c != mode) {
                    let params = json!({"sessionId": session, "modeId": mode});
                    self.request("session/set_mode", params, Sent::SetMode).await?;
                }
                self.state().stage = Stage::Ready;
                self.pump_queue().await?;
            }
            (Some(Sent::Prompt), result) => {
                {
                    let mut st = self.state();
                    st.turn_busy = false;
                    st.asks.clear();
                    match result {
                        Ok(r) => {
                            st.last_stop =
                                r.get("stopReason").and_then(Value::as_str).map(str::to_owned);
                            st.turn_error = None;
                        }
                        Err(e) => st.turn_error = Some(e.message),
                    }
                }
                self.pump_queue().await?;
            }
            (Some(Sent::Initialize), Err(e)) => {
                self.setup_failed(format!("{label} refused initialize: {}", e.message)).await;
            }
            (Some(Sent::NewSession), Err(e)) => {
                self.setup_failed(format!("{label} refused session/new: {}", e.message)).await;
            }
            // The mode could not be set: the agent stays in its default (asking) mode.
            (Some(Sent::SetMode), _) | (None, _) => {}
        }
        Ok(())
    }
}
