//! Sessions made outside Nucleic: a project's own Claude Code and Codex sessions, found in the
//! CLIs' folders (`nucleic_discover`), and adopting one — carrying it on as a Nucleic session in a
//! new worktree off the checkout's current commit, its history the start of the transcript, its
//! conversation forked by the CLI's own resume so the original is left as it was.

use std::path::PathBuf;

use nucleic_agents::SessionFiles;
use nucleic_core::Draft;
use nucleic_discover::{Discovery, Homes, Limits, OutsideSession, discover, running_agents};
use nucleic_git::{Repo, SetupSpec, WorktreeSpec};
use nucleic_protocol::{EventKind, SessionCreated, SessionSummary, SessionUpdated};

use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::sessions::names::slug_for;
use crate::sessions::start::worktree_info;

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
    /// In the folder it ran in, the conversation itself carried on under its lock
    /// (`in_place.rs`), instead of a fork in a new worktree.
    pub in_place: bool,
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
        if request.in_place {
            return self.adopt_in_place(project, outside, request, by).await;
        }
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
        // Refused before a worktree or a session exists, not when the agent fails to start.
        if !self.available(outside.backend) {
            return Err(HostError::Invalid(description.not_installed()));
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
            worktree: Some(worktree_info(&worktree)),
            model: outside.model.clone(),
            permission_mode: None,
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
            parent_session_id: None,
            mode,
        };
        let mut drafts = vec![host_draft(EventKind::SessionCreated(created))];
        drafts.extend(history);
        drafts.push(note_draft(adoption_note(&outside), by));
        let transcript = self.config.transcript_path(&session_id);
        self.write_events(&session_id, outside.backend, &transcript, drafts).await?;
        let turn = self.writer_turns.take(&session_id).await?;
        let session = self.resume_forked(&session_id, &outside.id).await?;
        drop(turn);
        self.turn_started(&session_id).await;
        session.send_user_text(&request.prompt).await?;
        self.session_summary(&session_id).await
    }

    /// Before session `row`'s agent resumes its conversation: what the conversation got outside
    /// Nucleic since the transcript's latest moment of it — a handoff, then `claude --resume` in the
    /// person's terminal — imported from the CLI's transcript and recorded after a note saying
    /// so, so the transcript stays the whole conversation. The CLI's file is only read; nothing
    /// when it has nothing newer (a second resume imports nothing twice). The file is the
    /// agent's as much as the person's: what it says is shown, never taken as anyone's answer.
    pub(crate) async fn catch_up_outside(
        &self,
        row: &nucleic_catalog::SessionRow,
    ) -> Result<(), HostError> {
        let Some(conversation) = row.backend_session_id.clone() else { return Ok(()) };
        let (homes, cwd, id) = (self.agent_homes(), PathBuf::from(&row.cwd), row.id.clone());
        let transcript = PathBuf::from(&row.transcript);
        let backend = row.backend;
        let drafts = blocking(move || {
            let found =
                nucleic_discover::claude_conversation(&homes, &cwd, &conversation, HISTORY_LIMIT)
                    .map_err(|e| HostError::Invalid(e.to_string()))?;
            let Some((path, text)) = found else { return Ok(Vec::new()) };
            let events = nucleic_store::read_transcript(&transcript, 1)?.events;
            // The conversation's latest moment the transcript has (what the live agent sent is
            // stamped when received, after the CLI wrote it; what was imported keeps its time).
            let Some(since) =
                events.iter().filter(|e| is_conversation(&e.kind)).map(|e| e.at).max()
            else {
                return Ok(Vec::new());
            };
            let imported = nucleic_transfer::import::claude_transcript(&text, &id)
                .map_err(|e| HostError::Invalid(format!("cannot read {}: {e}", path.display())))?;
            if imported.events.first().is_some_and(|e| e.backend != backend) {
                return Ok(Vec::new());
            }
            // Only a conversation that went on: a prompt, and what followed it (the CLI's own
            // bookkeeping lines after a turn are not news).
            let newer: Vec<Draft> = history(imported.events)
                .into_iter()
                .filter(|d| d.at.is_some_and(|at| at > since) && is_conversation(&d.kind))
                .collect();
            if !newer.iter().any(|d| matches!(d.kind, EventKind::UserText(_))) {
                return Ok(Vec::new());
            }
            let note = format!(
                "{} events from outside Nucleic since {} (the conversation went on in the \
                 terminal), from {}",
                newer.len(),
                since,
                path.display()
            );
            let mut drafts = vec![note_draft(note, "terminal")];
            drafts.extend(newer);
            Ok::<_, HostError>(drafts)
        })
        .await?;
        if drafts.is_empty() {
            return Ok(());
        }
        let transcript = PathBuf::from(&row.transcript);
        self.write_events(&row.id, row.backend, &transcript, drafts).await.map(|_| ())
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

/// The largest CLI transcript read whole (a conversation's history).
const HISTORY_LIMIT: u64 = 256 * 1024 * 1024;

/// The outside session's history as drafts of the new session.
pub(crate) async fn read_history(
    outside: &OutsideSession,
    session_id: &str,
) -> Result<Vec<Draft>, HostError> {
    let (path, id) = (outside.path.clone(), session_id.to_owned());
    let description = nucleic_agents::describe(outside.backend);
    let format = description.session_files.ok_or_else(|| {
        HostError::Invalid(format!("the {} backend's sessions are not read in", description.label))
    })?;
    let imported = blocking(move || {
        let read = match format {
            SessionFiles::ClaudeTranscripts => nucleic_transfer::import::claude_transcript_file,
            SessionFiles::CodexRollouts => nucleic_transfer::import::codex_rollout_file,
        };
        read(&path, &id)
            .map_err(|e| HostError::Invalid(format!("cannot read {}: {e}", path.display())))
    })
    .await?;
    Ok(history(imported.events))
}

/// Imported events as drafts: messages, tool calls and turns — not the session's own start (a
/// Nucleic session has its own, and the conversation an import names is the CLI's).
fn history(events: Vec<nucleic_protocol::Event>) -> Vec<Draft> {
    events
        .into_iter()
        .filter(|e| !matches!(e.kind, EventKind::SessionCreated(_) | EventKind::SessionStarted(_)))
        .map(|e| Draft { native_type: e.native_type, kind: e.kind, at: Some(e.at), origin: None })
        .collect()
}

/// What a turn of the conversation is made of.
fn is_conversation(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::UserText(_)
            | EventKind::AssistantText(_)
            | EventKind::Thinking(_)
            | EventKind::ToolCallStarted(_)
            | EventKind::ToolCallCompleted(_)
            | EventKind::ToolResult(_)
            | EventKind::TurnCompleted(_)
    )
}

fn host_draft(kind: EventKind) -> Draft {
    Draft::host(kind)
}

/// A `sessionUpdated` that only says something.
pub(crate) fn note_draft(note: String, by: &str) -> Draft {
    host_draft(EventKind::SessionUpdated(SessionUpdated {
        title: None,
        archived: None,
        mode: None,
        note: Some(note),
        by: by.to_owned(),
    }))
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

/// A discovery as the protocol says it (`outsideSessions`' result).
pub(crate) fn on_the_wire(found: Discovery) -> nucleic_protocol::OutsideSessions {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let sessions = found
        .sessions
        .into_iter()
        .map(|s| {
            let (turns, turns_exact) = match s.turns {
                nucleic_discover::Turns::Exact(n) => (n, true),
                nucleic_discover::Turns::AtLeast(n) => (n, false),
            };
            nucleic_protocol::OutsideSession {
                backend: s.backend,
                adoptable: nucleic_agents::describe(s.backend).capabilities.fork,
                id: s.id,
                path: s.path.to_string_lossy().into_owned(),
                cwd: s.cwd.to_string_lossy().into_owned(),
                cwd_exists: s.cwd_exists,
                title: s.title,
                started_at: s.started_at,
                last_at: s.last_at,
                turns,
                turns_exact,
                model: s.model,
                cli_version: s.cli_version,
                live: s.live.map(|p| nucleic_protocol::LiveHolder {
                    pid: p.pid,
                    program: p.program,
                    why: p.why,
                }),
                unknown_lines: count(s.unknown_lines),
                bad_lines: count(s.bad_lines),
            }
        })
        .collect();
    nucleic_protocol::OutsideSessions {
        sessions,
        examined: count(found.examined),
        skipped: found
            .skipped
            .into_iter()
            .map(|s| nucleic_protocol::SkippedSessionFile {
                path: s.path.to_string_lossy().into_owned(),
                why: s.why,
            })
            .collect(),
        truncated: found.truncated,
    }
}
