//! What list and detail views get from the host: projects (with their pool and disk policy),
//! sessions (with their disk use and mode) and a session's git facts.

use serde::{Deserialize, Serialize};

use crate::checks::CheckSpec;
use crate::event::Backend;
use crate::is_false;
use crate::kind::{RunOutcome, WorktreeInfo};
use crate::status::SessionStatus;

/// A project as clients see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ProjectSummary {
    #[serde(rename = "projectID")]
    pub project_id: String,
    pub name: String,
    pub root: String,
    #[serde(rename = "defaultBranch")]
    pub default_branch: String,
    #[serde(rename = "defaultBackend")]
    pub default_backend: Backend,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSpec>,
    #[serde(rename = "checksAfterTurn", default, skip_serializing_if = "is_false")]
    pub checks_after_turn: bool,
    /// The project's warm worktree pool, when the host runs pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolSummary>,
    /// Its worktree budget and reclaim age.
    #[serde(rename = "diskPolicy", default, skip_serializing_if = "DiskPolicy::is_unset")]
    pub disk_policy: DiskPolicy,
    /// What its agents see beyond the default confinement.
    #[serde(default, skip_serializing_if = "ProjectSandbox::is_empty")]
    pub sandbox: ProjectSandbox,
}

impl DiskPolicy {
    /// Neither a budget nor an age: worktrees are only reclaimed on request.
    pub fn is_unset(&self) -> bool {
        self.budget_bytes.is_none() && self.reclaim_after_secs.is_none()
    }
}

/// A project's warm worktree pool: worktrees prepared at the default branch's tip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PoolSummary {
    /// How many it keeps ready (the project's setting).
    pub size: u32,
    /// How many are ready now.
    pub ready: u32,
    /// What the ready ones take on disk.
    #[serde(rename = "diskBytes")]
    pub disk_bytes: u64,
    /// Why it stopped filling (a failing setup script, a full disk, a missing base branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A session as list views see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SessionSummary {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    pub title: String,
    pub backend: Backend,
    pub status: SessionStatus,
    #[serde(rename = "pendingApprovals")]
    pub pending_approvals: u32,
    #[serde(rename = "costUSD")]
    pub cost_usd: f64,
    #[serde(rename = "lastSeq")]
    pub last_seq: u64,
    /// Unix milliseconds of the last event.
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
    pub archived: bool,
    #[serde(rename = "readOnly")]
    pub read_only: bool,
    /// What the session's worktree takes on disk, when the host last measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskUsage>,
    /// The worktree's directory was reclaimed to free disk; it comes back on continue.
    #[serde(rename = "worktreeReclaimed", default, skip_serializing_if = "is_false")]
    pub worktree_reclaimed: bool,
    /// The session's policy mode (`readonly`, `edit`, `full`); none without a policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Bytes a worktree takes on disk, as measured at `measuredAt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DiskUsage {
    pub bytes: u64,
    /// Of which build output and caches (`target/`, `node_modules/`, virtualenvs, any
    /// directory with a `CACHEDIR.TAG`).
    #[serde(rename = "buildBytes")]
    pub build_bytes: u64,
    /// Unix milliseconds.
    #[serde(rename = "measuredAt")]
    pub measured_at: i64,
}

/// What a project's worktrees may take, and when finished ones are reclaimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DiskPolicy {
    /// Finished sessions' worktrees are reclaimed, oldest first, while the project's worktrees
    /// take more than this.
    #[serde(rename = "budgetBytes", default, skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    /// Finished sessions' worktrees are reclaimed this long after their last event.
    #[serde(rename = "reclaimAfterSecs", default, skip_serializing_if = "Option::is_none")]
    pub reclaim_after_secs: Option<u64>,
}

/// What a project's agents see beyond the default confinement (`docs/security.md`): paths bound
/// back read-only or writable, paths hidden, and domains their egress proxy also allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ProjectSandbox {
    /// Absolute paths the agent sees read-only (a toolchain under a hidden home, say).
    #[serde(rename = "readOnly", default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<String>,
    /// Absolute paths the agent may write (a cache the project's builds share).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// Absolute paths hidden from the agent on top of the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hide: Vec<String>,
    /// Destinations its egress proxy allows besides the model's (`host`, `host:port`,
    /// `*.domain`).
    #[serde(rename = "allowDomains", default, skip_serializing_if = "Vec::is_empty")]
    pub allow_domains: Vec<String>,
}

impl ProjectSandbox {
    /// Nothing beyond the defaults.
    pub fn is_empty(&self) -> bool {
        self.read_only.is_empty()
            && self.writable.is_empty()
            && self.hide.is_empty()
            && self.allow_domains.is_empty()
    }
}

/// What a session's worktree changed, live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct GitFacts {
    #[serde(rename = "baseBranch")]
    pub base_branch: String,
    #[serde(rename = "baseSHA")]
    pub base_sha: String,
    /// Changed files vs the base commit, uncommitted and untracked work included.
    pub files: Vec<DiffFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Commits on the session branch the base branch lacks, and the reverse.
    pub ahead: u64,
    pub behind: u64,
    /// Files that would conflict merging into the base branch's current tip.
    pub conflicts: Vec<String>,
    /// The turn whose change `files` and `patch` are (absent: the whole session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The turns with snapshots, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<crate::review::TurnSnapshot>,
    /// The worktree snapshot (a git tree id) `files` and `patch` end at: what review comments
    /// made on this diff are anchored to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DiffFile {
    pub path: String,
    #[serde(rename = "oldPath", default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// `added`, `untracked`, `modified`, `deleted`, `renamed`, `copied`, `typeChanged`.
    pub status: String,
    pub additions: u64,
    pub deletions: u64,
    pub binary: bool,
}
