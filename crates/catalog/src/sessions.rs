//! Session rows (one per transcript) and their approvals: typed reads and writes.

use std::sync::LazyLock;

use nucleic_protocol::{Backend, DecisionKind, DiskUsage, RunOutcome, SessionStatus, WorktreeInfo};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext, to_i64};
use crate::wire::{from_wire, to_u64, wire_name};

/// The agent process a session's host started, identified well enough to survive pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentProcess {
    pub pid: u32,
    /// Field 22 (`starttime`) of `/proc/<pid>/stat`: a live pid with another start time is a
    /// different process.
    pub start_ticks: u64,
}

/// One session, as folded from its transcript (plus `agent`, which only the host knows).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub project_id: Option<String>,
    pub title: String,
    pub backend: Backend,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub status: SessionStatus,
    pub backend_session_id: Option<String>,
    pub cwd: String,
    /// Stored as the `worktree_path`, `branch`, `base_ref`, `base_sha` columns.
    pub worktree: Option<WorktreeInfo>,
    /// The transcript file (`<sessions>/<id>/transcript.jsonl`).
    pub transcript: String,
    /// The highest event seq folded into this row; events at or below it are skipped.
    pub last_seq: u64,
    pub pending_approvals: u64,
    /// Sum of `usage.costUSD` over the session.
    pub cost_usd: f64,
    /// How the last run ended.
    pub outcome: Option<RunOutcome>,
    pub archived: bool,
    pub read_only: bool,
    pub continues_session_id: Option<String>,
    pub agent: Option<AgentProcess>,
    pub created_at: i64,
    pub updated_at: i64,
    /// What the worktree took when last measured (host-only, like `agent`).
    pub disk: Option<DiskUsage>,
    /// Its directory was reclaimed (folded from `worktreeReclaimed` / `worktreeRestored`).
    pub worktree_reclaimed: bool,
    /// The policy mode (`sessionCreated.mode`, then each `sessionUpdated.mode`).
    pub mode: Option<String>,
    /// The session whose agent started this one (`sessionCreated.parentSessionID`).
    pub parent_session_id: Option<String>,
}

/// Which sessions [`Catalog::list_sessions`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    pub project_id: Option<String>,
    pub include_archived: bool,
}

/// One approval request of a session and, once answered, its resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRow {
    pub session_id: String,
    pub request_id: String,
    pub tool_name: String,
    /// The tool input as requested (JSON).
    pub input: serde_json::Value,
    pub requested_seq: u64,
    /// `None` while pending.
    pub decision: Option<DecisionKind>,
    pub decided_by: Option<String>,
    pub resolved_seq: Option<u64>,
}

const COLUMNS: &str = "id, project_id, title, backend, model, permission_mode, status, \
    backend_session_id, cwd, worktree_path, branch, base_ref, base_sha, transcript, last_seq, \
    pending_approvals, cost_usd, outcome, archived, read_only, continues_session_id, agent_pid, \
    agent_start_ticks, created_at, updated_at, disk_bytes, build_bytes, disk_measured_at, \
    worktree_reclaimed, mode, parent_session_id";

static UPSERT: LazyLock<String> = LazyLock::new(|| {
    let updates = COLUMNS
        .split(", ")
        .skip(1)
        .map(|c| format!("{c} = excluded.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let slots = vec!["?"; COLUMNS.split(", ").count()].join(",");
    format!(
        "INSERT INTO sessions ({COLUMNS}) VALUES ({slots}) ON CONFLICT(id) DO UPDATE SET {updates}"
    )
});

fn from_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let worktree = match row.get::<_, Option<String>>(9)? {
        Some(path) => Some(WorktreeInfo {
            path,
            branch: row.get::<_, Option<String>>(10)?.unwrap_or_default(),
            base_ref: row.get::<_, Option<String>>(11)?.unwrap_or_default(),
            base_sha: row.get::<_, Option<String>>(12)?.unwrap_or_default(),
        }),
        None => None,
    };
    let agent = match (row.get::<_, Option<i64>>(21)?, row.get::<_, Option<i64>>(22)?) {
        (Some(pid), Some(ticks)) => Some(AgentProcess {
            pid: u32::try_from(pid)
                .map_err(|_| rusqlite::Error::IntegralValueOutOfRange(21, pid))?,
            start_ticks: to_u64(22, ticks)?,
        }),
        _ => None,
    };
    Ok(SessionRow {
        id: row.get(0)?,
        project_id: row.get(1)?,
        title: row.get(2)?,
        backend: from_wire(3, row.get(3)?)?,
        model: row.get(4)?,
        permission_mode: row.get(5)?,
        status: from_wire(6, row.get(6)?)?,
        backend_session_id: row.get(7)?,
        cwd: row.get(8)?,
        worktree,
        transcript: row.get(13)?,
        last_seq: to_u64(14, row.get(14)?)?,
        pending_approvals: to_u64(15, row.get(15)?)?,
        cost_usd: row.get(16)?,
        outcome: row.get::<_, Option<String>>(17)?.map(|o| from_wire(17, o)).transpose()?,
        archived: row.get(18)?,
        read_only: row.get(19)?,
        continues_session_id: row.get(20)?,
        agent,
        created_at: row.get(23)?,
        updated_at: row.get(24)?,
        disk: match (row.get::<_, Option<i64>>(25)?, row.get::<_, Option<i64>>(27)?) {
            (Some(bytes), Some(measured_at)) => Some(DiskUsage {
                bytes: to_u64(25, bytes)?,
                build_bytes: to_u64(26, row.get::<_, Option<i64>>(26)?.unwrap_or(0))?,
                measured_at,
            }),
            _ => None,
        },
        worktree_reclaimed: row.get(28)?,
        mode: row.get(29)?,
        parent_session_id: row.get(30)?,
    })
}

/// Inserts or fully replaces `s` (all columns).
pub(crate) fn upsert(conn: &Connection, s: &SessionRow) -> Result<()> {
    let wt = s.worktree.as_ref();
    let outcome = s.outcome.map(|o| wire_name("encode run outcome", &o)).transpose()?;
    let (pid, ticks) = match s.agent {
        Some(a) => (Some(i64::from(a.pid)), Some(to_i64("agent_start_ticks", a.start_ticks)?)),
        None => (None, None),
    };
    let last_seq = to_i64("last_seq", s.last_seq)?;
    let pending = to_i64("pending_approvals", s.pending_approvals)?;
    let disk = s
        .disk
        .map(|d| {
            Ok::<_, CatalogError>((
                to_i64("disk_bytes", d.bytes)?,
                to_i64("build_bytes", d.build_bytes)?,
                d.measured_at,
            ))
        })
        .transpose()?;
    conn.prepare_cached(&UPSERT)
        .and_then(|mut stmt| {
            stmt.execute(params![
                s.id,
                s.project_id,
                s.title,
                s.backend.as_str(),
                s.model,
                s.permission_mode,
                s.status.as_str(),
                s.backend_session_id,
                s.cwd,
                wt.map(|w| &w.path),
                wt.map(|w| &w.branch),
                wt.map(|w| &w.base_ref),
                wt.map(|w| &w.base_sha),
                s.transcript,
                last_seq,
                pending,
                s.cost_usd,
                outcome,
                s.archived,
                s.read_only,
                s.continues_session_id,
                pid,
                ticks,
                s.created_at,
                s.updated_at,
                disk.map(|d| d.0),
                disk.map(|d| d.1),
                disk.map(|d| d.2),
                s.worktree_reclaimed,
                s.mode,
                s.parent_session_id,
            ])
        })
        .ctx("write session")?;
    Ok(())
}

pub(crate) fn by_id(conn: &Connection, id: &str) -> Result<Option<SessionRow>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE id = ?"))
        .and_then(|mut stmt| stmt.query_row([id], from_row).optional())
        .ctx("read session")
}

fn approval_from_row(row: &Row<'_>) -> rusqlite::Result<ApprovalRow> {
    let input: String = row.get(3)?;
    Ok(ApprovalRow {
        session_id: row.get(0)?,
        request_id: row.get(1)?,
        tool_name: row.get(2)?,
        input: serde_json::from_str(&input).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e))
        })?,
        requested_seq: to_u64(4, row.get(4)?)?,
        decision: row.get::<_, Option<String>>(5)?.map(|d| from_wire(5, d)).transpose()?,
        decided_by: row.get(6)?,
        resolved_seq: row.get::<_, Option<i64>>(7)?.map(|v| to_u64(7, v)).transpose()?,
    })
}

impl Catalog {
    /// Inserts or replaces a whole session row. Prefer [`Catalog::apply_events`], which keeps
    /// the row a fold of the transcript; this is for host-only state and tests.
    pub fn upsert_session(&self, session: &SessionRow) -> Result<()> {
        upsert(&self.conn(), session)
    }

    /// The session with this id.
    pub fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        by_id(&self.conn(), id)
    }

    /// Sessions matching `filter`, most recently updated first.
    pub fn list_sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionRow>> {
        let conn = self.conn();
        conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM sessions WHERE (?1 IS NULL OR project_id = ?1) \
             AND (?2 OR archived = 0) ORDER BY updated_at DESC, id"
        ))
        .and_then(|mut stmt| {
            stmt.query_map(params![filter.project_id, filter.include_archived], from_row)?.collect()
        })
        .ctx("list sessions")
    }

    /// Records what the session's worktree takes on disk (only those columns).
    pub fn set_disk(&self, id: &str, disk: DiskUsage) -> Result<()> {
        let conn = self.conn();
        let n = conn
            .execute(
                "UPDATE sessions SET disk_bytes = ?, build_bytes = ?, disk_measured_at = ? \
                 WHERE id = ?",
                params![
                    to_i64("disk_bytes", disk.bytes)?,
                    to_i64("build_bytes", disk.build_bytes)?,
                    disk.measured_at,
                    id
                ],
            )
            .ctx("record disk use")?;
        if n == 0 {
            return Err(CatalogError::SessionNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    /// Records (or clears, with `None`) the agent process running a session.
    pub fn set_agent_process(&self, id: &str, agent: Option<AgentProcess>) -> Result<()> {
        let (pid, ticks) = match agent {
            Some(a) => (Some(i64::from(a.pid)), Some(to_i64("agent_start_ticks", a.start_ticks)?)),
            None => (None, None),
        };
        let n = self
            .conn()
            .execute(
                "UPDATE sessions SET agent_pid = ?, agent_start_ticks = ? WHERE id = ?",
                params![pid, ticks, id],
            )
            .ctx("set agent process")?;
        if n == 0 {
            return Err(CatalogError::SessionNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    /// Sessions with a recorded agent process (after a restart: candidates for orphan checks).
    pub fn sessions_with_agent_process(&self) -> Result<Vec<SessionRow>> {
        let conn = self.conn();
        conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM sessions WHERE agent_pid IS NOT NULL ORDER BY id"
        ))
        .and_then(|mut stmt| stmt.query_map([], from_row)?.collect())
        .ctx("list sessions with agent process")
    }

    /// Every approval of a session, in request order.
    pub fn approvals(&self, session_id: &str) -> Result<Vec<ApprovalRow>> {
        self.query_approvals(session_id, false)
    }

    /// The approvals of a session still waiting for a decision, in request order.
    pub fn pending_approvals(&self, session_id: &str) -> Result<Vec<ApprovalRow>> {
        self.query_approvals(session_id, true)
    }

    fn query_approvals(&self, session_id: &str, pending_only: bool) -> Result<Vec<ApprovalRow>> {
        let conn = self.conn();
        conn.prepare_cached(
            "SELECT session_id, request_id, tool_name, input, requested_seq, decision, \
             decided_by, resolved_seq FROM approvals WHERE session_id = ?1 \
             AND (NOT ?2 OR decision IS NULL) ORDER BY requested_seq, request_id",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![session_id, pending_only], approval_from_row)?.collect()
        })
        .ctx("list approvals")
    }
}
