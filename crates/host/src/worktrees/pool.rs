//! Warm worktree pools: per project, worktrees prepared in the background at the default
//! branch's tip (checked out, files copied, setup run) and handed to new sessions by renaming.
//!
//! One background task tends every project's pool in turn: it moves ready worktrees to the
//! base's new tip (`git reset --keep`: only changed files) or rebuilds them, checks them in full
//! (`git status` against the fingerprint taken when they were prepared) and discards what
//! changed behind the host's back, and fills the pool up to the project's `pool_size`. A
//! failure to fill (setup script, full disk, base branch gone) stops that project's pool for
//! [`RETRY_AFTER`] and is shown in its [`PoolSummary`]; sessions then take today's path. What
//! is ready is recorded in `<home>/pools.json`, so a restarted host finds it again; a pooled
//! worktree it has no record of is removed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nucleic_catalog::ProjectRow;
use nucleic_git::PooledWorktree;
use nucleic_protocol::PoolSummary;
use serde::{Deserialize, Serialize};

use crate::worktrees::pool_watch::Watch;

/// How often the pool task looks at every project when nothing wakes it.
pub(crate) const TEND_EVERY: Duration = Duration::from_secs(5);
/// How long after its last full check a ready worktree is checked again.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(30);
/// How long a pool that failed to fill waits before it tries again.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(300);
/// How long a new session waits for a pooled worktree at its base's tip that is being
/// checked (or waits for its first check after a restart) before it takes the slow path.
pub(crate) const WAIT_FOR_CHECK: Duration = Duration::from_secs(3);
/// How long the pool holds off refilling for a starting session whose agent has not said it
/// started yet (see [`Context::hold_refill`]).
pub(crate) const HOLD_FOR_START: Duration = Duration::from_secs(10);

/// Every project's pool, shared by the host and its pool task.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    pub(crate) projects: Mutex<HashMap<String, ProjectPool>>,
    /// Names being created or worked on right now (not in `ready`, not stale either).
    pub(crate) busy: Mutex<HashSet<String>>,
    /// Of the busy ones, those a tending round is checking: name → (project, base sha).
    pub(crate) checking: Mutex<HashMap<String, (String, String)>>,
    /// Told when a worktree goes back to the ready list.
    pub(crate) returned: tokio::sync::Notify,
    /// Sessions starting now (by id, since when): no refill meanwhile.
    pub(crate) starting: Mutex<HashMap<String, Instant>>,
    pub(crate) wake: tokio::sync::Notify,
    pub(crate) running: AtomicBool,
    /// One round of tending at a time (the background task, or `recheck_pools`).
    pub(crate) tending: tokio::sync::Mutex<()>,
    /// One write of `pools.json` at a time, each with what is ready when it writes.
    pub(crate) saving: Mutex<()>,
}

#[derive(Debug, Default)]
pub(crate) struct ProjectPool {
    pub(crate) ready: Vec<Ready>,
    pub(crate) error: Option<String>,
    pub(crate) failed_at: Option<Instant>,
}

#[derive(Debug, Clone)]
pub(crate) struct Ready {
    pub(crate) worktree: PooledWorktree,
    /// When `git status` last matched its fingerprint, after `watch` started (`None`: not
    /// since this host opened it or moved it).
    pub(crate) checked: Option<Instant>,
    /// Changes since the last full check; `None` when inotify is not available (a session
    /// taking it then waits for a full check).
    pub(crate) watch: Option<Arc<Watch>>,
}

impl Ready {
    pub(crate) fn new(worktree: PooledWorktree) -> Ready {
        Ready { worktree, checked: None, watch: None }
    }

    /// Whether nothing changed since its last full check, as far as its watch knows.
    pub(crate) fn untouched(&self) -> bool {
        self.watch.as_ref().is_none_or(|w| !w.changed())
    }
}

/// What `pools.json` holds: the ready worktrees of each project.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) projects: HashMap<String, Vec<PooledWorktree>>,
}

impl Pools {
    /// The pool of `project` for clients (`None` when pools do not run or it is off).
    pub(crate) fn summary(&self, project: &ProjectRow) -> Option<PoolSummary> {
        if !self.running.load(Ordering::Relaxed) {
            return None;
        }
        let projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = projects.get(&project.id);
        let all = pool.map_or(&[][..], |p| &p.ready[..]);
        let ready: Vec<&Ready> =
            all.iter().filter(|r| r.checked.is_some() && r.untouched()).collect();
        Some(PoolSummary {
            size: project.settings.pool_size,
            ready: u32::try_from(ready.len()).unwrap_or(u32::MAX),
            disk_bytes: ready.iter().map(|r| r.worktree.disk_bytes).sum(),
            error: pool.and_then(|p| p.error.clone()),
        })
    }

    /// Takes a ready worktree of `project` at `base_sha` that nothing changed, if there is one;
    /// `true` with it when only a full check can tell (it has no watch).
    pub(crate) fn take(&self, project: &str, base_sha: &str) -> Option<(PooledWorktree, bool)> {
        let mut projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = projects.get_mut(project)?;
        let at = pool.ready.iter().position(|r| {
            r.worktree.base_sha == base_sha && r.checked.is_some() && r.untouched()
        })?;
        let taken = pool.ready.remove(at);
        self.busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(taken.worktree.name.clone());
        Some((taken.worktree, taken.watch.is_none()))
    }

    pub(crate) fn done_with(&self, name: &str) {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
        self.checking.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
    }

    /// Whether a worktree of `project` at `base_sha` may soon be ready: a round is checking it,
    /// or it waits for its first check (after a restart).
    pub(crate) fn pending(&self, project: &str, base_sha: &str) -> bool {
        let checking = self.checking.lock().unwrap_or_else(PoisonError::into_inner);
        if checking.values().any(|(p, sha)| p == project && sha == base_sha) {
            return true;
        }
        drop(checking);
        let projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects.get(project).is_some_and(|pool| {
            pool.ready
                .iter()
                .any(|r| r.worktree.base_sha == base_sha && r.checked.is_none() && r.untouched())
        })
    }

    /// Names of pooled worktrees this host knows (ready or being worked on).
    pub(crate) fn known(&self) -> HashSet<String> {
        let mut names = self.busy.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        names.extend(
            projects.values().flat_map(|p| p.ready.iter().map(|r| r.worktree.name.clone())),
        );
        names
    }

    /// Whether a session's start holds the refill (for [`HOLD_FOR_START`] at most).
    pub(crate) fn holding(&self) -> bool {
        let starting = self.starting.lock().unwrap_or_else(PoisonError::into_inner);
        starting.values().any(|since| since.elapsed() < HOLD_FOR_START)
    }

    pub(crate) fn is_running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    pub(crate) fn record(&self) -> Record {
        let projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        Record {
            projects: projects
                .iter()
                .map(|(id, p)| (id.clone(), p.ready.iter().map(|r| r.worktree.clone()).collect()))
                .collect(),
        }
    }
}
