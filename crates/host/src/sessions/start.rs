//! Sessions: listing them, their catalog rows, and starting one — a worktree off the chosen
//! base, its agent, writer and catalog follower.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_catalog::{AgentProcess, SessionFilter};
use nucleic_core::{Sequencer, SessionConfig, SessionHandle};
use nucleic_git::{Repo, SetupSpec, WorktreeSpec};
use nucleic_protocol::{Backend, NewSession, SessionCreated, SessionSummary, WorktreeInfo};

use crate::agents::launch::{AgentRequest, agent_options};
use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::lifecycle::gate::stopping_error;
use crate::sessions::follower::{fold_into_catalog, summary_of};
use crate::sessions::names::{slug_for, title_from_prompt};

/// What a new session runs in, and with what.
#[derive(Debug)]
pub(crate) struct Launch {
    pub session_id: String,
    pub created: SessionCreated,
    pub backend: Backend,
    pub cwd: PathBuf,
    pub agent: AgentRequest,
    pub prompt: String,
    /// Phases of the start, timed when `NUCLEIC_TRACE_START` is set.
    pub trace: crate::sessions::start_trace::StartTrace,
    /// The commit whose tree the worktree holds exactly, when known (a clean pooled worktree):
    /// the first turn's snapshot.
    pub clean_at: Option<String>,
}

impl Context {
    pub async fn list_sessions(
        &self,
        project_id: Option<String>,
        include_archived: bool,
    ) -> Result<Vec<SessionSummary>, HostError> {
        let filter = SessionFilter { project_id, include_archived };
        let rows = self.catalog(move |c| c.list_sessions(&filter)).await?;
        Ok(rows.iter().map(summary_of).collect())
    }

    pub async fn session_summary(&self, id: &str) -> Result<SessionSummary, HostError> {
        Ok(summary_of(&self.session_row(id).await?))
    }

    /// The session's catalog row. For a live session, waits (briefly) until the follower has
    /// folded every event written so far, so callers never act on a stale row.
    pub(crate) async fn session_row(
        &self,
        id: &str,
    ) -> Result<nucleic_catalog::SessionRow, HostError> {
        let written = self.live_handle(id).map(|h| h.state().last_seq);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let key = id.to_owned();
            let row = self
                .catalog(move |c| c.session(&key))
                .await?
                .ok_or_else(|| HostError::NotFound(format!("session {id}")))?;
            if written.is_none_or(|w| row.last_seq >= w) || tokio::time::Instant::now() >= deadline
            {
                return Ok(row);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Creates a worktree off the chosen base, runs the project's setup, starts the agent there
    /// and sends the first prompt.
    pub async fn new_session(
        &self,
        request: NewSession,
        by: &str,
    ) -> Result<SessionSummary, HostError> {
        self.new_session_with_parent(request, by, None).await
    }

    /// [`Context::new_session`], recording `parent` as the session whose agent started it.
    pub(crate) async fn new_session_with_parent(
        &self,
        request: NewSession,
        by: &str,
        parent: Option<String>,
    ) -> Result<SessionSummary, HostError> {
        if self.gate.is_stopping() {
            return Err(stopping_error());
        }
        let mut trace = crate::sessions::start_trace::StartTrace::new();
        let project = self.project(&request.project_id).await?;
        let root = PathBuf::from(&project.root);
        let repo = blocking(move || Repo::open(&root)).await?;
        trace.mark("project");
        let session_id = uuid::Uuid::new_v4().to_string();
        // No pool refill until this session's agent has started (or this start failed).
        let hold = self.hold_refill(&session_id);
        let title = request.title.clone().unwrap_or_else(|| title_from_prompt(&request.prompt));
        let slug = slug_for(&title, &session_id);
        let base_ref =
            request.base_ref.clone().unwrap_or_else(|| project.settings.default_branch.clone());
        // The limits, and where the base is for the pool (two git processes), side by side.
        let (limits, tip) = tokio::join!(
            self.check_limits(&project, &repo),
            self.pool_tip(&project, &repo, &base_ref)
        );
        limits?;
        trace.mark("limits");
        let setup = project.settings.setup_script.clone().map(|script| SetupSpec {
            script,
            timeout: project
                .settings
                .setup_timeout_secs
                .map_or(self.config.setup_timeout, Duration::from_secs),
            log_path: self.config.setup_log_path(&session_id),
        });
        let spec = WorktreeSpec {
            slug,
            base_ref: base_ref.clone(),
            copy_files: project.settings.copy_files.iter().map(PathBuf::from).collect(),
            setup,
        };
        let backend = request.backend.unwrap_or(project.settings.default_backend);
        // An unknown mode, or a mode for a session without a policy, is refused here.
        let mode = self.start_mode(backend, &project.id, request.mode.as_deref())?;
        let agent = AgentRequest {
            model: request.model.clone(),
            permission_mode: request.permission_mode.clone(),
            resume: None,
            fork: false,
            session_id: Some(session_id.clone()),
            read_only: crate::policy::session_policy::is_read_only(mode.as_deref()),
            sandbox: project.settings.sandbox.clone(),
        };
        // A backend that is not installed, or a mode it cannot map, is refused before any
        // worktree exists.
        agent_options(&self.config, backend, Path::new(&project.root), &agent)?;
        trace.mark("options");
        // A warm worktree of the project's pool when one is ready at the base's tip;
        // otherwise (or when it cannot be taken) a new one, as without a pool.
        let pooled = self.take_pooled(&project, &repo, tip, &spec.slug, &session_id).await;
        let pooled_path = pooled.is_some();
        let clean_at = pooled.as_ref().and_then(|(w, clean)| clean.then(|| w.base_sha.clone()));
        let made = match pooled {
            Some((worktree, _)) => Ok(worktree),
            None => {
                let repo = repo.clone();
                tokio::task::spawn_blocking(move || repo.create_worktree(&spec))
                    .await
                    .map_err(|e| HostError::Task(e.to_string()))?
            }
        };
        let worktree = match made {
            Ok(w) => w,
            Err(
                e @ (nucleic_git::GitError::SetupFailed { .. }
                | nucleic_git::GitError::SetupTimedOut { .. }),
            ) => {
                return self
                    .record_setup_failure(&session_id, &title, &project, backend, &request, e, by)
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        trace.mark(if pooled_path { "worktree (pooled)" } else { "worktree (new)" });
        let created = SessionCreated {
            title,
            project_id: Some(project.id.clone()),
            project_root: Some(project.root.clone()),
            cwd: worktree.path.to_string_lossy().into_owned(),
            worktree: Some(worktree_info(&worktree)),
            model: request.model.clone(),
            permission_mode: request.permission_mode.clone(),
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
            parent_session_id: parent,
            mode,
        };
        let launch = Launch {
            session_id,
            created,
            backend,
            cwd: worktree.path.clone(),
            agent,
            prompt: request.prompt.clone(),
            trace,
            clean_at,
        };
        let started = self.launch(launch).await;
        // The pool refills behind the session (it may have taken a pooled worktree) once its
        // agent has started.
        match started.as_ref().ok().and_then(|s| self.live_handle(&s.session_id)) {
            Some(session) => hold.release_when_started(session),
            None => drop(hold),
        }
        started
    }

    /// Starts the agent and the session's writer and follower, then sends the first prompt.
    pub(crate) async fn launch(&self, launch: Launch) -> Result<SessionSummary, HostError> {
        let Launch { session_id, created, backend, cwd, agent, prompt, mut trace, clean_at } =
            launch;
        let opts = agent_options(&self.config, backend, &cwd, &agent)?;
        // Refused once the host is stopping; a shutdown waits for it until it is live.
        let starting = self.gate.enter()?;
        let transcript = self.config.transcript_path(&session_id);
        // The transcript is taken before the agent starts: a refusal leaves no agent behind.
        let sequencer = Sequencer::open(&session_id, backend, &transcript)?;
        trace.mark("transcript");
        let rules = self
            .session_rules(
                &session_id,
                backend,
                created.project_id.as_deref(),
                &cwd,
                created.mode.as_deref(),
                agent.permission_mode.as_deref(),
            )
            .await;
        trace.mark("policy");
        let config = SessionConfig {
            session_id: session_id.clone(),
            backend,
            transcript,
            approval_timeout: rules.approval_timeout,
            created: Some(created),
            keep_open: true,
            policy: rules.policy,
        };
        let (session, pid) = self.start_agent(&opts, sequencer, config).await?;
        trace.mark("agent spawned");
        self.adopt(&session_id, &session, pid, 1).await?;
        trace.mark("indexed");
        drop(starting);
        for problem in rules.problems {
            session.record(problem).await?;
        }
        // An empty prompt (`nucleic acp`'s `session/new`, before the editor's first prompt):
        // the agent waits in its worktree, idle, and the first `sendInput` starts the first turn.
        if !prompt.trim().is_empty() {
            self.first_turn_started(&session_id, clean_at).await;
            trace.mark("turn snapshot");
            session.send_user_text(&prompt).await?;
            trace.mark("prompt sent");
        }
        let summary = self.session_summary(&session_id).await;
        trace.mark("summary");
        trace.finish(&session_id);
        summary
    }

    /// Takes a freshly started writer into the host: folds what it has written from `from_seq`
    /// into the catalog now (so the session is listed before the caller returns), records its
    /// agent process, starts the catalog follower for the rest, and registers it as live.
    pub(crate) async fn adopt(
        &self,
        id: &str,
        session: &SessionHandle,
        pid: Option<u32>,
        from_seq: u64,
    ) -> Result<(), HostError> {
        let transcript = session.transcript_path().to_path_buf();
        let written = nucleic_store::read_transcript(&transcript, from_seq)?.events;
        let next_seq = written.last().map_or(from_seq, |e| e.seq + 1);
        let agent = pid
            .and_then(|p| process_start_ticks(p).map(|t| AgentProcess { pid: p, start_ticks: t }));
        let (key, path) = (id.to_owned(), transcript.clone());
        self.catalog(move |c| {
            c.apply_events(&key, &path, &written)?;
            c.set_agent_process(&key, agent)
        })
        .await?;
        let events = session.subscribe(next_seq)?;
        tokio::spawn(fold_into_catalog(
            self.catalog.clone(),
            id.to_owned(),
            transcript,
            events,
            self.changes.clone(),
            self.turns.clone(),
        ));
        if let Ok(mut live) = self.live.lock() {
            live.insert(id.to_owned(), session.clone());
        }
        let _ = self.writes.send(id.to_owned());
        self.retire_when_finished(id, session);
        Ok(())
    }
}

/// What a session's events say about its worktree.
pub(crate) fn worktree_info(worktree: &nucleic_git::Worktree) -> WorktreeInfo {
    WorktreeInfo {
        path: worktree.path.to_string_lossy().into_owned(),
        branch: worktree.branch.clone(),
        base_ref: worktree.base_ref.clone(),
        base_sha: worktree.base_sha.clone(),
    }
}

/// The start time of `pid`, to recognise it after a restart (see `recovery.rs`).
pub(crate) fn process_start_ticks(pid: u32) -> Option<u64> {
    nucleic_agents::process::proc_stat(pid).map(|s| s.start_ticks)
}
