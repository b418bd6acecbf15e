//! What refuses or fails a session's start before its agent runs: the host's limits (live
//! agents, worktrees, free disk) and a failing setup script, recorded on the session.

use std::path::Path;

use nucleic_catalog::ProjectRow;
use nucleic_core::Draft;
use nucleic_git::Repo;
use nucleic_protocol::{
    Backend, ErrorCode, ErrorEvent, EventKind, NewSession, RunFinished, RunOutcome, SessionCreated,
    SessionStatus, SessionSummary, StatusChanged,
};

use crate::context::Context;
use crate::error::{HostError, blocking};

impl Context {
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn record_setup_failure(
        &self,
        session_id: &str,
        title: &str,
        project: &ProjectRow,
        backend: Backend,
        request: &NewSession,
        error: nucleic_git::GitError,
        by: &str,
    ) -> Result<SessionSummary, HostError> {
        let transcript = self.config.transcript_path(session_id);
        let created = SessionCreated {
            title: title.to_owned(),
            project_id: Some(project.id.clone()),
            project_root: Some(project.root.clone()),
            cwd: project.root.clone(),
            worktree: None,
            model: request.model.clone(),
            permission_mode: request.permission_mode.clone(),
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
            parent_session_id: None,
            mode: None,
        };
        let message =
            format!("the project's setup script failed, so no agent was started: {error}");
        let kinds = vec![
            EventKind::SessionCreated(created),
            EventKind::Error(ErrorEvent {
                code: ErrorCode::Host,
                message: message.clone(),
                http_status: None,
            }),
            EventKind::RunFinished(RunFinished::new(RunOutcome::SpawnFailed, Some(message), None)),
            EventKind::StatusChanged(StatusChanged {
                status: SessionStatus::Error,
                previous: SessionStatus::Idle,
            }),
        ];
        let drafts = kinds.into_iter().map(Draft::host).collect();
        self.write_events(session_id, backend, &transcript, drafts).await
    }

    pub(crate) async fn check_limits(
        &self,
        project: &ProjectRow,
        repo: &Repo,
    ) -> Result<(), HostError> {
        let limits = self.config.limits;
        let live_agents = self
            .live
            .lock()
            .map(|live| live.values().filter(|h| h.state().finished.is_none()).count())
            .unwrap_or(0);
        if live_agents >= limits.max_live_sessions {
            return Err(HostError::Limit(format!(
                "{live_agents} sessions are running (limit {}); stop one first",
                limits.max_live_sessions
            )));
        }
        let repo = repo.clone();
        let worktrees = blocking(move || repo.list_worktrees()).await?;
        let ours = worktrees
            .iter()
            .filter(|w| w.path.to_string_lossy().contains("/.nucleic/worktrees/"))
            .count();
        if ours >= limits.max_worktrees {
            return Err(HostError::Limit(format!(
                "the project has {ours} worktrees (limit {}); discard or roll back some",
                limits.max_worktrees
            )));
        }
        let stat = nix::sys::statvfs::statvfs(Path::new(&project.root)).map_err(|e| {
            HostError::Invalid(format!("cannot check free space at {}: {e}", project.root))
        })?;
        let free = stat.blocks_available().saturating_mul(stat.fragment_size());
        if free < limits.min_free_bytes {
            return Err(HostError::Limit(format!(
                "only {} MiB free on the project's disk (need {} MiB)",
                free >> 20,
                limits.min_free_bytes >> 20
            )));
        }
        Ok(())
    }
}
