//! Folding a session's events into its row and approvals: the catalog as a view of transcripts.

use std::path::Path;

use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Event, EventKind, SessionCreated, SessionStatus,
};
use rusqlite::{Connection, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext, to_i64};
use crate::projects::{self, ProjectRow, ProjectSettings};
use crate::sessions::{self, SessionRow};
use crate::wire::{path_str, wire_name};

/// The title of a session whose transcript has no `sessionCreated` event.
pub const UNTITLED: &str = "(untitled)";

/// What one fold did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FoldStats {
    /// Events newer than the row's `last_seq` (the others were skipped as already folded).
    pub applied: usize,
    /// Projects created because a `sessionCreated` named one the catalog lacked.
    pub projects_created: usize,
}

impl Catalog {
    /// Folds `events` (of one session, in seq order) into the session's row, in one transaction.
    ///
    /// `transcript` is the session's transcript file; it is recorded when the row is created
    /// (or re-created by `sessionCreated`). The backend comes from the events themselves. Events
    /// with `seq <= last_seq` of the row are skipped, so re-applying is harmless. A row that does
    /// not exist yet is created on the first event: from `sessionCreated` when that comes first,
    /// else as [`UNTITLED`] with an empty cwd. A `sessionCreated` naming a project the catalog
    /// lacks recreates it from `projectID` + `projectRoot` (name = last path component, branch
    /// `main`, the session's backend); one with a known root but another id is linked to the
    /// existing project. Events of another session are refused
    /// ([`CatalogError::SessionMismatch`]) and nothing is written.
    pub fn apply_events(
        &self,
        session_id: &str,
        transcript: &Path,
        events: &[Event],
    ) -> Result<()> {
        let transcript = path_str(transcript)?;
        let mut conn = self.conn();
        let tx = conn.transaction().ctx("begin fold")?;
        fold(&tx, session_id, transcript, events)?;
        tx.commit().ctx("commit fold")
    }
}

/// The fold itself, on the caller's transaction.
pub(crate) fn fold(
    conn: &Connection,
    session_id: &str,
    transcript: &str,
    events: &[Event],
) -> Result<FoldStats> {
    let mut stats = FoldStats::default();
    let mut row = sessions::by_id(conn, session_id)?;
    let mut approvals_touched = false;
    for event in events {
        if event.session_id != session_id {
            return Err(CatalogError::SessionMismatch {
                expected: session_id.to_owned(),
                got: event.session_id.clone(),
            });
        }
        if row.as_ref().is_some_and(|r| event.seq <= r.last_seq) {
            continue;
        }
        let r = row.get_or_insert_with(|| base_row(session_id, transcript, event));
        let at = event.at.unix_millis();
        match &event.kind {
            EventKind::SessionCreated(c) => {
                stats.projects_created += created(conn, r, c, event, transcript)?;
            }
            EventKind::SessionStarted(s) => {
                r.backend_session_id = Some(s.backend_session_id.clone());
                r.model = Some(s.model.clone());
                if let Some(mode) = &s.permission_mode {
                    r.permission_mode = Some(mode.clone());
                }
            }
            EventKind::SettingsChanged(s) => {
                if let Some(model) = &s.model {
                    r.model = Some(model.clone());
                }
                if let Some(mode) = &s.permission_mode {
                    r.permission_mode = Some(mode.clone());
                }
            }
            EventKind::StatusChanged(s) => r.status = s.status,
            EventKind::Usage(u) => r.cost_usd += u.cost_usd.unwrap_or(0.0),
            EventKind::ApprovalRequested(a) => {
                requested(conn, session_id, a, event.seq)?;
                approvals_touched = true;
            }
            EventKind::ApprovalResolved(a) => {
                // An approved plan runs in the mode chosen with it (kept across a resume).
                if let Some(mode) = a.mode {
                    r.mode = Some(mode.as_str().to_owned());
                }
                resolved(conn, session_id, a, event.seq)?;
                approvals_touched = true;
            }
            EventKind::RunFinished(f) => r.outcome = Some(f.outcome),
            EventKind::SessionUpdated(u) => {
                if let Some(title) = &u.title {
                    r.title = title.clone();
                }
                if let Some(archived) = u.archived {
                    r.archived = archived;
                }
                if let Some(mode) = &u.mode {
                    r.mode = Some(mode.clone());
                }
            }
            EventKind::WorktreeReclaimed(_) => r.worktree_reclaimed = true,
            EventKind::WorktreeRestored(_) => r.worktree_reclaimed = false,
            // Nothing the catalog indexes: they only move last_seq / updated_at.
            // (`turnCompleted` repeats the turn's usage: cost is summed from `usage` alone.)
            EventKind::UserText(_)
            | EventKind::AssistantText(_)
            | EventKind::Thinking(_)
            | EventKind::ToolCallStarted(_)
            | EventKind::ToolInputDelta(_)
            | EventKind::ToolCallCompleted(_)
            | EventKind::ToolResult(_)
            | EventKind::TurnCompleted(_)
            | EventKind::RateLimit(_)
            | EventKind::ApiRetry(_)
            | EventKind::PermissionDenied(_)
            | EventKind::Confinement(_)
            | EventKind::EgressRefused(_)
            | EventKind::InterruptRequested(_)
            | EventKind::Error(_)
            | EventKind::Stderr(_)
            | EventKind::WorktreeFinished(_)
            | EventKind::CheckStarted(_)
            | EventKind::CheckOutput(_)
            | EventKind::CheckFinished(_)
            | EventKind::Report(_)
            | EventKind::PullRequestOpened(_)
            | EventKind::ReviewSent(_)
            | EventKind::Raw(_) => {}
        }
        r.last_seq = event.seq;
        r.updated_at = at;
        stats.applied += 1;
    }
    if let Some(mut r) = row {
        if approvals_touched {
            r.pending_approvals = pending_count(conn, session_id)?;
        }
        if stats.applied > 0 {
            sessions::upsert(conn, &r)?;
        }
    }
    Ok(stats)
}

/// The row a session starts from before (or without) its `sessionCreated`.
fn base_row(session_id: &str, transcript: &str, first: &Event) -> SessionRow {
    let at = first.at.unix_millis();
    SessionRow {
        id: session_id.to_owned(),
        project_id: None,
        title: UNTITLED.to_owned(),
        backend: first.backend,
        model: None,
        permission_mode: None,
        status: SessionStatus::Idle,
        backend_session_id: None,
        cwd: String::new(),
        worktree: None,
        transcript: transcript.to_owned(),
        last_seq: 0,
        pending_approvals: 0,
        cost_usd: 0.0,
        outcome: None,
        archived: false,
        read_only: false,
        continues_session_id: None,
        agent: None,
        created_at: at,
        updated_at: at,
        disk: None,
        worktree_reclaimed: false,
        mode: None,
        parent_session_id: None,
    }
}

/// Applies `sessionCreated`; returns how many projects it had to create (0 or 1).
fn created(
    conn: &Connection,
    r: &mut SessionRow,
    c: &SessionCreated,
    event: &Event,
    transcript: &str,
) -> Result<usize> {
    let (project_id, new_projects) = resolve_project(conn, c, event)?;
    r.project_id = project_id;
    r.title = c.title.clone();
    r.backend = event.backend;
    r.cwd = c.cwd.clone();
    r.worktree = c.worktree.clone();
    r.model = c.model.clone();
    r.permission_mode = c.permission_mode.clone();
    r.mode = c.mode.clone();
    r.read_only = c.read_only;
    r.continues_session_id = c.continues_session_id.clone();
    r.parent_session_id = c.parent_session_id.clone();
    r.status = SessionStatus::Idle;
    r.transcript = transcript.to_owned();
    r.created_at = event.at.unix_millis();
    Ok(new_projects)
}

/// The project a `sessionCreated` belongs to, creating it when only the transcript knows it.
fn resolve_project(
    conn: &Connection,
    c: &SessionCreated,
    event: &Event,
) -> Result<(Option<String>, usize)> {
    if let Some(id) = &c.project_id
        && projects::by_id(conn, id)?.is_some()
    {
        return Ok((Some(id.clone()), 0));
    }
    let Some(root) = &c.project_root else {
        // An id without a root cannot be recreated; the session stays project-less.
        return Ok((None, 0));
    };
    if let Some(existing) = projects::by_root(conn, root)? {
        return Ok((Some(existing.id), 0));
    }
    let Some(id) = &c.project_id else {
        return Ok((None, 0));
    };
    let name = Path::new(root)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| root.clone());
    projects::insert(
        conn,
        &ProjectRow {
            id: id.clone(),
            name,
            root: root.clone(),
            settings: ProjectSettings::defaults(event.backend),
            created_at: event.at.unix_millis(),
        },
    )?;
    Ok((Some(id.clone()), 1))
}

fn requested(conn: &Connection, session_id: &str, a: &ApprovalRequested, seq: u64) -> Result<()> {
    let input = serde_json::to_string(&a.input)
        .map_err(|source| CatalogError::Json { what: "encode approval input", source })?;
    conn.prepare_cached(
        "INSERT INTO approvals (session_id, request_id, tool_name, input, requested_seq) \
         VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id, request_id) DO NOTHING",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![session_id, a.request_id, a.tool_name, input, to_i64_sql(seq)?])
    })
    .ctx("record approval request")?;
    Ok(())
}

fn resolved(conn: &Connection, session_id: &str, a: &ApprovalResolved, seq: u64) -> Result<()> {
    let decision = wire_name("encode decision", &a.decision)?;
    // A resolution without its request (e.g. a trimmed transcript) has nothing to update.
    conn.prepare_cached(
        "UPDATE approvals SET decision = ?, decided_by = ?, resolved_seq = ? \
         WHERE session_id = ? AND request_id = ? AND decision IS NULL",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![decision, a.by, to_i64_sql(seq)?, session_id, a.request_id])
    })
    .ctx("record approval resolution")?;
    Ok(())
}

fn pending_count(conn: &Connection, session_id: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM approvals WHERE session_id = ? AND decision IS NULL")
        .and_then(|mut stmt| stmt.query_row([session_id], |row| row.get(0)))
        .ctx("count pending approvals")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn to_i64_sql(seq: u64) -> rusqlite::Result<i64> {
    to_i64("seq", seq).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}
