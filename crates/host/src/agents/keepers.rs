//! Agents under keepers (`nucleic_agents::keeper`): starting a session's agent under a keeper
//! of its own, re-adopting the keepers a previous host left (the output replayed after what the
//! transcript holds, pending approvals asked again), releasing a keeper once its run's end is
//! recorded, and falling back to "interrupted" when a keeper cannot be adopted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nucleic_agents::keeper::{KeeperDir, release};
use nucleic_agents::supervisor::Checkpoint;
use nucleic_agents::{AgentControl, AgentLaunch};
use nucleic_catalog::SessionRow;
use nucleic_core::{KeptRun, Resumed, Sequencer, SessionConfig, SessionController, SessionHandle};
use nucleic_protocol::{ApprovalRequested, Event, EventKind};

use crate::agents::launch::{AgentRequest, agent_options};
use crate::context::Context;
use crate::error::{HostError, blocking};

/// How long an idle agent may take to stop before its worktree is discarded.
const IDLE_STOP_DEADLINE: Duration = Duration::from_secs(10);

/// How long releasing a keeper may take.
const RELEASE_DEADLINE: Duration = Duration::from_secs(5);

impl Context {
    /// Whether agents run under keepers (and so outlive this host).
    pub fn keeps_agents(&self) -> bool {
        self.config.keepers.is_some()
    }

    /// Starts the agent of session `id` — under a keeper when the host has them — and the
    /// session's writer on `sequencer`. Returns the writer's handle and the agent's pid.
    pub(crate) async fn start_agent(
        &self,
        opts: &AgentLaunch,
        sequencer: Sequencer,
        config: SessionConfig,
    ) -> Result<(SessionHandle, Option<u32>), HostError> {
        let confinement = self.prepare_confinement(&config.session_id, opts)?;
        let (session, pid) = self.start_agent_process(opts, sequencer, config).await?;
        // Said before anything else the host records for this agent.
        session.record(confinement).await?;
        Ok((session, pid))
    }

    async fn start_agent_process(
        &self,
        opts: &AgentLaunch,
        sequencer: Sequencer,
        config: SessionConfig,
    ) -> Result<(SessionHandle, Option<u32>), HostError> {
        let Some(keepers) = &self.config.keepers else {
            let (agent, outputs) = opts.spawn()?;
            let pid = agent.pid();
            return Ok((SessionController::start_with(sequencer, config, agent, outputs), pid));
        };
        let parent = self.config.keepers_dir();
        crate::lifecycle::private::private_dir(&parent).map_err(|e| {
            HostError::Invalid(format!("cannot create {} privately: {e}", parent.display()))
        })?;
        let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let dir = KeeperDir(parent.join(format!("{}.{tag}", config.session_id)));
        let tune = |spec: &mut nucleic_agents::keeper::KeeperSpec| {
            spec.orphan_after = keepers.orphan_after;
            spec.linger = keepers.linger;
        };
        let kept = match opts.spawn_kept(&keepers.program, &dir, tune).await {
            Ok(kept) => kept,
            Err(e) => {
                // A keeper that started sees its directory vanish and stops its agent.
                let _ = std::fs::remove_dir_all(dir.path());
                return Err(e.into());
            }
        };
        let hello =
            kept.hello.ok_or_else(|| HostError::Invalid("the keeper said no hello".into()))?;
        let run = KeptRun { run: hello.run, resumed: None };
        let session =
            SessionController::start_kept(sequencer, config, kept.agent, kept.outputs, Some(run));
        self.release_when_finished(&session, dir);
        Ok((session, Some(hello.pid)))
    }

    /// Re-adopts every keeper the previous host left (found by recovery), one session at a
    /// time; a keeper that cannot be adopted is stopped and its session closed as interrupted.
    pub(crate) async fn readopt_keepers(self: &Arc<Self>, kept: Vec<(String, Vec<KeeperDir>)>) {
        let mut tasks = tokio::task::JoinSet::new();
        for (id, dirs) in kept {
            let host = self.clone();
            tasks.spawn(async move {
                for dir in dirs {
                    if let Err(e) = host.readopt(&id, &dir).await {
                        eprintln!(
                            "nucleic: cannot re-adopt the agent of session {id} ({}): {e}; it is stopped and the session closed as interrupted",
                            dir.path().display()
                        );
                        host.abandon(&id, &dir).await;
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Re-adopts the keeper in `dir` of session `id`: its agent's output is replayed after what
    /// the transcript holds and continues live; the approvals the agent waits on are asked
    /// again. A keeper that is gone has its spool replayed and its run ended.
    async fn readopt(&self, id: &str, dir: &KeeperDir) -> Result<(), HostError> {
        let key = id.to_owned();
        let row = self
            .catalog(move |c| c.session(&key))
            .await?
            .ok_or_else(|| HostError::NotFound(format!("session {id}")))?;
        let spec = dir.read_spec()?;
        if spec.version != nucleic_agents::keeper::KEEPER_VERSION {
            return Err(HostError::Invalid(format!(
                "its keeper is from another Nucleic version (keeper format {}, this host {})",
                spec.version,
                nucleic_agents::keeper::KEEPER_VERSION
            )));
        }
        // In place: the conversation's lock again before its agent is driven from here.
        self.relock_kept(&row).await?;
        let transcript = PathBuf::from(&row.transcript);
        let sequencer = Sequencer::open(id, row.backend, &transcript)?;
        let events = read_all(&transcript).await?;
        let origins: Vec<String> = events.iter().filter_map(|e| e.origin.clone()).collect();
        let checkpoint = |run: &str| Checkpoint::of_run(run, origins.iter().map(String::as_str));
        if checkpoint(&spec.run).exited {
            // The run's end is recorded: only the release was missed.
            drop(sequencer);
            let dir = dir.clone();
            return blocking(move || release(&dir, RELEASE_DEADLINE)).await;
        }
        let request = AgentRequest {
            model: row.model.clone(),
            permission_mode: row.permission_mode.clone(),
            resume: None,
            fork: false,
            session_id: Some(id.to_owned()),
            read_only: crate::policy::session_policy::is_read_only(row.mode.as_deref()),
            sandbox: self.project_sandbox(row.project_id.as_deref()).await,
        };
        let opts = agent_options(&self.config, row.backend, Path::new(&row.cwd), &request)?;
        // The agent kept running in its sandbox: its way out is served again.
        self.prepare_confinement(id, &opts)?;
        let kept = match opts.readopt(dir, checkpoint).await {
            Ok(kept) => kept,
            Err(e) => {
                eprintln!(
                    "nucleic: the keeper of session {id} is gone ({e}); replaying what it spooled"
                );
                stop_recorded_agent(&row);
                opts.replay_spool(dir, checkpoint)?
            }
        };
        let pending = self.pending_requests(id, &events).await?;
        let cwd = std::path::PathBuf::from(&row.cwd);
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
        let run = KeptRun {
            run: spec.run.clone(),
            resumed: Some(Resumed { status: row.status, pending }),
        };
        let pid = kept.hello.as_ref().map(|h| h.pid);
        let session =
            SessionController::start_kept(sequencer, config, kept.agent, kept.outputs, Some(run));
        self.adopt(id, &session, pid, row.last_seq + 1).await?;
        self.release_when_finished(&session, dir.clone());
        Ok(())
    }

    /// The approvals session `id` still waits on, as they were asked.
    async fn pending_requests(
        &self,
        id: &str,
        events: &[Event],
    ) -> Result<Vec<ApprovalRequested>, HostError> {
        let key = id.to_owned();
        let pending = self.catalog(move |c| c.pending_approvals(&key)).await?;
        Ok(pending
            .iter()
            .filter_map(|p| {
                events.iter().find_map(|e| match &e.kind {
                    EventKind::ApprovalRequested(a) if a.request_id == p.request_id => {
                        Some(a.clone())
                    }
                    _ => None,
                })
            })
            .collect())
    }

    /// Releases the keeper in `dir` once the session's run has ended and its end is written; a
    /// writer that goes without that (the host stopping) leaves the keeper for the next host.
    fn release_when_finished(&self, session: &SessionHandle, dir: KeeperDir) {
        let keepers = self.keepers.clone();
        if let Ok(mut kept) = keepers.lock() {
            kept.insert(dir.path().to_owned());
        }
        let session = session.clone();
        tokio::spawn(async move {
            session.wait_finished().await;
            let state = session.state();
            if state.finished.is_none() || state.storage_error.is_some() {
                return;
            }
            let path = dir.path().to_owned();
            let released =
                tokio::task::spawn_blocking(move || release(&dir, RELEASE_DEADLINE)).await;
            match released {
                Ok(Ok(())) => {
                    if let Ok(mut kept) = keepers.lock() {
                        kept.remove(&path);
                    }
                }
                Ok(Err(e)) => eprintln!("nucleic: cannot release a keeper: {e}"),
                Err(e) => eprintln!("nucleic: releasing a keeper failed: {e}"),
            }
        });
    }

    /// Keeper directories no session of this host owns (left by a crash between a run's end
    /// and its release, or by a keeper that could not be adopted); `apply` removes them, and
    /// their keepers, seeing their directory gone, stop their agents and exit.
    pub(crate) fn stray_keepers(&self, apply: bool) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.config.keepers_dir()) else {
            return Vec::new();
        };
        let kept = self.keepers.lock().map(|k| k.clone()).unwrap_or_default();
        let mut strays = Vec::new();
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if kept.contains(&path) {
                continue;
            }
            if apply {
                let _ = std::fs::remove_dir_all(&path);
            }
            strays.push(path.to_string_lossy().into_owned());
        }
        strays.sort();
        strays
    }

    /// Stops the agent of session `id` if it is alive (waiting for a follow-up) and waits, at
    /// most [`IDLE_STOP_DEADLINE`], for its end to be recorded.
    pub(crate) async fn stop_idle_agent(&self, id: &str) -> Result<(), HostError> {
        let Some(handle) = self.live_handle(id) else { return Ok(()) };
        if handle.state().finished.is_some() {
            return Ok(());
        }
        handle.stop(Duration::from_secs(3), None).await?;
        tokio::time::timeout(IDLE_STOP_DEADLINE, handle.wait_finished()).await.map_err(|_| {
            HostError::Invalid(format!(
                "session {id}'s agent did not stop within {} s",
                IDLE_STOP_DEADLINE.as_secs()
            ))
        })?;
        Ok(())
    }

    /// Gives up on a keeper: stops its agent, removes its directory (the keeper then exits),
    /// and closes the session as interrupted if it is still open.
    async fn abandon(&self, id: &str, dir: &KeeperDir) {
        let key = id.to_owned();
        if let Ok(Some(row)) = self.catalog(move |c| c.session(&key)).await {
            stop_recorded_agent(&row);
            if !row.status.is_terminal() && self.live_handle(id).is_none() {
                let catalog = self.catalog.clone();
                let closed = blocking(move || {
                    let mut report = crate::lifecycle::recovery_report::RecoveryReport::default();
                    let transcript = PathBuf::from(&row.transcript);
                    crate::lifecycle::recovery::close_interrupted(
                        &catalog,
                        &row,
                        &transcript,
                        &mut report,
                    )
                })
                .await;
                if let Err(e) = closed {
                    eprintln!("nucleic: cannot close session {id}: {e}");
                }
                let _ = self.writes.send(id.to_owned());
            }
        }
        let _ = std::fs::remove_dir_all(dir.path());
    }
}

/// Stops the agent process recorded for `row`, if it is still that process.
fn stop_recorded_agent(row: &SessionRow) {
    if let Some(agent) = row.agent
        && nucleic_agents::process::is_running(agent.pid, agent.start_ticks)
    {
        nucleic_agents::process::kill_tree(agent.pid);
    }
}

async fn read_all(transcript: &Path) -> Result<Vec<Event>, HostError> {
    let path = transcript.to_owned();
    blocking(move || nucleic_store::read_transcript(&path, 1).map(|r| r.events)).await
}
