//! One task per attached session. Its events are read through a connection of its own from the
//! first (`nucleic-client`'s cursor: no gap, no duplicate) and, from the seq asked for, sent as
//! `session/update`, each with its seq in `_meta.nucleic.seq`. Once caught up, its pending approvals are asked as
//! `session/request_permission` and withdrawn (`$/cancel_request`) when any client answers
//! first; a prompt is answered when its turn ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Error, ErrorCode, RequestCancellationHandle};
use nucleic_protocol::{ApprovalRequested, Event, EventKind, HostMessage, RunOutcome, Verbosity};
use serde_json::json;

use crate::agent::{Shared, answer, host_error, refused};
use crate::translate::{Translator, meta, stop_reason};

/// A prompt waiting for its turn to end.
pub(crate) struct Turn {
    responder: Responder<acp::PromptResponse>,
    text: String,
    /// The session's last seq before the prompt was sent: its turn comes after.
    after: u64,
    started: bool,
    cancelled: bool,
}

impl Turn {
    pub(crate) fn new(responder: Responder<acp::PromptResponse>, text: String, after: u64) -> Turn {
        Turn { responder, text, after, started: false, cancelled: false }
    }
}

/// A session this connection follows.
pub(crate) struct Attached {
    pub session_id: String,
    turn: Mutex<Option<Turn>>,
    /// Permission requests out to the client, by Nucleic request id.
    pub(crate) asks: Mutex<HashMap<String, RequestCancellationHandle>>,
}

impl Attached {
    pub(crate) fn new(session_id: &str) -> Arc<Attached> {
        Arc::new(Attached {
            session_id: session_id.to_owned(),
            turn: Mutex::new(None),
            asks: Mutex::new(HashMap::new()),
        })
    }

    /// Takes `turn` as the running one; its responder back (refused) when one runs already.
    pub(crate) fn begin(&self, turn: Turn) -> Option<Responder<acp::PromptResponse>> {
        let Ok(mut running) = self.turn.lock() else { return Some(turn.responder) };
        if running.is_some() {
            return Some(turn.responder);
        }
        *running = Some(turn);
        None
    }

    /// Answers the running turn's prompt with `error`.
    pub(crate) fn fail_turn(&self, error: Error) {
        if let Some(turn) = self.turn.lock().ok().and_then(|mut t| t.take()) {
            answer(turn.responder, Err(error));
        }
    }

    /// Marks this connection's running turn, if any, cancelled.
    pub(crate) fn cancelling(&self) {
        if let Some(turn) = self.turn.lock().ok().as_deref_mut().and_then(Option::as_mut) {
            turn.cancelled = true;
        }
    }

    /// Whether `text` at `seq` is the running prompt arriving in the transcript (it is then
    /// not echoed back to the client that sent it).
    fn own_prompt(&self, seq: u64, text: &str) -> bool {
        let Ok(mut guard) = self.turn.lock() else { return false };
        match guard.as_mut() {
            Some(turn) if !turn.started && seq > turn.after => {
                turn.started = true;
                turn.text == text
            }
            _ => false,
        }
    }

    /// Ends the running turn at `seq` when it is this turn's end.
    fn end_turn(&self, seq: u64, outcome: impl FnOnce(bool) -> Result<acp::PromptResponse, Error>) {
        let Ok(mut guard) = self.turn.lock() else { return };
        let ends = guard.as_ref().is_some_and(|t| t.started || seq > t.after);
        if let Some(turn) = guard.take_if(|_| ends) {
            answer(turn.responder, outcome(turn.cancelled));
        }
    }
}

/// Where a follower starts, and the `session/load` it answers once caught up.
pub(crate) struct Follow {
    /// The first seq whose updates are sent.
    pub from_seq: u64,
    /// The seq to replay before answering `load` (0: nothing to replay).
    pub replay_until: u64,
    pub load: Option<Load>,
}

struct Follower {
    shared: Arc<Shared>,
    attached: Arc<Attached>,
    cx: ConnectionTo<agent_client_protocol::Client>,
    translator: Translator,
    /// Approvals requested and not resolved yet, in order.
    pending: Vec<ApprovalRequested>,
    replay_until: u64,
    /// Updates of events before this seq are not sent (their events still build the
    /// translation's state and the pending approvals).
    send_from: u64,
    /// The `session/load` to answer once caught up (in a mutex: a responder is not `Sync`).
    load: Mutex<Option<Load>>,
}

type Load = (Responder<acp::LoadSessionResponse>, acp::LoadSessionResponse);

/// Follows the session until its connection to the host or stdout is lost.
pub(crate) async fn follow(
    shared: Arc<Shared>,
    attached: Arc<Attached>,
    cx: ConnectionTo<agent_client_protocol::Client>,
    plan: Follow,
) {
    let id = attached.session_id.clone();
    let mut follower = Follower {
        shared: shared.clone(),
        attached: attached.clone(),
        cx,
        translator: Translator::default(),
        pending: Vec::new(),
        replay_until: plan.replay_until,
        send_from: plan.from_seq,
        load: Mutex::new(plan.load),
    };
    let why = follower.run().await;
    if let Some((responder, _)) = follower.take_load() {
        answer(responder, Err(why.clone()));
    }
    attached.fail_turn(why);
    if let Ok(mut sessions) = shared.sessions.lock() {
        sessions.remove(&id);
    }
}

impl Follower {
    fn take_load(&self) -> Option<Load> {
        self.load.lock().ok().and_then(|mut l| l.take())
    }

    fn loading(&self) -> bool {
        self.load.lock().is_ok_and(|l| l.is_some())
    }

    /// Reads the session from its start and forwards its events from `send_from`; why it
    /// stopped.
    async fn run(&mut self) -> Error {
        let id = self.attached.session_id.clone();
        let mut events = match self.shared.connect("acp-follow").await {
            Ok(client) => client,
            Err(e) => return host_error(e),
        };
        if let Err(e) = events.subscribe(&id, 1, Verbosity::Full).await {
            return host_error(e);
        }
        if self.replay_until == 0 {
            self.caught_up();
        }
        loop {
            let batch = match events.next().await {
                Ok(HostMessage::Event { event }) => vec![event],
                Ok(HostMessage::Events { events, .. }) => events,
                Ok(_) => continue,
                Err(e) => return host_error(e),
            };
            for event in batch.into_iter().filter(|e| e.session_id == id) {
                if !self.event(&event).await {
                    return refused(ErrorCode::INTERNAL_ERROR, "stdout is closed");
                }
            }
        }
    }

    /// Handles one event; false when stdout is gone.
    async fn event(&mut self, event: &Event) -> bool {
        let seq = event.seq;
        let mut updates = self.translator.updates(&event.kind);
        match &event.kind {
            EventKind::UserText(t) if self.attached.own_prompt(seq, &t.text) => updates.clear(),
            _ if seq < self.send_from => updates.clear(),
            _ => {}
        }
        for update in updates {
            if !self.send(seq, update).await {
                return false;
            }
        }
        match &event.kind {
            EventKind::ApprovalRequested(a) => {
                self.pending.push(a.clone());
                if !self.loading() {
                    self.ask(a);
                }
            }
            EventKind::ApprovalResolved(r) => {
                self.pending.retain(|a| a.request_id != r.request_id);
                let asked =
                    self.attached.asks.lock().ok().and_then(|mut a| a.remove(&r.request_id));
                if let Some(asked) = asked
                    && let Err(e) = asked.cancel()
                {
                    eprintln!("nucleic acp: withdrawing a permission request: {e}");
                }
            }
            EventKind::TurnCompleted(turn) => {
                self.attached.end_turn(seq, |cancelled| {
                    Ok(acp::PromptResponse::new(stop_reason(turn, cancelled)))
                });
            }
            EventKind::RunFinished(run) => {
                self.attached.end_turn(seq, |cancelled| match run.outcome {
                    RunOutcome::Interrupted => {
                        Ok(acp::PromptResponse::new(acp::StopReason::Cancelled))
                    }
                    RunOutcome::Completed | RunOutcome::Stopped if cancelled => {
                        Ok(acp::PromptResponse::new(acp::StopReason::Cancelled))
                    }
                    RunOutcome::Completed | RunOutcome::Stopped => {
                        Ok(acp::PromptResponse::new(acp::StopReason::EndTurn))
                    }
                    RunOutcome::ApiError
                    | RunOutcome::LimitReached
                    | RunOutcome::AgentError
                    | RunOutcome::Crashed
                    | RunOutcome::SpawnFailed => Err(refused(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "the agent ended ({:?}): {}",
                            run.outcome,
                            run.message.as_deref().unwrap_or("no message")
                        ),
                    )),
                })
            }
            _ => {}
        }
        if self.loading() && seq >= self.replay_until {
            self.caught_up();
        }
        true
    }

    /// The replay is over: `session/load` is answered and what is still pending is asked.
    fn caught_up(&mut self) {
        if let Some((responder, response)) = self.take_load() {
            answer(responder, Ok(response));
        }
        for approval in self.pending.clone() {
            self.ask(&approval);
        }
    }

    async fn send(&self, seq: u64, update: acp::SessionUpdate) -> bool {
        let note =
            acp::SessionNotification::new(self.attached.session_id.clone(), update).meta(meta(seq));
        let Ok(params) = serde_json::to_value(&note) else { return true };
        let line = json!({"jsonrpc": "2.0", "method": "session/update", "params": params});
        self.shared.out.send(line.to_string()).await
    }

    /// Asks the client about `approval` (a tool call, a plan or questions).
    fn ask(&self, approval: &ApprovalRequested) {
        crate::ask::ask(&self.shared, &self.attached, &self.cx, approval);
    }
}
