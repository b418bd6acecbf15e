//! The session controller: the one task that writes a session's events. Agent outputs and client
//! commands both pass through it, so `seq` order, "written before told", status and
//! first-responder-wins all follow from there being a single writer.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nucleic_agents::supervisor::exit_origin;
use nucleic_agents::{AgentControl, AgentError, AgentOutput, Capabilities};
use nucleic_protocol::{
    ApprovalRequested, Backend, Decision, ErrorCode, ErrorEvent, EventKind, InterruptRequested,
    RunFinished, RunOutcome, SessionCreated, SessionStatus, StatusChanged, TextBlock,
};
use tokio::sync::{broadcast, mpsc, watch};

use crate::approvals::{ApprovalCoordinator, native_request_id};
use crate::batch::EventBatch;
use crate::error::CoreError;
use crate::gate::{ApprovalPolicy, Verdict};
use crate::handle::{Command, Reply, SessionHandle, SessionState};
use crate::sequencer::{Draft, Sequencer};
use crate::status::next_status;
use idle::Transcript;

mod decisions;
mod host_asks;
mod idle;
#[cfg(test)]
mod idle_tests;
mod plans;

/// Most events folded into one transcript write.
const MAX_BATCH: usize = 1024;

/// Batches the live bus holds for slow subscribers before they must catch up from disk.
const BUS_CAPACITY: usize = 1024;

/// Seconds the writer keeps retrying held-back events after the agent exited.
const UNWRITTEN_RETRIES: usize = 60;

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub session_id: String,
    pub backend: Backend,
    pub transcript: PathBuf,
    /// Pending approvals are denied after this long (never, when `None`).
    pub approval_timeout: Option<Duration>,
    /// Written as the first event of a new transcript.
    pub created: Option<SessionCreated>,
    /// Keep serving commands (e.g. recording host events) after the agent exited, until every
    /// handle is dropped. The host keeps its sessions open; `nucleic run` does not.
    pub keep_open: bool,
    /// Judges every approval request before a person sees it (risk, and allow/deny without a
    /// person); `None`: every request goes to a person, with no risk.
    pub policy: Option<Arc<dyn ApprovalPolicy>>,
}

/// What the writer must know of an agent run by a keeper (`nucleic_agents::keeper`).
#[derive(Debug, Clone, Default)]
pub struct KeptRun {
    /// The keeper's run id: the run's end is written with its exit origin, so a later host
    /// knows nothing of the run is left to replay.
    pub run: String,
    /// Set for an agent re-adopted from a previous host.
    pub resumed: Option<Resumed>,
}

/// A re-adopted agent's session as the previous host left it.
#[derive(Debug, Clone)]
pub struct Resumed {
    pub status: SessionStatus,
    /// Approvals the agent still waits on: asked again under new ids (see
    /// [`crate::approvals::reasked_id`]); the old ids are answered `cancelled`.
    pub pending: Vec<ApprovalRequested>,
}

/// Starts sessions; the controller itself lives in its task.
#[derive(Debug)]
pub struct SessionController;

impl SessionController {
    /// Becomes the transcript's writer and starts the writer task for an agent that is already
    /// running. Refused ([`CoreError::WriterBusy`]) while another writer has the transcript.
    pub fn start<A: AgentControl>(
        config: SessionConfig,
        agent: A,
        outputs: mpsc::Receiver<AgentOutput>,
    ) -> Result<SessionHandle, CoreError> {
        let sequencer = Sequencer::open(&config.session_id, config.backend, &config.transcript)?;
        Ok(SessionController::start_with(sequencer, config, agent, outputs))
    }

    /// Starts the writer task on a transcript already taken (so a refusal comes before the
    /// agent is spawned). `sequencer` must have been opened for `config`'s session.
    pub fn start_with<A: AgentControl>(
        sequencer: Sequencer,
        config: SessionConfig,
        agent: A,
        outputs: mpsc::Receiver<AgentOutput>,
    ) -> SessionHandle {
        SessionController::start_kept(sequencer, config, agent, outputs, None)
    }

    /// [`SessionController::start_with`] for an agent run by a keeper: a fresh one, or one a
    /// previous host left running (its pending approvals are asked again first).
    pub fn start_kept<A: AgentControl>(
        sequencer: Sequencer,
        config: SessionConfig,
        agent: A,
        outputs: mpsc::Receiver<AgentOutput>,
        kept: Option<KeptRun>,
    ) -> SessionHandle {
        let last_seq = sequencer.last_seq();
        let resumed = kept.as_ref().and_then(|k| k.resumed.clone());
        let status = resumed.as_ref().map_or(SessionStatus::Idle, |r| r.status);
        let (commands_tx, commands) = mpsc::channel(64);
        let (bus, _) = broadcast::channel(BUS_CAPACITY);
        let (buses, bus_rx) = watch::channel(Some(bus.downgrade()));
        let (state_tx, state) = watch::channel(SessionState {
            status,
            last_seq,
            pending_approvals: 0,
            finished: None,
            storage_error: None,
            released: false,
            releases: 0,
        });
        let handle = SessionHandle {
            session_id: config.session_id.clone(),
            commands: commands_tx,
            bus: bus_rx,
            state,
            transcript: config.transcript.clone(),
            index: sequencer.index(),
        };
        let writer = Writer {
            capabilities: agent.capabilities(),
            agent,
            approvals: ApprovalCoordinator::new(config.approval_timeout),
            config,
            transcript: Transcript::new(sequencer),
            bus: Some(bus),
            buses,
            held: Vec::new(),
            idle: idle::IdleRelease::default(),
            state: state_tx,
            status,
            user_turns: 0,
            exit_origin: kept.map(|k| exit_origin(&k.run)),
            settled: std::collections::HashSet::new(),
            host_asks: host_asks::HostAsks::default(),
        };
        let mut writer = writer;
        if last_seq == 0
            && let Some(created) = writer.config.created.clone()
        {
            writer.append(vec![Draft::host(EventKind::SessionCreated(created))]);
        }
        if let Some(resumed) = resumed {
            writer.ask_again(resumed.pending, last_seq + 1);
        }
        tokio::spawn(writer.run(outputs, commands));
        handle
    }
}

struct Writer<A> {
    config: SessionConfig,
    agent: A,
    capabilities: Capabilities,
    approvals: ApprovalCoordinator,
    /// Numbers and writes events; holds back what a failed write (e.g. disk full) could not
    /// write, retried before anything newer. Let go while the session is idle (`idle.rs`).
    transcript: Transcript,
    /// The live bus (`None` while the transcript is let go: its buffer goes too).
    bus: Option<broadcast::Sender<EventBatch>>,
    /// The current bus, for subscriptions that outlive one (see `Subscription`).
    buses: watch::Sender<Option<broadcast::WeakSender<EventBatch>>>,
    /// Events a transcript that could not be reopened kept from being numbered (retried first).
    held: Vec<Draft>,
    /// When an idle writer lets its transcript go.
    idle: idle::IdleRelease,
    state: watch::Sender<SessionState>,
    status: SessionStatus,
    user_turns: u64,
    /// The origin the run's end is written with (agents run by a keeper).
    exit_origin: Option<String>,
    /// Requests the policy answered: recorded with their answer, they move no status.
    settled: std::collections::HashSet<String>,
    /// The host's own questions still open.
    host_asks: host_asks::HostAsks,
}

impl<A: AgentControl> Writer<A> {
    async fn run(
        mut self,
        mut outputs: mpsc::Receiver<AgentOutput>,
        mut commands: mpsc::Receiver<Command>,
    ) {
        let mut commands_open = true;
        let mut closed_by = None;
        loop {
            let deadline = self.approvals.next_deadline();
            let release = self.release_deadline();
            tokio::select! {
                output = outputs.recv() => {
                    let Some(output) = output else {
                        self.finish(RunFinished::new(RunOutcome::Crashed, Some("the agent adapter stopped without reporting an exit".into()), None));
                        break;
                    };
                    if self.on_output(output, &mut outputs).await {
                        if !self.config.keep_open {
                            break;
                        }
                        closed_by = self.serve_after_exit(&mut commands).await;
                        break;
                    }
                }
                command = commands.recv(), if commands_open => match command {
                    Some(c) => self.on_command(c).await,
                    None => commands_open = false,
                },
                () = sleep_until(deadline) => self.expire_approvals().await,
                () = sleep_until(release) => self.release_transcript(),
            }
        }
        // Events held back by a full disk: keep trying for a while before the writer goes.
        for _ in 0..UNWRITTEN_RETRIES {
            if self.unwritten() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.append(Vec::new());
        }
        if let Some(sequencer) = self.transcript.open_mut() {
            let _ = sequencer.sync();
        }
        // The transcript is released before `close` returns: the next writer can take it.
        drop(self);
        if let Some(reply) = closed_by {
            let _ = reply.send(Ok(()));
        }
    }

    /// After the agent exited: record host events, refuse agent actions, until all handles go
    /// or one closes the writer (whose reply is returned, to be sent once the writer is gone).
    async fn serve_after_exit(
        &mut self,
        commands: &mut mpsc::Receiver<Command>,
    ) -> Option<Reply<()>> {
        while let Some(command) = commands.recv().await {
            match command {
                Command::Record { kind, reply } => {
                    self.append(vec![Draft::host(*kind)]);
                    let _ = reply.send(Ok(()));
                }
                Command::AskHost { reply, .. } => {
                    let _ = reply.send(Err(CoreError::AgentGone));
                }
                Command::UserText { reply, .. }
                | Command::Interrupt { reply, .. }
                | Command::SetModel { reply, .. }
                | Command::SetPermissionMode { reply, .. } => {
                    let _ = reply.send(Err(CoreError::AgentGone));
                }
                Command::Decide { request_id, reply, .. } => {
                    // Every request was voided when the agent exited: say by whom.
                    let error = match self.approvals.check(&request_id) {
                        Err(e) => e,
                        Ok(_) => CoreError::AgentGone,
                    };
                    let _ = reply.send(Err(error));
                }
                Command::CloseInput { reply }
                | Command::Stop { reply, .. }
                | Command::ReleaseWhenIdle { reply, .. } => {
                    let _ = reply.send(Ok(()));
                }
                Command::Close { reply } => return Some(reply),
            }
        }
        None
    }

    /// Handles one output and whatever else is already queued; true once the agent exited.
    async fn on_output(
        &mut self,
        first: AgentOutput,
        outputs: &mut mpsc::Receiver<AgentOutput>,
    ) -> bool {
        let mut batch = Vec::new();
        let mut next = Some(first);
        while let Some(output) = next.take() {
            match output {
                AgentOutput::Events(events) => {
                    batch.extend(events.into_iter().map(|e| Draft {
                        native_type: e.native_type,
                        kind: e.kind,
                        at: None,
                        origin: e.origin,
                    }));
                }
                AgentOutput::Exited(finished) => {
                    self.append_judged(batch).await;
                    self.finish(finished);
                    return true;
                }
            }
            if batch.len() < MAX_BATCH {
                next = outputs.try_recv().ok();
            }
        }
        self.append_judged(batch).await;
        false
    }

    /// Appends agent events after the policy judged their approval requests: each gets its
    /// risk; one the policy allows or denies is answered at once and recorded with its answer
    /// (`by` = what decided); a pre-check (Claude's PreToolUse hook) the policy leaves to a
    /// person is handed to the agent's own prompt, whose request then comes as a normal one —
    /// the pre-check itself is not recorded.
    async fn append_judged(&mut self, batch: Vec<Draft>) {
        let mut ready = Vec::with_capacity(batch.len());
        for mut draft in batch {
            let EventKind::ApprovalRequested(request) = &mut draft.kind else {
                ready.push(draft);
                continue;
            };
            let id = request.request_id.clone();
            let precheck = self.agent.is_precheck(native_request_id(&id));
            if let Some(refusal) = plans::refusal(request) {
                self.answer_for_host(draft, refusal, &mut ready).await;
                continue;
            }
            let judgement = self.config.policy.as_ref().map(|p| p.judge(request));
            let verdict = judgement.as_ref().map_or(Verdict::Ask, |j| j.verdict);
            if let Some(j) = &judgement {
                request.risk = Some(j.risk);
                request.risk_reasons.clone_from(&j.risk_reasons);
            }
            let decision = match (verdict, judgement) {
                (Verdict::Ask, _) | (_, None) if precheck => {
                    if let Err(e) = self.agent.defer(native_request_id(&id)).await {
                        let message =
                            format!("handing a tool call to the agent's prompt failed: {e}");
                        ready.push(Draft::host(host_error(ErrorCode::AgentExited, message)));
                    }
                    continue;
                }
                (Verdict::Ask, _) | (_, None) => {
                    ready.push(draft);
                    continue;
                }
                (Verdict::Allow, Some(j)) => (Decision::Allow, j.by),
                (Verdict::Deny, Some(j)) => (Decision::Deny { message: j.reason }, j.by),
            };
            self.answer_for_host(draft, decision, &mut ready).await;
        }
        self.append(ready);
    }

    /// Answers the request of `draft` without a person (the policy's or the host's own
    /// answer) and queues it with its resolution; a failed answer leaves it to a person.
    async fn answer_for_host(
        &mut self,
        draft: Draft,
        (decision, by): (Decision, String),
        ready: &mut Vec<Draft>,
    ) {
        let EventKind::ApprovalRequested(request) = &draft.kind else {
            ready.push(draft);
            return;
        };
        let id = request.request_id.clone();
        if matches!(decision, Decision::Allow)
            && let Some(policy) = &self.config.policy
        {
            policy.allowing(request);
        }
        match self.agent.respond(native_request_id(&id), &decision).await {
            Ok(()) => {
                self.settled.insert(id.clone());
                ready.push(draft);
                let resolution = decision.resolution(&id, &by);
                ready.push(Draft::host(EventKind::ApprovalResolved(resolution)));
            }
            Err(e) => {
                // Left to a person (the request stays pending), with why.
                ready.push(draft);
                let message = format!("answering for the policy ({by}) failed: {e}");
                ready.push(Draft::host(host_error(ErrorCode::AgentExited, message)));
            }
        }
    }

    fn finish(&mut self, finished: RunFinished) {
        let mut end = Draft::host(EventKind::RunFinished(finished.clone()));
        end.origin = self.exit_origin.clone();
        self.append(vec![end]);
        let state = SessionState { finished: Some(finished), ..self.state.borrow().clone() };
        let _ = self.state.send(state);
    }

    async fn on_command(&mut self, command: Command) {
        self.idle.touch();
        match command {
            Command::UserText { text, reply } => {
                self.user_turns += 1;
                let kind = EventKind::UserText(TextBlock {
                    is_partial: false,
                    message_id: format!("user-{}", self.user_turns),
                    text: text.clone(),
                });
                self.append(vec![Draft::host(kind)]);
                let result = self.agent.send_user_text(&text).await;
                let _ = reply.send(self.report(result, "sending the prompt failed"));
            }
            Command::Decide { request_id, decision, by, confirmed, reply } => {
                let _ = reply.send(self.decide(&request_id, decision, &by, confirmed).await);
            }
            Command::Interrupt { by, reply } => {
                let result = if self.capabilities.interrupt {
                    let kind = EventKind::InterruptRequested(InterruptRequested { by });
                    self.append(vec![Draft::host(kind)]);
                    let r = self.agent.interrupt().await;
                    self.report(r, "interrupting failed")
                } else {
                    Err(CoreError::Unsupported("this backend cannot interrupt a turn".into()))
                };
                let _ = reply.send(result);
            }
            Command::SetModel { model, reply } => {
                let result = if self.capabilities.set_model {
                    let r = self.agent.set_model(&model).await;
                    self.report(r, "changing the model failed")
                } else {
                    Err(CoreError::Unsupported(
                        "this backend cannot change the model mid-session".into(),
                    ))
                };
                let _ = reply.send(result);
            }
            Command::SetPermissionMode { mode, reply } => {
                let result = if self.capabilities.set_permission_mode {
                    let r = self.agent.set_permission_mode(&mode).await;
                    self.report(r, "changing the permission mode failed")
                } else {
                    Err(CoreError::Unsupported(
                        "this backend cannot change the permission mode mid-session".into(),
                    ))
                };
                let _ = reply.send(result);
            }
            Command::CloseInput { reply } => {
                self.agent.close_input().await;
                let _ = reply.send(Ok(()));
            }
            Command::Record { kind, reply } => {
                self.append(vec![Draft::host(*kind)]);
                let _ = reply.send(Ok(()));
            }
            Command::AskHost { request, deadline, reply } => {
                let _ = reply.send(self.ask_host(*request, deadline));
            }
            Command::Close { reply } => {
                let _ = reply.send(Err(CoreError::Unsupported(
                    "the agent is still running; stop it first".into(),
                )));
            }
            Command::Stop { grace, reason, reply } => {
                if let Some(reason) = reason {
                    self.append(vec![Draft::host(host_error(ErrorCode::Timeout, reason))]);
                }
                self.agent.stop(grace);
                let _ = reply.send(Ok(()));
            }
            Command::ReleaseWhenIdle { after, reply } => {
                self.idle.after = after;
                let _ = reply.send(Ok(()));
            }
        }
    }

    /// Records a failed agent call as an `error` event and turns it into the caller's error.
    fn report(&mut self, result: Result<(), AgentError>, what: &str) -> Result<(), CoreError> {
        result.map_err(|e| {
            let code = match e {
                AgentError::InvalidInput(_) => ErrorCode::InvalidInput,
                _ => ErrorCode::AgentExited,
            };
            self.append(vec![Draft::host(host_error(code, format!("{what}: {e}")))]);
            CoreError::Agent(e)
        })
    }

    /// Applies approvals and status, has the sequencer number and write the events, then tells
    /// subscribers.
    fn append(&mut self, batch: Vec<Draft>) {
        self.idle.touch();
        if batch.is_empty() && self.unwritten() == 0 {
            return;
        }
        let mut drafts = std::mem::take(&mut self.held);
        drafts.reserve(batch.len());
        for draft in batch {
            let void_reason = match &draft.kind {
                EventKind::TurnCompleted(_) => Some("the turn ended before an answer"),
                EventKind::RunFinished(_) => Some("the agent exited before an answer"),
                _ => None,
            };
            if let Some(why) = void_reason {
                for r in self.approvals.cancel_all(why) {
                    self.host_asks.resolved(&r);
                    drafts.push(Draft::host(EventKind::ApprovalResolved(r)));
                }
            }
            let settled = match &draft.kind {
                EventKind::ApprovalRequested(a) => {
                    match self.host_asks.deadline(&a.request_id) {
                        Some(wait) => {
                            let deadline = tokio::time::Instant::now() + wait;
                            self.approvals.open_until(a.clone(), Some(deadline));
                        }
                        None => self.approvals.open(a.clone()),
                    }
                    self.settled.contains(&a.request_id)
                }
                EventKind::ApprovalResolved(r) => {
                    self.host_asks.resolved(r);
                    self.approvals.close(r);
                    self.settled.remove(&r.request_id)
                }
                _ => false,
            };
            // The status follows the agent's approvals: the host's own questions move none.
            let pending = self.approvals.pending_count().saturating_sub(self.host_asks.len());
            let status =
                if settled { self.status } else { next_status(self.status, &draft.kind, pending) };
            drafts.push(draft);
            if status != self.status {
                let change = StatusChanged { status, previous: self.status };
                self.status = status;
                drafts.push(Draft::host(EventKind::StatusChanged(change)));
            }
        }
        if let Err(e) = self.reopen_transcript() {
            // Kept unnumbered, in order, and tried again first by the next append.
            self.held = drafts;
            let mut state = self.state.borrow().clone();
            state.status = self.status;
            state.pending_approvals = self.approvals.pending_count();
            state.storage_error = Some(format!("reopening the transcript failed: {e}"));
            let _ = self.state.send(state);
            return;
        }
        let Some(sequencer) = self.transcript.open_mut() else { return };
        let appended = sequencer.append(drafts);
        let last_seq = sequencer.last_seq();
        if !appended.written.is_empty() {
            // One bus message per written batch, with the JSON lines the transcript got: every
            // subscriber (and every client behind it) shares them instead of copying events or
            // encoding them again. Waking subscribers per event would cost more than everything
            // else the writer does.
            let batch = EventBatch::written(appended.written, sequencer.take_last_lines());
            if let Some(bus) = &self.bus {
                let _ = bus.send(batch);
            }
        }
        let mut state = self.state.borrow().clone();
        state.status = self.status;
        state.last_seq = last_seq;
        state.pending_approvals = self.approvals.pending_count();
        state.storage_error = appended.error.map(|e| e.to_string());
        state.released = false;
        let _ = self.state.send(state);
    }
}

fn host_error(code: ErrorCode, message: String) -> EventKind {
    EventKind::Error(ErrorEvent { code, message, http_status: None })
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
