//! Session metadata written in an export's header, and what an import can read back.

use nucleic_protocol::{Backend, Event, EventKind, SessionStatus, Timestamp};
use serde::{Deserialize, Serialize};

/// Everything the "Session" and "Project" sections of an export show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportMeta {
    pub title: String,
    pub session_id: String,
    pub status: SessionStatus,
    pub backend: Backend,
    pub backend_session_id: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub branch: Option<String>,
    pub worktree: Option<String>,
    pub base_sha: Option<String>,
    pub last_seq: u64,
    pub transcript_path: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub project: Option<ProjectMeta>,
}

/// The project a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectMeta {
    pub name: String,
    pub root: String,
    pub default_branch: String,
}

/// What an import could learn about the session: from an export's header, or else from the
/// events themselves (`sessionCreated`, `sessionStarted`, first and last `at`). Absent = unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportedMeta {
    pub title: Option<String>,
    pub session_id: Option<String>,
    pub status: Option<SessionStatus>,
    pub backend: Option<Backend>,
    pub backend_session_id: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub branch: Option<String>,
    pub worktree: Option<String>,
    pub base_sha: Option<String>,
    pub last_seq: Option<u64>,
    pub transcript_path: Option<String>,
    pub created_at: Option<Timestamp>,
    pub updated_at: Option<Timestamp>,
    pub project: Option<ProjectMeta>,
    /// Where the agent ran (`sessionCreated.cwd`, else the last `sessionStarted.cwd`).
    pub cwd: Option<String>,
    /// The agent's version, when a line said (Claude transcripts: `version`).
    pub agent_version: Option<String>,
}

impl ImportedMeta {
    /// Fills every field still unknown from the events.
    pub(crate) fn fill_from_events(&mut self, events: &[Event]) {
        let (first, last) = match (events.first(), events.last()) {
            (Some(f), Some(l)) => (f, l),
            _ => return,
        };
        self.session_id.get_or_insert_with(|| first.session_id.clone());
        self.backend.get_or_insert(first.backend);
        self.last_seq.get_or_insert(last.seq);
        self.created_at.get_or_insert(first.at);
        self.updated_at.get_or_insert(last.at);
        let mut title = None;
        for event in events {
            match &event.kind {
                EventKind::SessionCreated(c) => {
                    title.get_or_insert_with(|| c.title.clone());
                    self.cwd.get_or_insert_with(|| c.cwd.clone());
                    if let Some(w) = &c.worktree {
                        self.worktree.get_or_insert_with(|| w.path.clone());
                        self.branch.get_or_insert_with(|| w.branch.clone());
                        self.base_sha.get_or_insert_with(|| w.base_sha.clone());
                    }
                }
                EventKind::SessionUpdated(u) => {
                    if let Some(t) = &u.title {
                        title = Some(t.clone());
                    }
                }
                _ => {}
            }
        }
        if let Some(t) = title {
            self.title.get_or_insert(t);
        }
        // The newest agent view wins for what the agent reports about itself.
        let started = events.iter().rev().find_map(|e| match &e.kind {
            EventKind::SessionStarted(s) => Some(s),
            _ => None,
        });
        if let Some(s) = started {
            self.backend_session_id.get_or_insert_with(|| s.backend_session_id.clone());
            self.model.get_or_insert_with(|| s.model.clone());
            self.cwd.get_or_insert_with(|| s.cwd.clone());
            if let Some(v) = &s.agent_version {
                self.agent_version.get_or_insert_with(|| v.clone());
            }
        }
    }
}

/// The human spelling of a status, as the seed's header shows it ("Awaiting input").
pub fn status_label(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Idle => "Idle",
        SessionStatus::Running => "Running",
        SessionStatus::AwaitingApproval => "Awaiting approval",
        SessionStatus::AwaitingInput => "Awaiting input",
        SessionStatus::Finished => "Finished",
        SessionStatus::Error => "Error",
    }
}

/// Reads a status back from its human label or its wire name (case-insensitive).
pub fn parse_status(text: &str) -> Option<SessionStatus> {
    const ALL: [SessionStatus; 6] = [
        SessionStatus::Idle,
        SessionStatus::Running,
        SessionStatus::AwaitingApproval,
        SessionStatus::AwaitingInput,
        SessionStatus::Finished,
        SessionStatus::Error,
    ];
    let text = text.trim();
    ALL.into_iter().find(|s| {
        status_label(*s).eq_ignore_ascii_case(text) || s.as_str().eq_ignore_ascii_case(text)
    })
}

/// Reads a backend back from its wire name.
pub(crate) fn parse_backend(text: &str) -> Option<Backend> {
    [Backend::ClaudeCode, Backend::Codex, Backend::Simulated]
        .into_iter()
        .find(|b| b.as_str().eq_ignore_ascii_case(text.trim()))
}
