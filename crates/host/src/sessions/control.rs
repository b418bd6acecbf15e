//! Acting on a session: subscribing, follow-ups (resuming a session whose agent is gone),
//! decisions, interrupts, settings, and host-recorded changes (rename, archive).

use std::path::PathBuf;
use std::time::Duration;

use nucleic_core::{Sequencer, SessionConfig, SessionHandle, Subscription};
use nucleic_protocol::{ApprovalResolved, Decision, EventKind, RunOutcome, SessionUpdated};

use crate::agents::launch::{AgentRequest, agent_options};
use crate::context::Context;
use crate::error::{HostError, blocking};

impl Context {
    /// Every event of a session from `from_seq`: live sessions catch up then follow; others
    /// replay their transcript. A cursor past the end is refused.
    pub async fn subscribe(&self, id: &str, from_seq: u64) -> Result<Subscription, HostError> {
        let row = self.session_row(id).await?;
        let from_seq = from_seq.max(1);
        if from_seq > row.last_seq + 1
            && self.live_handle(id).is_none_or(|h| from_seq > h.state().last_seq + 1)
        {
            return Err(HostError::BadCursor { from_seq, last_seq: row.last_seq });
        }
        Ok(match self.live_handle(id) {
            Some(handle) => handle.subscribe(from_seq)?,
            None => Subscription::replay(PathBuf::from(&row.transcript), from_seq)?,
        })
    }

    /// Sends a follow-up. A session whose agent is gone (finished, or interrupted by a host
    /// restart) is resumed first: a new agent process continues the same conversation
    /// (native resume) in the same worktree, under a new writer on the same transcript.
    /// Concurrent follow-ups to a dormant session resume it once; the others go to the agent
    /// that resume started.
    pub async fn send_input(&self, id: &str, text: &str) -> Result<(), HostError> {
        self.turn_started(id).await;
        if let Some(sent) = send_to_agent(self.live_handle(id), text).await {
            return sent;
        }
        // A reclaimed worktree comes back before the agent resumes in it (recording that takes
        // the writer turn, so before this takes it).
        self.restore_if_reclaimed(id, "host").await?;
        let turn = self.writer_turns.take(id).await?;
        // Another follow-up may have resumed the session while this one waited for its turn.
        if let Some(sent) = send_to_agent(self.live_handle(id), text).await {
            return sent;
        }
        let session = self.resume(id).await?;
        drop(turn);
        Ok(session.send_user_text(text).await?)
    }

    /// Starts a new agent and writer for a session whose agent is gone. The caller holds the
    /// session's writer turn.
    async fn resume(&self, id: &str) -> Result<SessionHandle, HostError> {
        self.resume_from(id, None, false).await
    }

    /// [`Context::resume`] on a fork of `conversation` (an adopted session's first start: the
    /// CLI continues the history in a new conversation and leaves the original as it was).
    pub(crate) async fn resume_forked(
        &self,
        id: &str,
        conversation: &str,
    ) -> Result<SessionHandle, HostError> {
        self.resume_from(id, Some(conversation), true).await
    }

    /// Whether the session's agent was started and then stopped by the host before any prompt
    /// (a session started without one): nothing else may start afresh — a session whose setup
    /// failed never had an agent, and one with turns has a conversation to lose.
    async fn stopped_before_a_prompt(
        &self,
        row: &nucleic_catalog::SessionRow,
    ) -> Result<bool, HostError> {
        let transcript = PathBuf::from(&row.transcript);
        let events = blocking(move || nucleic_store::read_transcript(&transcript, 1)).await?.events;
        let prompted = events.iter().any(|e| matches!(e.kind, EventKind::UserText(_)));
        let stopped = events.iter().any(
            |e| matches!(&e.kind, EventKind::RunFinished(r) if r.outcome == RunOutcome::Stopped),
        );
        Ok(stopped && !prompted)
    }

    /// [`Context::resume`] on `conversation` itself (an in-place adoption's first start: the
    /// CLI goes on in the person's own conversation; the caller holds its lock).
    pub(crate) async fn resume_in_place(
        &self,
        id: &str,
        conversation: &str,
    ) -> Result<SessionHandle, HostError> {
        self.resume_from(id, Some(conversation), false).await
    }

    /// Resumes `conversation` (else the session's own), forked or not; only a resume of the
    /// session's own conversation first catches up with what the terminal added.
    async fn resume_from(
        &self,
        id: &str,
        conversation: Option<&str>,
        fork: bool,
    ) -> Result<SessionHandle, HostError> {
        let row = self.session_row(id).await?;
        if row.read_only {
            return Err(HostError::Invalid(format!("session {id} is read-only (imported)")));
        }
        // A session started without a prompt (`nucleic acp`'s `session/new`) whose agent was
        // stopped before its first turn (a mode switch between read-only and writable stops an
        // idle agent) has no conversation to resume — Claude Code has none yet, Codex a thread
        // with no rollout: its agent starts afresh, losing nothing. (No cost yet is the cheap
        // sign; the transcript decides.)
        let first_start = conversation.is_some();
        let fresh =
            !first_start && row.cost_usd == 0.0 && self.stopped_before_a_prompt(&row).await?;
        let conversation = match conversation.map(str::to_owned).or(row.backend_session_id.clone())
        {
            _ if fresh => None,
            Some(conversation) => Some(conversation),
            None => {
                return Err(HostError::Invalid(format!(
                    "session {id} never started an agent conversation; nothing to resume"
                )));
            }
        };
        let cwd = PathBuf::from(&row.cwd);
        if !cwd.is_dir() {
            return Err(HostError::Invalid(format!(
                "the session's directory {} is gone",
                cwd.display()
            )));
        }
        // Refused once the host is stopping; a shutdown waits for it until it is live.
        let starting = self.gate.enter()?;
        let old = self.live.lock().ok().and_then(|mut live| live.remove(id));
        if let Some(old) = old {
            match old.close().await {
                // Already closed (e.g. by a shutdown): the transcript is free.
                Ok(()) | Err(nucleic_core::CoreError::SessionEnded) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // In place: the conversation's lock again (after a handoff or a restart), before the
        // terminal's turns are brought in and the agent starts.
        self.relock_in_place(&row).await?;
        let request = AgentRequest {
            model: row.model.clone(),
            permission_mode: row.permission_mode.clone(),
            resume: conversation,
            fork,
            session_id: Some(id.to_owned()),
            read_only: crate::policy::session_policy::is_read_only(row.mode.as_deref()),
            sandbox: self.project_sandbox(row.project_id.as_deref()).await,
        };
        let opts = agent_options(&self.config, row.backend, &cwd, &request)?;
        let transcript = PathBuf::from(&row.transcript);
        // Turns the conversation got in the person's terminal since (a handoff) come first.
        if !first_start {
            self.catch_up_outside(&row).await?;
        }
        // The transcript is taken before the agent starts: a refusal leaves no agent behind.
        let sequencer = Sequencer::open(id, row.backend, &transcript)?;
        let rules = self
            .session_rules(
                id,
                row.backend,
                row.project_id.as_deref(),
                &cwd,
                row.mode.as_deref(),
                row.permission_mode.as_deref(),
            )
            .await;
        let config = SessionConfig {
            session_id: id.to_owned(),
            backend: row.backend,
            transcript,
            approval_timeout: rules.approval_timeout,
            created: None,
            keep_open: true,
            policy: rules.policy,
        };
        let (session, pid) = self.start_agent(&opts, sequencer, config).await?;
        // From what the catalog has: anything the old follower had not folded yet comes too.
        self.adopt(id, &session, pid, row.last_seq + 1).await?;
        drop(starting);
        for problem in rules.problems {
            session.record(problem).await?;
        }
        Ok(session)
    }

    /// Answers an approval; the first answer wins.
    pub async fn decide(
        &self,
        id: &str,
        request_id: &str,
        decision: Decision,
        by: &str,
    ) -> Result<ApprovalResolved, HostError> {
        self.decide_confirmed(id, request_id, decision, by, false).await
    }

    /// [`Context::decide`], saying whether the person confirmed a second time (needed to allow a
    /// critical request; without it the request stays pending).
    pub async fn decide_confirmed(
        &self,
        id: &str,
        request_id: &str,
        decision: Decision,
        by: &str,
        confirmed: bool,
    ) -> Result<ApprovalResolved, HostError> {
        match self.live_handle(id) {
            Some(handle) => {
                Ok(handle.decide_confirmed(request_id, decision, by, confirmed).await?)
            }
            None => Err(self.dormant_decision(id, request_id).await),
        }
    }

    /// Why a decision on a session with no writer (its run ended) is refused: its requests
    /// were all answered or voided (`alreadyResolved`, saying by whom), or never existed.
    async fn dormant_decision(&self, id: &str, request_id: &str) -> HostError {
        let key = id.to_owned();
        let approvals = match self.catalog(move |c| c.approvals(&key)).await {
            Ok(a) => a,
            Err(e) => return e,
        };
        match approvals.into_iter().find(|a| a.request_id == request_id) {
            Some(nucleic_catalog::ApprovalRow { decision: Some(decision), decided_by, .. }) => {
                HostError::Core(nucleic_core::CoreError::AlreadyResolved {
                    request_id: request_id.to_owned(),
                    decision,
                    by: decided_by.unwrap_or_default(),
                })
            }
            Some(_) => HostError::Invalid(format!("session {id} has no running agent")),
            None => HostError::Core(nucleic_core::CoreError::UnknownRequest(request_id.to_owned())),
        }
    }

    pub async fn interrupt(&self, id: &str, by: &str) -> Result<(), HostError> {
        Ok(self.handle(id)?.interrupt(by).await?)
    }

    pub async fn stop(&self, id: &str) -> Result<(), HostError> {
        Ok(self.handle(id)?.stop(Duration::from_secs(5), None).await?)
    }

    pub async fn set_model(&self, id: &str, model: &str) -> Result<(), HostError> {
        Ok(self.handle(id)?.set_model(model).await?)
    }

    pub async fn set_permission_mode(&self, id: &str, mode: &str) -> Result<(), HostError> {
        Ok(self.handle(id)?.set_permission_mode(mode).await?)
    }

    pub async fn rename(&self, id: &str, title: &str, by: &str) -> Result<(), HostError> {
        if title.trim().is_empty() {
            return Err(HostError::Invalid("a title cannot be empty".into()));
        }
        let update = SessionUpdated {
            title: Some(title.trim().to_owned()),
            archived: None,
            mode: None,
            note: None,
            by: by.to_owned(),
        };
        self.record(id, EventKind::SessionUpdated(update)).await
    }

    pub async fn archive(&self, id: &str, archived: bool, by: &str) -> Result<(), HostError> {
        let update = SessionUpdated {
            title: None,
            archived: Some(archived),
            mode: None,
            note: None,
            by: by.to_owned(),
        };
        self.record(id, EventKind::SessionUpdated(update)).await
    }
}

/// Sends `text` to the session's running agent; `None` when there is none (no writer, or its
/// agent is gone), so the session must be resumed.
async fn send_to_agent(handle: Option<SessionHandle>, text: &str) -> Option<Result<(), HostError>> {
    match handle?.send_user_text(text).await {
        Err(nucleic_core::CoreError::AgentGone | nucleic_core::CoreError::SessionEnded) => None,
        other => Some(other.map_err(HostError::from)),
    }
}
