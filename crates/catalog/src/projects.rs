//! Projects: a repository root plus the defaults new sessions in it start from.

use nucleic_protocol::{Backend, CheckSpec, DiskPolicy, ProjectSandbox};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext, to_i64};
use crate::wire::{from_wire, now_millis, to_u64};

/// The editable settings of a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSettings {
    pub default_branch: String,
    pub default_backend: Backend,
    /// A shell script run in each new worktree before the agent starts.
    pub setup_script: Option<String>,
    pub setup_timeout_secs: Option<u64>,
    /// Paths (relative to the root) copied into each new worktree, e.g. `.env`.
    pub copy_files: Vec<String>,
    /// Commands the host runs itself in a session's worktree (tests, lint, build).
    pub checks: Vec<CheckSpec>,
    /// Run the checks after every turn.
    pub checks_after_turn: bool,
    /// Worktrees kept prepared at the default branch's tip for new sessions (0: no pool).
    pub pool_size: u32,
    /// Worktree budget and reclaim age of finished sessions (unset: reclaimed only on request).
    pub disk_policy: DiskPolicy,
    /// What its agents see beyond the default confinement.
    pub sandbox: ProjectSandbox,
}

/// The pool size of a new project: small, because each pooled worktree is a full checkout.
pub const DEFAULT_POOL_SIZE: u32 = 2;

impl ProjectSettings {
    /// Branch `main`, no setup script, nothing copied.
    pub fn defaults(default_backend: Backend) -> ProjectSettings {
        ProjectSettings {
            default_branch: "main".to_owned(),
            default_backend,
            setup_script: None,
            setup_timeout_secs: None,
            copy_files: Vec::new(),
            checks: Vec::new(),
            checks_after_turn: false,
            pool_size: DEFAULT_POOL_SIZE,
            disk_policy: DiskPolicy::default(),
            sandbox: ProjectSandbox::default(),
        }
    }
}

/// A project to add. The caller picks the id (a UUID) and normalizes `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProject {
    pub id: String,
    pub name: String,
    pub root: String,
    pub settings: ProjectSettings,
}

/// A project as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRow {
    pub id: String,
    pub name: String,
    /// Unique across projects.
    pub root: String,
    pub settings: ProjectSettings,
    pub created_at: i64,
}

const COLUMNS: &str = "id, name, root, default_branch, default_backend, setup_script, \
                       setup_timeout_secs, copy_files, created_at, checks, checks_after_turn, \
                       pool_size, budget_bytes, reclaim_after_secs, sandbox";

fn from_row(row: &Row<'_>) -> rusqlite::Result<ProjectRow> {
    let copy_files: String = row.get(7)?;
    let copy_files = serde_json::from_str(&copy_files).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(7, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let checks: String = row.get(9)?;
    let checks = serde_json::from_str(&checks).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let sandbox: String = row.get(14)?;
    let sandbox = serde_json::from_str(&sandbox).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(14, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(ProjectRow {
        id: row.get(0)?,
        name: row.get(1)?,
        root: row.get(2)?,
        settings: ProjectSettings {
            default_branch: row.get(3)?,
            default_backend: from_wire(4, row.get(4)?)?,
            setup_script: row.get(5)?,
            setup_timeout_secs: row.get::<_, Option<i64>>(6)?.map(|v| to_u64(6, v)).transpose()?,
            copy_files,
            checks,
            checks_after_turn: row.get(10)?,
            pool_size: u32::try_from(row.get::<_, i64>(11)?).unwrap_or(0),
            disk_policy: DiskPolicy {
                budget_bytes: row.get::<_, Option<i64>>(12)?.map(|v| to_u64(12, v)).transpose()?,
                reclaim_after_secs: row
                    .get::<_, Option<i64>>(13)?
                    .map(|v| to_u64(13, v))
                    .transpose()?,
            },
            sandbox,
        },
        created_at: row.get(8)?,
    })
}

/// Inserts `project` on `conn` (inside the caller's transaction, if any).
pub(crate) fn insert(conn: &Connection, project: &ProjectRow) -> Result<()> {
    if by_root(conn, &project.root)?.is_some() {
        return Err(CatalogError::DuplicateProject { root: project.root.clone() });
    }
    let s = &project.settings;
    let copy_files = serde_json::to_string(&s.copy_files)
        .map_err(|source| CatalogError::Json { what: "encode copy_files", source })?;
    let timeout = s.setup_timeout_secs.map(|t| to_i64("setup_timeout_secs", t)).transpose()?;
    let checks = encode_checks(&s.checks)?;
    let (budget, reclaim_after) = encode_disk_policy(&s.disk_policy)?;
    let sandbox = encode_sandbox(&s.sandbox)?;
    conn.prepare_cached(&format!(
        "INSERT INTO projects ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
    ))
    .and_then(|mut stmt| {
        stmt.execute(params![
            project.id,
            project.name,
            project.root,
            s.default_branch,
            s.default_backend.as_str(),
            s.setup_script,
            timeout,
            copy_files,
            project.created_at,
            checks,
            s.checks_after_turn,
            s.pool_size,
            budget,
            reclaim_after,
            sandbox,
        ])
    })
    .ctx("insert project")?;
    Ok(())
}

pub(crate) fn by_id(conn: &Connection, id: &str) -> Result<Option<ProjectRow>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM projects WHERE id = ?"))
        .and_then(|mut stmt| stmt.query_row([id], from_row).optional())
        .ctx("read project")
}

pub(crate) fn by_root(conn: &Connection, root: &str) -> Result<Option<ProjectRow>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM projects WHERE root = ?"))
        .and_then(|mut stmt| stmt.query_row([root], from_row).optional())
        .ctx("read project by root")
}

impl Catalog {
    /// Adds a project, stamped now. A second project with the same root is refused
    /// ([`CatalogError::DuplicateProject`]).
    pub fn add_project(&self, project: &NewProject) -> Result<ProjectRow> {
        let row = ProjectRow {
            id: project.id.clone(),
            name: project.name.clone(),
            root: project.root.clone(),
            settings: project.settings.clone(),
            created_at: now_millis(),
        };
        insert(&self.conn(), &row)?;
        Ok(row)
    }

    /// The project with this id.
    pub fn project(&self, id: &str) -> Result<Option<ProjectRow>> {
        by_id(&self.conn(), id)
    }

    /// The project rooted at `root` (compared verbatim).
    pub fn project_by_root(&self, root: &str) -> Result<Option<ProjectRow>> {
        by_root(&self.conn(), root)
    }

    /// Every project, by name then id.
    pub fn list_projects(&self) -> Result<Vec<ProjectRow>> {
        let conn = self.conn();
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM projects ORDER BY name, id"))
            .and_then(|mut stmt| stmt.query_map([], from_row)?.collect())
            .ctx("list projects")
    }

    /// Renames a project.
    pub fn rename_project(&self, id: &str, name: &str) -> Result<()> {
        let n = self
            .conn()
            .execute("UPDATE projects SET name = ? WHERE id = ?", params![name, id])
            .ctx("rename project")?;
        found(n, id)
    }

    /// Replaces a project's settings and returns the updated row.
    pub fn update_project_settings(
        &self,
        id: &str,
        settings: &ProjectSettings,
    ) -> Result<ProjectRow> {
        let copy_files = serde_json::to_string(&settings.copy_files)
            .map_err(|source| CatalogError::Json { what: "encode copy_files", source })?;
        let timeout =
            settings.setup_timeout_secs.map(|t| to_i64("setup_timeout_secs", t)).transpose()?;
        let (budget, reclaim_after) = encode_disk_policy(&settings.disk_policy)?;
        let conn = self.conn();
        let n = conn
            .execute(
                "UPDATE projects SET default_branch = ?, default_backend = ?, setup_script = ?, \
                 setup_timeout_secs = ?, copy_files = ?, checks = ?, checks_after_turn = ?, \
                 pool_size = ?, budget_bytes = ?, reclaim_after_secs = ?, sandbox = ? WHERE id = ?",
                params![
                    settings.default_branch,
                    settings.default_backend.as_str(),
                    settings.setup_script,
                    timeout,
                    copy_files,
                    encode_checks(&settings.checks)?,
                    settings.checks_after_turn,
                    settings.pool_size,
                    budget,
                    reclaim_after,
                    encode_sandbox(&settings.sandbox)?,
                    id
                ],
            )
            .ctx("update project settings")?;
        found(n, id)?;
        by_id(&conn, id)?.ok_or_else(|| CatalogError::ProjectNotFound { id: id.to_owned() })
    }

    /// Removes a project. Refused while non-archived sessions reference it
    /// ([`CatalogError::ProjectHasSessions`]); archived ones keep their row with no project.
    pub fn remove_project(&self, id: &str) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction().ctx("begin remove project")?;
        let count: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM sessions WHERE project_id = ? AND archived = 0",
                [id],
                |row| row.get(0),
            )
            .ctx("count project sessions")?;
        if count > 0 {
            return Err(CatalogError::ProjectHasSessions {
                id: id.to_owned(),
                count: u64::try_from(count).unwrap_or(0),
            });
        }
        let n = tx.execute("DELETE FROM projects WHERE id = ?", [id]).ctx("remove project")?;
        found(n, id)?;
        tx.commit().ctx("commit remove project")
    }
}

fn encode_checks(checks: &[CheckSpec]) -> Result<String> {
    serde_json::to_string(checks)
        .map_err(|source| CatalogError::Json { what: "encode checks", source })
}

fn found(changed: usize, id: &str) -> Result<()> {
    if changed == 0 { Err(CatalogError::ProjectNotFound { id: id.to_owned() }) } else { Ok(()) }
}

/// The `budget_bytes` and `reclaim_after_secs` columns.
fn encode_disk_policy(policy: &DiskPolicy) -> Result<(Option<i64>, Option<i64>)> {
    Ok((
        policy.budget_bytes.map(|b| to_i64("budget_bytes", b)).transpose()?,
        policy.reclaim_after_secs.map(|s| to_i64("reclaim_after_secs", s)).transpose()?,
    ))
}

fn encode_sandbox(sandbox: &ProjectSandbox) -> Result<String> {
    serde_json::to_string(sandbox)
        .map_err(|source| CatalogError::Json { what: "encode sandbox", source })
}
