//! Finishing a session's work, always on request: merge / squash / rebase into the base branch,
//! discard, keep, roll back, continue in a new session, or hand off to a terminal.

use std::path::PathBuf;

use nucleic_git::{CheckoutPolicy, FinishMode, Repo, Worktree};
use nucleic_protocol::{
    CheckTrigger, EventKind, FinishAction, SessionCreated, WorktreeAction, WorktreeFinished,
    WorktreeInfo,
};
use nucleic_protocol::{Handoff, Integrated, IntentResult};

use crate::agents::launch::AgentRequest;
use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::finishing::pull_request::PullRequestRequest;
use crate::sessions::names::slug_for;
use crate::sessions::start::Launch;

impl Context {
    /// Carries out one finishing action; `Ok(Some(value))` is what the client gets back.
    pub async fn finish(
        &self,
        id: &str,
        action: FinishAction,
        by: &str,
    ) -> Result<Option<IntentResult>, HostError> {
        // A reclaimed worktree comes back first: every action works on the checkout.
        self.restore_if_reclaimed(id, by).await?;
        let row = self.session_row(id).await?;
        if matches!(action, FinishAction::Handoff) && crate::sessions::in_place::is_in_place(&row) {
            let cwd = row.cwd.clone();
            return self.hand_off(id, &row, &cwd, by).await;
        }
        let info = row
            .worktree
            .clone()
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no worktree")))?;
        let worktree = crate::worktrees::disk::worktree_from(&info);
        let root = match &row.project_id {
            Some(p) => PathBuf::from(self.project(p).await?.root),
            None => return Err(HostError::Invalid(format!("session {id} belongs to no project"))),
        };
        let busy = self.is_working(id);
        let finished =
            |action, base_branch: Option<String>, new_tip: Option<String>, continued_in| {
                EventKind::WorktreeFinished(WorktreeFinished {
                    action,
                    base_branch,
                    new_tip,
                    continued_in,
                    by: by.to_owned(),
                    forced_reason: None,
                })
            };
        match action {
            FinishAction::Merge { .. }
            | FinishAction::Squash { .. }
            | FinishAction::Rebase { .. }
            | FinishAction::PullRequest { .. }
                if busy =>
            {
                Err(HostError::Invalid(format!(
                    "session {id} is still working; wait for its turn to end or stop it"
                )))
            }
            FinishAction::Merge { message, update_checkout, force_reason } => {
                let forced =
                    self.gate_on_checks(id, row.project_id.as_deref(), force_reason).await?;
                let how = Integration { mode: FinishMode::Merge, message, update_checkout, forced };
                self.integrate(id, root, worktree, how, &row.title, finished).await
            }
            FinishAction::Squash { message, update_checkout, force_reason } => {
                let forced =
                    self.gate_on_checks(id, row.project_id.as_deref(), force_reason).await?;
                let how =
                    Integration { mode: FinishMode::Squash, message, update_checkout, forced };
                self.integrate(id, root, worktree, how, &row.title, finished).await
            }
            FinishAction::Rebase { message, update_checkout, force_reason } => {
                let forced =
                    self.gate_on_checks(id, row.project_id.as_deref(), force_reason).await?;
                let how =
                    Integration { mode: FinishMode::Rebase, message, update_checkout, forced };
                self.integrate(id, root, worktree, how, &row.title, finished).await
            }
            FinishAction::PullRequest { title, draft, base, repo, force_reason } => {
                let request = PullRequestRequest { title, draft, base, repo, force_reason };
                self.open_pull_request(id, worktree, root, request, by).await
            }
            FinishAction::Discard | FinishAction::Rollback { .. } if busy => {
                Err(HostError::Invalid(format!("session {id} is still working; stop it first")))
            }
            FinishAction::Discard => {
                // An agent waiting for a follow-up in the worktree goes with it (its keeper too).
                // A turn snapshot being taken works in the worktree's git dir (a temporary
                // index): the worktree goes only once it is done (`no_snapshots`).
                self.stop_idle_agent(id).await?;
                let repo_root = root.clone();
                let no_snapshot = self.no_snapshots(id).await;
                blocking(move || Repo::open(&repo_root)?.discard(&worktree)).await?;
                drop(no_snapshot);
                self.drop_turn_snapshots(id, root).await;
                self.record(id, finished(WorktreeAction::Discarded, None, None, None)).await?;
                Ok(None)
            }
            FinishAction::Keep => {
                self.record(id, finished(WorktreeAction::Kept, None, None, None)).await?;
                Ok(None)
            }
            FinishAction::Rollback { confirm } => {
                self.stop_idle_agent(id).await?;
                let repo_root = root.clone();
                let no_snapshot = self.no_snapshots(id).await;
                blocking(move || Repo::open(&repo_root)?.remove_kept(&worktree, confirm)).await?;
                drop(no_snapshot);
                self.drop_turn_snapshots(id, root).await;
                self.record(id, finished(WorktreeAction::RolledBack, None, None, None)).await?;
                Ok(None)
            }
            FinishAction::Continue { prompt, backend } => {
                // Another agent: a new conversation, told what this one was asked, said and
                // changed (the changes themselves are in the worktree it starts in).
                let other = backend.filter(|b| *b != row.backend);
                let prompt = match other {
                    Some(to) => self.handover(id, &row, to, &prompt).await?,
                    None => prompt,
                };
                let new_id = uuid::Uuid::new_v4().to_string();
                let slug = slug_for(&row.title, &new_id);
                let kept = worktree.clone();
                let fresh =
                    blocking(move || Repo::open(&root)?.continue_from(&kept, &slug)).await?;
                let title = match other {
                    Some(to) => {
                        format!(
                            "{} (continued in {})",
                            row.title,
                            nucleic_agents::describe(to).label
                        )
                    }
                    None => format!("{} (continued)", row.title),
                };
                // The model and the backend's own permission mode are this backend's words.
                let same = other.is_none();
                let created = SessionCreated {
                    title,
                    project_id: row.project_id.clone(),
                    project_root: None,
                    cwd: fresh.path.to_string_lossy().into_owned(),
                    worktree: Some(WorktreeInfo {
                        path: fresh.path.to_string_lossy().into_owned(),
                        branch: fresh.branch.clone(),
                        base_ref: fresh.base_ref.clone(),
                        base_sha: fresh.base_sha.clone(),
                    }),
                    model: row.model.clone().filter(|_| same),
                    permission_mode: row.permission_mode.clone().filter(|_| same),
                    read_only: false,
                    continues_session_id: Some(id.to_owned()),
                    created_by: Some(by.to_owned()),
                    parent_session_id: None,
                    // The continued session keeps the mode it was in.
                    mode: row.mode.clone(),
                };
                // A backend that cannot fork starts a fresh conversation on the kept changes.
                let forked = row
                    .backend_session_id
                    .clone()
                    .filter(|_| same && nucleic_agents::backend_capabilities(row.backend).fork);
                let launch = Launch {
                    session_id: new_id.clone(),
                    created,
                    backend: other.unwrap_or(row.backend),
                    cwd: fresh.path.clone(),
                    agent: AgentRequest {
                        model: row.model.clone().filter(|_| same),
                        permission_mode: row.permission_mode.clone().filter(|_| same),
                        resume: forked.clone(),
                        fork: forked.is_some(),
                        session_id: Some(new_id.clone()),
                        read_only: crate::policy::session_policy::is_read_only(row.mode.as_deref()),
                        sandbox: self.project_sandbox(row.project_id.as_deref()).await,
                    },
                    prompt,
                    trace: crate::sessions::start_trace::StartTrace::new(),
                    clean_at: None,
                };
                let summary = self.launch(launch).await?;
                self.record(id, finished(WorktreeAction::Continued, None, None, Some(new_id)))
                    .await?;
                Ok(Some(IntentResult::Session(summary)))
            }
            FinishAction::Handoff => self.hand_off(id, &row, &info.path, by).await,
        }
    }

    /// The first prompt of session `id` continued in backend `to` (`handover.rs`): its
    /// transcript and its changes against its base, then `prompt`.
    async fn handover(
        &self,
        id: &str,
        row: &nucleic_catalog::SessionRow,
        to: nucleic_protocol::Backend,
        prompt: &str,
    ) -> Result<String, HostError> {
        let transcript = std::path::PathBuf::from(&row.transcript);
        let events = blocking(move || nucleic_store::read_transcript(&transcript, 1)).await?.events;
        let files = self.git_facts_of_turn(id, false, None).await?.files;
        let (from, to) =
            (nucleic_agents::describe(row.backend).label, nucleic_agents::describe(to).label);
        Ok(super::handover::handover_prompt(from, to, &events, &files, prompt))
    }

    /// Hands session `row` over to the person's terminal in `dir`: Nucleic's agent on the
    /// conversation stops (and an in-place session lets its lock go); answers the command.
    async fn hand_off(
        &self,
        id: &str,
        row: &nucleic_catalog::SessionRow,
        dir: &str,
        by: &str,
    ) -> Result<Option<IntentResult>, HostError> {
        if self.is_working(id) {
            return Err(HostError::Invalid(format!(
                "session {id} is in a turn; wait for it to end (or interrupt it) before handing \
                 it over: two programs must not drive one conversation"
            )));
        }
        let resume = row.backend_session_id.clone().ok_or_else(|| {
            HostError::Invalid(format!("session {id} has no agent conversation to resume yet"))
        })?;
        let description = nucleic_agents::describe(row.backend);
        let command = description.handoff_command(dir, &resume).ok_or_else(|| {
            HostError::Invalid(format!(
                "the {} backend has no CLI to hand a session over to",
                description.label
            ))
        })?;
        // The terminal drives the conversation now: Nucleic's agent on it stops, and a
        // follow-up here first brings back what the terminal added.
        self.stop_idle_agent(id).await?;
        let released = if self.release_in_place(id) {
            " The in-place lock is released: a follow-up here takes it again."
        } else {
            ""
        };
        let note = format!(
            "Handed over: `{command}`. Nucleic's agent on the conversation stopped; a follow-up \
             here resumes it with what the terminal added.{released}"
        );
        let updated = nucleic_protocol::SessionUpdated {
            title: None,
            archived: None,
            mode: None,
            note: Some(note),
            by: by.to_owned(),
        };
        self.record(id, EventKind::SessionUpdated(updated)).await?;
        Ok(Some(IntentResult::Handoff(Handoff { command })))
    }

    /// The merge gate: runs the project's required checks now; refuses while one fails unless
    /// `force_reason` (non-empty) is given, which is then recorded with what failed.
    pub(crate) async fn gate_on_checks(
        &self,
        id: &str,
        project_id: Option<&str>,
        force_reason: Option<String>,
    ) -> Result<Option<String>, HostError> {
        let force_reason = force_reason.map(|r| r.trim().to_owned());
        if force_reason.as_deref() == Some("") {
            return Err(HostError::Invalid("a forced merge needs a reason".into()));
        }
        let Some(project_id) = project_id else { return Ok(None) };
        let project = self.project(project_id).await?;
        if !project.settings.checks.iter().any(|c| c.required) {
            return Ok(None);
        }
        let results = self.run_checks(id, None, CheckTrigger::Finish).await?;
        let failing: Vec<String> =
            results.iter().filter(|c| !c.is_pass()).map(|c| c.summary()).collect();
        if failing.is_empty() {
            return Ok(None);
        }
        match force_reason {
            Some(reason) => Ok(Some(format!("{reason} (failing: {})", failing.join("; ")))),
            None => Err(HostError::ChecksFailed(failing.join("; "))),
        }
    }

    async fn integrate(
        &self,
        id: &str,
        root: PathBuf,
        worktree: Worktree,
        how: Integration,
        title: &str,
        finished: impl Fn(WorktreeAction, Option<String>, Option<String>, Option<String>) -> EventKind,
    ) -> Result<Option<IntentResult>, HostError> {
        let Integration { mode, message, update_checkout, forced } = how;
        let message = message.unwrap_or_else(|| title.to_owned());
        let base = worktree.base_ref.clone();
        let policy = if update_checkout {
            CheckoutPolicy::FastForwardIfClean
        } else {
            CheckoutPolicy::Refuse
        };
        let outcome = blocking(move || {
            let repo = Repo::open(&root)?;
            // Check first, so that a refusal leaves even the uncommitted work as it was.
            if policy == CheckoutPolicy::Refuse
                && let Some(entry) = repo
                    .list_worktrees()?
                    .into_iter()
                    .find(|e| !e.prunable && e.branch.as_deref() == Some(base.as_str()))
            {
                return Err(nucleic_git::GitError::BaseCheckedOut {
                    branch: base,
                    path: entry.path,
                });
            }
            let files = repo.conflict_preview(&worktree, &base)?;
            if !files.is_empty() {
                return Err(nucleic_git::GitError::Conflict { files });
            }
            repo.commit_all(&worktree, &message)?;
            repo.merge_into_base_with(&worktree, &base, mode, &message, policy)
        })
        .await?;
        let action = match mode {
            FinishMode::Merge => WorktreeAction::Merged,
            FinishMode::Squash => WorktreeAction::Squashed,
            FinishMode::Rebase => WorktreeAction::Rebased,
        };
        let mut event = finished(
            action,
            Some(outcome.base_branch.clone()),
            Some(outcome.new_tip.clone()),
            None,
        );
        if let EventKind::WorktreeFinished(w) = &mut event {
            w.forced_reason = forced;
        }
        self.record(id, event).await?;
        Ok(Some(IntentResult::Integrated(Integrated {
            base_branch: outcome.base_branch,
            new_tip: outcome.new_tip,
        })))
    }
}

/// How to bring a session's work into its base branch.
#[derive(Debug)]
struct Integration {
    mode: FinishMode,
    message: Option<String>,
    update_checkout: bool,
    /// Integrated past failing required checks: the reason given and what failed.
    forced: Option<String>,
}
