//! The disk lifecycle of session worktrees: measuring them (build output apart), reclaiming
//! finished sessions' worktrees by age, budget or request (branch and uncommitted work kept),
//! and restoring a reclaimed one when its session is continued.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nucleic_catalog::{SessionFilter, SessionRow};
use nucleic_git::{Repo, SetupSpec, Worktree};
use nucleic_protocol::{
    DiskPolicy, DiskUsage, EventKind, ProjectSummary, Reclaimable, WorktreeInfo, WorktreeReclaimed,
    WorktreeRestored,
};

use crate::context::Context;
use crate::error::{HostError, blocking};

/// How long one worktree's measurement may walk before its figures count as a lower bound.
const MEASURE_DEADLINE: Duration = Duration::from_secs(30);

/// Why a worktree is reclaimed (recorded in `worktreeReclaimed.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimReason {
    /// Finished longer ago than the project's reclaim age.
    Age,
    /// The project's worktrees took more than its budget.
    Budget,
    /// A person asked.
    Request,
}

impl ReclaimReason {
    fn as_str(self) -> &'static str {
        match self {
            ReclaimReason::Age => "age",
            ReclaimReason::Budget => "budget",
            ReclaimReason::Request => "request",
        }
    }
}

/// The git worktree a session's recorded worktree is.
pub(crate) fn worktree_from(info: &WorktreeInfo) -> Worktree {
    Worktree {
        path: PathBuf::from(&info.path),
        branch: info.branch.clone(),
        base_ref: info.base_ref.clone(),
        base_sha: info.base_sha.clone(),
    }
}

/// The git worktree a session row records.
fn worktree_of(row: &SessionRow) -> Option<Worktree> {
    row.worktree.as_ref().map(worktree_from)
}

impl Context {
    /// Keeps turn snapshots of session `id` from running until the guard is dropped, once the
    /// one in flight is done: a snapshot's temporary index lives in the worktree's git dir, so
    /// whatever removes the worktree holds this meanwhile (discard, rollback, reclaim).
    pub async fn no_snapshots(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        self.review_locks.of(id).lock_owned().await
    }

    /// Measures what session `id`'s worktree takes now and records it (the summary carries it).
    pub async fn measure_disk(&self, id: &str) -> Result<DiskUsage, HostError> {
        let row = self.session_row(id).await?;
        let worktree = worktree_of(&row)
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no worktree")))?;
        if row.worktree_reclaimed || !worktree.path.is_dir() {
            return Err(HostError::Invalid(format!(
                "session {id}'s worktree is not on disk{}",
                if row.worktree_reclaimed {
                    " (reclaimed; continue the session to restore it)"
                } else {
                    ""
                }
            )));
        }
        let path = worktree.path.clone();
        let measured = blocking(move || {
            Ok::<_, HostError>(nucleic_git::measure_disk(&path, Instant::now() + MEASURE_DEADLINE))
        })
        .await?;
        let disk = DiskUsage {
            bytes: measured.bytes,
            build_bytes: measured.build_bytes,
            measured_at: crate::clock::unix_millis(),
        };
        let key = id.to_owned();
        self.catalog(move |c| c.set_disk(&key, disk)).await?;
        // List views learn the figure like any other change of the session.
        let mut row = row;
        row.disk = Some(disk);
        let _ = self.changes.send(crate::sessions::follower::summary_of(&row));
        Ok(disk)
    }

    /// Sets a project's worktree budget and reclaim age.
    pub async fn set_disk_policy(
        &self,
        project_id: &str,
        policy: DiskPolicy,
    ) -> Result<ProjectSummary, HostError> {
        if policy.reclaim_after_secs == Some(0) || policy.budget_bytes == Some(0) {
            return Err(HostError::Invalid(
                "a reclaim age or budget of 0 would reclaim every finished worktree at once; leave it unset for none".into(),
            ));
        }
        let project = self.project(project_id).await?;
        let mut settings = project.settings.clone();
        settings.disk_policy = policy;
        let id = project_id.to_owned();
        let row = self.catalog(move |c| c.update_project_settings(&id, &settings)).await?;
        Ok(self.project_summary(&row))
    }

    /// Why session `row` cannot be reclaimed now, if it cannot.
    fn not_reclaimable(&self, row: &SessionRow) -> Option<String> {
        if row.read_only {
            return Some("it is read-only (imported)".into());
        }
        if row.worktree_reclaimed {
            return Some("its worktree is already reclaimed".into());
        }
        let Some(worktree) = worktree_of(row) else {
            return Some("it has no worktree".into());
        };
        if !worktree.path.is_dir() {
            return Some("its worktree is not on disk (discarded or removed)".into());
        }
        if self.is_working(&row.id) {
            return Some("it is still working".into());
        }
        None
    }

    /// Removes a finished session's worktree directory: its agent (if waiting for a follow-up)
    /// is stopped, uncommitted work is kept as a commit off the branch, the branch stays, and
    /// `worktreeReclaimed` is recorded. The session comes back on continue.
    pub async fn reclaim(
        &self,
        id: &str,
        reason: ReclaimReason,
        by: &str,
    ) -> Result<WorktreeReclaimed, HostError> {
        let _one_at_a_time = self.disk_moves.lock().await;
        let row = self.session_row(id).await?;
        if let Some(why) = self.not_reclaimable(&row) {
            return Err(HostError::Invalid(format!("session {id} cannot be reclaimed: {why}")));
        }
        let (worktree, root) = self.worktree_and_root(&row).await?;
        self.stop_idle_agent(id).await?;
        let path = worktree.path.clone();
        // Not while a turn snapshot works in the worktree's git dir (see `finish`'s discard).
        let no_snapshot = self.no_snapshots(id).await;
        let (measured, reclaimed) = blocking(move || {
            let measured = nucleic_git::measure_disk(&path, Instant::now() + MEASURE_DEADLINE);
            let reclaimed = Repo::open(&root)?.reclaim(&worktree)?;
            Ok::<_, HostError>((measured, reclaimed))
        })
        .await?;
        drop(no_snapshot);
        let event = WorktreeReclaimed {
            bytes: measured.bytes,
            build_bytes: measured.build_bytes,
            kept_uncommitted: reclaimed.uncommitted.is_some(),
            reason: reason.as_str().to_owned(),
            by: by.to_owned(),
        };
        self.record(id, EventKind::WorktreeReclaimed(event.clone())).await?;
        Ok(event)
    }

    /// Checks a reclaimed session's worktree out again (with its kept uncommitted work and the
    /// project's copied files and setup script), recording `worktreeRestored`. Nothing to do
    /// for a session whose worktree was not reclaimed.
    pub(crate) async fn restore_if_reclaimed(&self, id: &str, by: &str) -> Result<(), HostError> {
        let _one_at_a_time = self.disk_moves.lock().await;
        let row = self.session_row(id).await?;
        if !row.worktree_reclaimed {
            return Ok(());
        }
        let (worktree, root) = self.worktree_and_root(&row).await?;
        let project = match &row.project_id {
            Some(p) => self.project(p).await?,
            None => return Err(HostError::Invalid(format!("session {id} belongs to no project"))),
        };
        let copy_files: Vec<PathBuf> =
            project.settings.copy_files.iter().map(PathBuf::from).collect();
        let setup = project.settings.setup_script.clone().map(|script| SetupSpec {
            script,
            timeout: project
                .settings
                .setup_timeout_secs
                .map_or(self.config.setup_timeout, Duration::from_secs),
            log_path: self.config.setup_log_path(id),
        });
        let path = worktree.path.to_string_lossy().into_owned();
        let restored_uncommitted = blocking(move || {
            let repo = Repo::open(&root)?;
            let had_work = repo.restore(&worktree)?;
            repo.provision(&worktree, &copy_files, setup.as_ref())?;
            Ok::<_, HostError>(had_work)
        })
        .await?;
        let event = WorktreeRestored { path, restored_uncommitted, by: by.to_owned() };
        self.record(id, EventKind::WorktreeRestored(event)).await
    }

    async fn worktree_and_root(&self, row: &SessionRow) -> Result<(Worktree, PathBuf), HostError> {
        let worktree = worktree_of(row)
            .ok_or_else(|| HostError::Invalid(format!("session {} has no worktree", row.id)))?;
        let root = match &row.project_id {
            Some(p) => PathBuf::from(self.project(p).await?.root),
            None => {
                return Err(HostError::Invalid(format!(
                    "session {} belongs to no project",
                    row.id
                )));
            }
        };
        Ok((worktree, root))
    }

    /// The finished sessions' worktrees due for reclaiming under their projects' disk policies
    /// (every worktree on disk is measured first): past the reclaim age, then the oldest while
    /// a project is over its budget. With `apply` they are reclaimed. One entry per worktree.
    pub(crate) async fn reclaim_due(
        &self,
        apply: bool,
        by: &str,
    ) -> Result<Vec<Reclaimable>, HostError> {
        let filter = SessionFilter { project_id: None, include_archived: true };
        let sessions = self.catalog(move |c| c.list_sessions(&filter)).await?;
        let projects = self.catalog(|c| c.list_projects()).await?;
        let now = crate::clock::unix_millis();
        let mut due = Vec::new();
        for project in projects {
            let policy = project.settings.disk_policy;
            if policy.is_unset() {
                continue;
            }
            let mut on_disk = Vec::new();
            for row in sessions.iter().filter(|s| s.project_id.as_deref() == Some(&project.id)) {
                if row.worktree_reclaimed || !worktree_of(row).is_some_and(|w| w.path.is_dir()) {
                    continue;
                }
                let disk = self.measure_disk(&row.id).await?;
                on_disk.push((row, disk));
            }
            // Oldest first: the order both rules reclaim in.
            on_disk.sort_by_key(|(row, _)| row.updated_at);
            let mut total: u64 = on_disk.iter().map(|(_, d)| d.bytes).sum();
            for (row, disk) in on_disk {
                if self.not_reclaimable(row).is_some() {
                    continue;
                }
                let age_ms = u64::try_from(now.saturating_sub(row.updated_at)).unwrap_or(0);
                let reason = if policy.reclaim_after_secs.is_some_and(|s| age_ms / 1000 >= s) {
                    ReclaimReason::Age
                } else if policy.budget_bytes.is_some_and(|b| total > b) {
                    ReclaimReason::Budget
                } else {
                    continue;
                };
                total = total.saturating_sub(disk.bytes);
                due.push((row.id.clone(), worktree_of(row), disk, reason));
            }
        }
        let mut report = Vec::new();
        for (id, worktree, disk, reason) in due {
            let mut entry = Reclaimable {
                session_id: id.clone(),
                path: worktree.map(|w| w.path.to_string_lossy().into_owned()),
                bytes: disk.bytes,
                build_bytes: disk.build_bytes,
                reason: reason.as_str().to_owned(),
                reclaimed: false,
                error: None,
            };
            if apply {
                match self.reclaim(&id, reason, by).await {
                    Ok(_) => entry.reclaimed = true,
                    Err(e) => entry.error = Some(e.to_string()),
                }
            }
            report.push(entry);
        }
        Ok(report)
    }
}
