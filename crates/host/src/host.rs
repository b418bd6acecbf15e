//! `Host`: the registry of projects and sessions, and every operation clients can ask for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_catalog::{
    AgentProcess, Catalog, NewProject, ProjectRow, ProjectSettings, SessionFilter,
};
use nucleic_core::{Sequencer, SessionConfig, SessionHandle};
use nucleic_git::{Repo, SetupSpec, WorktreeSpec};
use nucleic_protocol::{
    Backend, NewSession, ProjectSummary, SessionCreated, SessionSummary, Timestamp, WorktreeInfo,
};
use tokio::sync::broadcast;

use crate::config::HostConfig;
use crate::error::{HostError, blocking};
use crate::follower::{fold_into_catalog, summary_of};
use crate::launch::{AgentRequest, agent_options};
use crate::names::{slug_for, title_from_prompt};
use crate::recovery::{RecoveryReport, open_catalog, recover_sessions};
use crate::shutdown::{LaunchGate, stopping_error};
use crate::writing::WriterTurns;

/// The host. Share it as `Arc<Host>`.
#[derive(Debug)]
pub struct Host {
    /// Itself, for tasks that outlive a call (`retire_when_finished`).
    pub(crate) me: std::sync::Weak<Host>,
    pub(crate) config: HostConfig,
    pub(crate) catalog: Arc<Catalog>,
    /// Sessions with a live single writer (their agent may have exited since).
    pub(crate) live: Mutex<HashMap<String, SessionHandle>>,
    pub(crate) changes: broadcast::Sender<SessionSummary>,
    /// Ids of sessions that got a new writer or events written outside one (`writes`).
    pub(crate) writes: broadcast::Sender<String>,
    /// What opening found and repaired.
    pub(crate) recovery: RecoveryReport,
    /// The token and device revocations.
    pub(crate) credentials: crate::credentials::Credentials,
    /// Agent starts under way, and whether the host is stopping (`shutdown.rs`).
    pub(crate) gate: LaunchGate,
    /// One writer start (or write outside a writer) per session at a time (`writing.rs`).
    pub(crate) writer_turns: WriterTurns,
    /// When idle sessions' writers let their transcript go (`writing.rs`).
    pub(crate) idle_release: crate::writing::IdleRelease,
    /// Directories of the keepers this host runs or re-adopted and has not released yet.
    pub(crate) keepers: Arc<Mutex<std::collections::HashSet<PathBuf>>>,
    /// Warm worktree pools, tended once `start_pools` ran (`pool.rs`).
    pub(crate) pools: crate::pool::Pools,
    /// Checks running per session, and their stop switches (`checks.rs`).
    pub(crate) checks: crate::checks::CheckRuns,
    /// The policies of sessions whose agent runs, by session id (`policy.rs`: modes, rules).
    pub(crate) policies: crate::policy::LivePolicies,
    /// Each confined agent's egress proxy, by session.
    pub(crate) egress: crate::egress::EgressProxies,
    /// Ids of sessions whose agent just completed a turn (from the catalog followers), for
    /// the checks and report that follow turns.
    pub(crate) turns: tokio::sync::mpsc::UnboundedSender<String>,
    /// One worktree reclaim or restore at a time (`disk.rs`): two follow-ups to a reclaimed
    /// session restore it once.
    pub(crate) disk_moves: tokio::sync::Mutex<()>,
    /// Message ids being answered, so a resent copy waits for the first (`reply_turns.rs`).
    pub(crate) reply_turns: crate::reply_turns::ReplyTurns,
    /// One lock per session for its turn snapshots and review comments (`turns.rs`).
    pub(crate) review_locks: crate::turns::SessionLocks,
}

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
    pub trace: crate::start_trace::StartTrace,
    /// The commit whose tree the worktree holds exactly, when known (a clean pooled worktree):
    /// the first turn's snapshot.
    pub clean_at: Option<String>,
}

impl Host {
    /// Opens the host's data under `config.home` (created 0700; an existing home, its files and
    /// session directories are tightened to 0700 / 0600).
    pub async fn open(config: HostConfig) -> Result<Arc<Host>, HostError> {
        crate::private::private_home(&config.home, &config.sessions_dir()).map_err(|e| {
            HostError::Invalid(format!("cannot create {} privately: {e}", config.home.display()))
        })?;
        let credentials = crate::credentials::Credentials::load(&config.home)?;
        let (path, sessions) = (config.catalog_path(), config.sessions_dir());
        let keepers = config.keepers_dir();
        let (catalog, report) = blocking(move || {
            let mut report = RecoveryReport::default();
            let catalog = open_catalog(&path, &sessions, &mut report)?;
            recover_sessions(&catalog, &sessions, &keepers, &mut report)?;
            Ok::<_, HostError>((catalog, report))
        })
        .await?;
        let (changes, _) = broadcast::channel(1024);
        let (writes, _) = broadcast::channel(1024);
        // Probes bubblewrap once for the process (a child process: off the async workers).
        let probed = config.clone();
        blocking(move || {
            crate::launch::report_isolation(&probed);
            Ok::<_, HostError>(())
        })
        .await?;
        let kept: Vec<_> = report
            .kept
            .iter()
            .map(|id| (id.clone(), crate::keepers::keeper_dirs_of(&config.keepers_dir(), id)))
            .collect();
        let (turns, turns_done) = tokio::sync::mpsc::unbounded_channel();
        let host = Arc::new_cyclic(|me| Host {
            me: me.clone(),
            config,
            catalog: Arc::new(catalog),
            live: Mutex::default(),
            changes,
            writes,
            recovery: report,
            credentials,
            gate: LaunchGate::default(),
            writer_turns: WriterTurns::default(),
            idle_release: crate::writing::IdleRelease::default(),
            keepers: Arc::default(),
            pools: crate::pool::Pools::default(),
            checks: crate::checks::CheckRuns::default(),
            policies: crate::policy::LivePolicies::default(),
            egress: crate::egress::EgressProxies::default(),
            turns,
            disk_moves: tokio::sync::Mutex::default(),
            reply_turns: crate::reply_turns::ReplyTurns::default(),
            review_locks: crate::turns::SessionLocks::default(),
        });
        tokio::spawn(crate::checks::after_turns(Arc::downgrade(&host), turns_done));
        host.readopt_keepers(kept).await;
        Ok(host)
    }

    /// What opening found and repaired after the previous host stopped.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Summaries of sessions as they change, for every connected client.
    pub fn changes(&self) -> broadcast::Receiver<SessionSummary> {
        self.changes.subscribe()
    }

    /// Ids of sessions whose transcript just got a new writer (a resume) or events written
    /// outside one, straight from the host (not through the catalog): a stream of a dormant
    /// session subscribes again when its id comes by.
    pub fn writes(&self) -> broadcast::Receiver<String> {
        self.writes.subscribe()
    }

    pub(crate) async fn catalog<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Catalog) -> Result<T, nucleic_catalog::CatalogError> + Send + 'static,
    ) -> Result<T, HostError> {
        let catalog = self.catalog.clone();
        blocking(move || f(&catalog)).await
    }

    /// The reply already given to `(client, message)`, for idempotent client message ids.
    pub async fn recall_reply(
        &self,
        client: &str,
        message: &str,
    ) -> Result<Option<String>, HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.recall_response(&client, &message)).await
    }

    /// Remembers the reply to `(client, message)` (the first one stored wins).
    pub async fn remember_reply(
        &self,
        client: &str,
        message: &str,
        reply: String,
    ) -> Result<(), HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.remember_response(&client, &message, &reply)).await
    }

    // ----- projects -------------------------------------------------------------------------

    /// Registers a git repository. Refuses a path that is not a repository and a repository
    /// that is already registered (same canonical root).
    pub async fn add_project(
        &self,
        path: &str,
        name: Option<String>,
        settings: impl FnOnce(&mut ProjectSettings) + Send + 'static,
    ) -> Result<ProjectSummary, HostError> {
        let path = PathBuf::from(path);
        let repo = blocking(move || Repo::open(&path)).await?;
        let root = repo.root().to_string_lossy().into_owned();
        let branch =
            blocking(move || repo.default_branch()).await?.unwrap_or_else(|| "main".into());
        let name = name.unwrap_or_else(|| {
            Path::new(&root)
                .file_name()
                .map_or("project".into(), |n| n.to_string_lossy().into_owned())
        });
        let mut project_settings = ProjectSettings::defaults(Backend::ClaudeCode);
        project_settings.default_branch = branch;
        settings(&mut project_settings);
        crate::checks::validate_checks(&project_settings.checks)?;
        let new = NewProject {
            id: uuid::Uuid::new_v4().to_string(),
            name,
            root,
            settings: project_settings,
        };
        let row = self.catalog(move |c| c.add_project(&new)).await?;
        self.pools.wake();
        Ok(self.project_summary(&row))
    }

    pub async fn list_projects(&self) -> Result<Vec<ProjectSummary>, HostError> {
        let rows = self.catalog(|c| c.list_projects()).await?;
        Ok(rows.iter().map(|row| self.project_summary(row)).collect())
    }

    /// Sets how many worktrees the project keeps prepared (0: none; the pool empties).
    pub async fn set_pool_size(&self, id: &str, size: u32) -> Result<ProjectSummary, HostError> {
        let key = id.to_owned();
        let row = self
            .catalog(move |c| {
                let mut settings = c
                    .project(&key)?
                    .ok_or_else(|| nucleic_catalog::CatalogError::ProjectNotFound {
                        id: key.clone(),
                    })?
                    .settings;
                settings.pool_size = size;
                c.update_project_settings(&key, &settings)
            })
            .await?;
        self.pools.wake();
        Ok(self.project_summary(&row))
    }

    /// One project as clients see it.
    pub async fn project_summary_of(&self, id: &str) -> Result<ProjectSummary, HostError> {
        Ok(self.project_summary(&self.project(id).await?))
    }

    pub(crate) fn project_summary(&self, row: &ProjectRow) -> ProjectSummary {
        ProjectSummary {
            project_id: row.id.clone(),
            name: row.name.clone(),
            root: row.root.clone(),
            default_branch: row.settings.default_branch.clone(),
            default_backend: row.settings.default_backend,
            checks: row.settings.checks.clone(),
            checks_after_turn: row.settings.checks_after_turn,
            pool: self.pools.summary(row),
            disk_policy: row.settings.disk_policy,
            sandbox: row.settings.sandbox.clone(),
        }
    }

    /// A project's local branches a session could start from (most recent first) and its
    /// default branch.
    pub async fn list_branches(&self, id: &str) -> Result<(Vec<String>, String), HostError> {
        let project = self.project(id).await?;
        let root = PathBuf::from(&project.root);
        let branches = blocking(move || Repo::open(&root)?.local_branches()).await?;
        Ok((branches, project.settings.default_branch))
    }

    pub async fn rename_project(&self, id: &str, name: &str) -> Result<(), HostError> {
        let (id, name) = (id.to_owned(), name.to_owned());
        self.catalog(move |c| c.rename_project(&id, &name)).await
    }

    /// Forgets a project; refused while it has sessions that are not archived (their worktrees
    /// are never deleted silently).
    pub async fn remove_project(&self, id: &str) -> Result<(), HostError> {
        let id = id.to_owned();
        self.catalog(move |c| c.remove_project(&id)).await
    }

    pub(crate) async fn project(&self, id: &str) -> Result<ProjectRow, HostError> {
        let key = id.to_owned();
        self.catalog(move |c| c.project(&key))
            .await?
            .ok_or_else(|| HostError::NotFound(format!("project {id}")))
    }

    // ----- sessions -------------------------------------------------------------------------

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

    pub(crate) fn live_handle(&self, id: &str) -> Option<SessionHandle> {
        self.live.lock().ok().and_then(|live| live.get(id).cloned())
    }

    pub(crate) fn handle(&self, id: &str) -> Result<SessionHandle, HostError> {
        self.live_handle(id)
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no running agent")))
    }

    /// Creates a worktree off the chosen base, runs the project's setup, starts the agent there
    /// and sends the first prompt.
    pub async fn new_session(
        &self,
        request: NewSession,
        by: &str,
    ) -> Result<SessionSummary, HostError> {
        if self.gate.is_stopping() {
            return Err(stopping_error());
        }
        let mut trace = crate::start_trace::StartTrace::new();
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
            read_only: crate::session_policy::is_read_only(mode.as_deref()),
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
            worktree: Some(WorktreeInfo {
                path: worktree.path.to_string_lossy().into_owned(),
                branch: worktree.branch.clone(),
                base_ref: worktree.base_ref.clone(),
                base_sha: worktree.base_sha.clone(),
            }),
            model: request.model.clone(),
            permission_mode: request.permission_mode.clone(),
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
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
        self.first_turn_started(&session_id, clean_at).await;
        trace.mark("turn snapshot");
        session.send_user_text(&prompt).await?;
        trace.mark("prompt sent");
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

pub(crate) fn now() -> Timestamp {
    Timestamp::from_datetime(time::OffsetDateTime::now_utc())
}

/// The start time of `pid`, to recognise it after a restart (see `recovery.rs`).
pub(crate) fn process_start_ticks(pid: u32) -> Option<u64> {
    nucleic_agents::process::proc_stat(pid).map(|s| s.start_ticks)
}
