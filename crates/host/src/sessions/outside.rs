//! Sessions made outside Nucleic: a project's own Claude Code and Codex sessions, found in the
//! CLIs' folders (`nucleic_discover`), and adopting one — carrying it on as a Nucleic session in a
//! new worktree off the checkout's current commit, its history the start of the transcript, its
//! conversation forked by the CLI's own resume so the original is left as it was.

use std::path::PathBuf;

use nucleic_core::Draft;
use nucleic_discover::{Discovery, Homes, Limits, OutsideSession, discover, running_agents};
use nucleic_git::{Repo, SetupSpec, WorktreeSpec};
use nucleic_protocol::WorktreeInfo;
use nucleic_protocol::{EventKind, SessionCreated, SessionSummary, SessionUpdated};

use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::sessions::names::slug_for;

/// What adopting an outside session asks for.
#[derive(Debug, Clone)]
pub struct AdoptOutside {
    pub project_id: String,
    /// The CLI's own session id (`OutsideSession::id`).
    pub session: String,
    /// The first new turn.
    pub prompt: String,
    /// Nucleic's mode for it (else the project's).
    pub mode: Option<String>,
}

impl Context {
    /// The person's own sessions of project `project_id` that the agent CLIs keep (under the
    /// agents' home: `agent_env`'s `HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`), newest first, with
    /// the live process on each. Bounded in time and files (`nucleic_discover::Limits`).
    pub async fn outside_sessions(&self, project_id: &str) -> Result<Discovery, HostError> {
        let project = self.project(project_id).await?;
        let homes = self.agent_homes();
        let root = PathBuf::from(&project.root);
        blocking(move || {
            discover(&root, &homes, Limits::default(), &running_agents())
                .map_err(|e| HostError::Invalid(e.to_string()))
        })
        .await
    }

    /// Carries outside session `request.session` on as a new Nucleic session: a worktree off
    /// the checkout's current commit, the session's history first in the transcript, the agent
    /// resumed on a fork of its conversation with Nucleic's policy from the first new call, and
    /// `request.prompt` its first new turn. The original conversation's file is only read.
    pub async fn adopt_outside(
        &self,
        request: AdoptOutside,
        by: &str,
    ) -> Result<SessionSummary, HostError> {
        let project = self.project(&request.project_id).await?;
        let found = self.outside_sessions(&project.id).await?;
        let outside = found.sessions.into_iter().find(|s| s.id == request.session).ok_or_else(|| {
            HostError::NotFound(format!(
                "no session {} of project {} made outside Nucleic (see `nucleic project sessions {}`)",
                request.session, project.name, project.name
            ))
        })?;
        // Carrying it on without a fork would write into the person's own conversation.
        let description = nucleic_agents::describe(outside.backend);
        if !description.capabilities.fork {
            return Err(HostError::Invalid(format!(
                "adopting a {} session is not supported yet: Nucleic's {} backend cannot fork its \
                 conversation, and the original must be left as it was; `nucleic import {}` shows \
                 it read-only",
                description.label,
                description.label,
                outside.path.display()
            )));
        }
        let mode = self.start_mode(outside.backend, &project.id, request.mode.as_deref())?;
        let session_id = uuid::Uuid::new_v4().to_string();
        let history = read_history(&outside, &session_id).await?;
        let title = outside.title.clone().unwrap_or_else(|| "adopted session".to_owned());
        let spec = WorktreeSpec {
            slug: slug_for(&title, &session_id),
            // The checkout's current commit, resolved once.
            base_ref: "HEAD".to_owned(),
            copy_files: project.settings.copy_files.iter().map(PathBuf::from).collect(),
            setup: project.settings.setup_script.clone().map(|script| SetupSpec {
                script,
                timeout: project
                    .settings
                    .setup_timeout_secs
                    .map_or(self.config.setup_timeout, std::time::Duration::from_secs),
                log_path: self.config.setup_log_path(&session_id),
            }),
        };
        let root = PathBuf::from(&project.root);
        let worktree =
            blocking(move || Ok::<_, HostError>(Repo::open(&root)?.create_worktree(&spec)?))
                .await?;
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
            model: outside.model.clone(),
            permission_mode: None,
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
            mode,
        };
        let mut drafts = vec![host_draft(EventKind::SessionCreated(created))];
        drafts.extend(history);
        drafts.push(host_draft(EventKind::SessionUpdated(SessionUpdated {
            title: None,
            archived: None,
            mode: None,
            note: Some(adoption_note(&outside)),
            by: by.to_owned(),
        })));
        let transcript = self.config.transcript_path(&session_id);
        self.write_events(&session_id, outside.backend, &transcript, drafts).await?;
        let turn = self.writer_turns.take(&session_id).await?;
        let session = self.resume_forked(&session_id, &outside.id).await?;
        drop(turn);
        self.turn_started(&session_id).await;
        session.send_user_text(&request.prompt).await?;
        self.session_summary(&session_id).await
    }

    /// Where the agents' CLIs keep their sessions: the agents' environment first, then the
    /// host's.
    fn agent_homes(&self) -> Homes {
        let env = self.config.agent_env.clone();
        Homes::from_env(move |name| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .or_else(|| std::env::var(name).ok())
        })
    }
}

/// The outside session's history as drafts of the new session: its messages, tool calls and
/// turns — not its own start (the new session has one, and the conversation it names is the
/// original's, which only a fork may continue).
async fn read_history(outside: &OutsideSession, session_id: &str) -> Result<Vec<Draft>, HostError> {
    let (path, id) = (outside.path.clone(), session_id.to_owned());
    let imported = blocking(move || {
        nucleic_transfer::import::claude_transcript_file(&path, &id)
            .map_err(|e| HostError::Invalid(format!("cannot read {}: {e}", path.display())))
    })
    .await?;
    Ok(imported
        .events
        .into_iter()
        .filter(|e| !matches!(e.kind, EventKind::SessionCreated(_) | EventKind::SessionStarted(_)))
        .map(|e| Draft { native_type: e.native_type, kind: e.kind, at: Some(e.at), origin: None })
        .collect())
}

fn host_draft(kind: EventKind) -> Draft {
    Draft::host(kind)
}

/// What the transcript says about where the session came from.
fn adoption_note(outside: &OutsideSession) -> String {
    let live = match &outside.live {
        Some(p) => format!(
            " A live {} (pid {}) holds the original: the fork carries what it had written.",
            p.program, p.pid
        ),
        None => String::new(),
    };
    format!(
        "Adopted from the {} session {} ({}), forked: the original conversation is left as it \
         was, and every new tool call passes Nucleic's policy.{live}",
        outside.backend.as_str(),
        outside.id,
        outside.path.display()
    )
}
