//! Tending warm worktree pools: following base moves, checking, refilling, recording.

use super::pool::{CHECK_EVERY, RETRY_AFTER, Ready, Record, TEND_EVERY};
use crate::context::Context;
use crate::worktrees::pool_watch::Watch;
use nucleic_catalog::ProjectRow;
use nucleic_git::{GitError, Repo, SetupSpec};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

impl Context {
    /// Starts tending the warm worktree pools of every project (the daemon does; in-process
    /// hosts run without pools unless they call this). Worktrees recorded by an earlier host
    /// are checked in full before they are handed out again.
    pub(crate) fn start_pools(self: &Arc<Self>) {
        if self.pools.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let recorded = read_record(&self.config.pools_path());
        {
            let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
            for (id, worktrees) in recorded.projects {
                let ready = worktrees.into_iter().map(Ready::new);
                projects.entry(id).or_default().ready.extend(ready);
            }
        }
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(strong) = host.upgrade() else { return };
                if strong.gate.is_stopping() {
                    return;
                }
                strong.tend_pools().await;
                let pools = &strong.pools;
                let _ = tokio::time::timeout(TEND_EVERY, pools.wake.notified()).await;
            }
        });
    }

    /// Checks every ready pooled worktree in full now (discarding what changed behind the
    /// host's back), follows base moves and refills, instead of waiting for the next round.
    pub(crate) async fn recheck_pools(self: &Arc<Self>) {
        {
            let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
            for ready in projects.values_mut().flat_map(|p| p.ready.iter_mut()) {
                ready.checked = None;
            }
        }
        self.tend_pools().await;
    }

    /// Runs one round of tending now (follow base moves, due checks, refill) and waits for it.
    pub(crate) async fn tend_pools_now(self: &Arc<Self>) {
        self.tend_pools().await;
    }

    /// One round over every project: follow base moves, check, fill, forget removed projects.
    async fn tend_pools(self: &Arc<Self>) {
        let _round = self.pools.tending.lock().await;
        let Ok(projects) = self.catalog(|c| c.list_projects()).await else { return };
        let ids: HashSet<String> = projects.iter().map(|p| p.id.clone()).collect();
        for project in projects {
            if self.gate.is_stopping() {
                return;
            }
            let host = self.clone();
            let _ = tokio::task::spawn_blocking(move || host.tend_pool(&project)).await;
        }
        // Pools of projects that were removed: their worktrees go.
        let gone: Vec<Ready> = {
            let mut pools = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
            let stale: Vec<String> =
                pools.keys().filter(|id| !ids.contains(*id)).cloned().collect();
            stale.iter().filter_map(|id| pools.remove(id)).flat_map(|p| p.ready).collect()
        };
        for ready in gone {
            let root = ready.worktree.path.parent().and_then(Path::parent).and_then(Path::parent);
            if let Some(repo) = root.and_then(|r| Repo::open(r).ok()) {
                let _ =
                    tokio::task::spawn_blocking(move || repo.discard_pooled(&ready.worktree)).await;
            }
        }
        self.save_pools();
    }

    /// Tends one project's pool (blocking: git). Entries are taken out of the ready list one
    /// at a time, only while they are checked or moved: the others stay ready for sessions
    /// (a round over a large repository takes seconds).
    fn tend_pool(&self, project: &ProjectRow) {
        let size = project.settings.pool_size as usize;
        let Ok(repo) = Repo::open(&project.root) else { return };
        let base_ref = project.settings.default_branch.clone();
        let known: HashSet<String> = self.pools.known();
        // Pooled worktrees nobody recorded (a host killed while making one): removed.
        for (name, _) in repo.list_pooled().unwrap_or_default() {
            if !known.contains(&name) {
                repo.discard_pooled_named(&name);
            }
        }
        let tip = match repo.resolve(&base_ref) {
            Ok(tip) => tip,
            Err(e) => {
                for r in self.take_all(&project.id) {
                    repo.discard_pooled(&r.worktree);
                    self.pools.done_with(&r.worktree.name);
                }
                self.set_pool_error(&project.id, format!("base branch `{base_ref}`: {e}"));
                return;
            }
        };
        let setup = self.pool_setup(project, "refresh");
        let mut kept = 0;
        for name in self.ready_names(&project.id) {
            // Gone already: a session took it.
            let Some(r) = self.take_named(&project.id, &name) else { continue };
            let wanted = kept < size && r.worktree.base_ref == base_ref;
            match wanted.then(|| tended(&repo, r.clone(), &tip, setup.as_ref())).flatten() {
                Some(r) => {
                    kept += 1;
                    self.put_back(&project.id, vec![r]);
                }
                None => {
                    repo.discard_pooled(&r.worktree);
                    self.pools.done_with(&name);
                }
            }
        }
        self.fill(project, &repo, &base_ref, size);
    }

    /// Creates pooled worktrees until the project has `size` ready, stopping at the first
    /// failure (recorded as the pool's error).
    fn fill(&self, project: &ProjectRow, repo: &Repo, base_ref: &str, size: usize) {
        loop {
            if self.gate.is_stopping() || self.ready_count(&project.id) >= size {
                return;
            }
            if self.pool_paused(&project.id) || self.pools.holding() {
                return;
            }
            if let Err(reason) = self.enough_disk(project) {
                self.set_pool_error(&project.id, reason);
                return;
            }
            let name = format!("pool-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
            self.pools.busy.lock().unwrap_or_else(PoisonError::into_inner).insert(name.clone());
            let copy: Vec<PathBuf> =
                project.settings.copy_files.iter().map(PathBuf::from).collect();
            let setup = self.pool_setup(project, &name);
            let made = repo.create_pooled(&name, base_ref, &copy, setup.as_ref());
            match made {
                Ok(worktree) => {
                    let mut ready = Ready::new(worktree);
                    if !arm(repo, &mut ready) {
                        repo.discard_pooled(&ready.worktree);
                        self.pools.done_with(&name);
                        continue;
                    }
                    self.put_back(&project.id, vec![ready]);
                    self.pools.done_with(&name);
                    self.clear_pool_error(&project.id);
                    self.save_pools();
                }
                Err(e) => {
                    self.pools.done_with(&name);
                    self.set_pool_error(&project.id, pool_failure(&e));
                    return;
                }
            }
        }
    }

    fn take_all(&self, project: &str) -> Vec<Ready> {
        let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        let taken =
            projects.get_mut(project).map(|p| std::mem::take(&mut p.ready)).unwrap_or_default();
        let mut busy = self.pools.busy.lock().unwrap_or_else(PoisonError::into_inner);
        busy.extend(taken.iter().map(|r| r.worktree.name.clone()));
        taken
    }

    /// Names of the project's ready worktrees, in order.
    fn ready_names(&self, project: &str) -> Vec<String> {
        let projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects
            .get(project)
            .map_or_else(Vec::new, |p| p.ready.iter().map(|r| r.worktree.name.clone()).collect())
    }

    /// Takes the ready worktree `name` out of the list to work on it (marked busy).
    fn take_named(&self, project: &str, name: &str) -> Option<Ready> {
        let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = projects.get_mut(project)?;
        let at = pool.ready.iter().position(|r| r.worktree.name == name)?;
        let taken = pool.ready.remove(at);
        self.pools.busy.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned());
        let at = (project.to_owned(), taken.worktree.base_sha.clone());
        self.pools.checking.lock().unwrap_or_else(PoisonError::into_inner).insert(name.into(), at);
        Some(taken)
    }

    fn put_back(&self, project: &str, ready: Vec<Ready>) {
        for r in &ready {
            self.pools.done_with(&r.worktree.name);
        }
        let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects.entry(project.to_owned()).or_default().ready.extend(ready);
        drop(projects);
        self.pools.returned.notify_waiters();
    }

    fn ready_count(&self, project: &str) -> usize {
        let projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects.get(project).map_or(0, |p| p.ready.len())
    }

    fn pool_paused(&self, project: &str) -> bool {
        let projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects.get(project).and_then(|p| p.failed_at).is_some_and(|at| at.elapsed() < RETRY_AFTER)
    }

    fn set_pool_error(&self, project: &str, error: String) {
        let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = projects.entry(project.to_owned()).or_default();
        pool.error = Some(error);
        pool.failed_at = Some(Instant::now());
    }

    fn clear_pool_error(&self, project: &str) {
        let mut projects = self.pools.projects.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pool) = projects.get_mut(project) {
            pool.error = None;
            pool.failed_at = None;
        }
    }

    /// The project's setup script for a pooled worktree, logged under `<home>/pool/`.
    fn pool_setup(&self, project: &ProjectRow, name: &str) -> Option<SetupSpec> {
        project.settings.setup_script.clone().map(|script| SetupSpec {
            script,
            timeout: project
                .settings
                .setup_timeout_secs
                .map_or(self.config.setup_timeout, Duration::from_secs),
            log_path: self.config.pool_log_path(name),
        })
    }

    /// The same free-space guardrail as a new session's.
    fn enough_disk(&self, project: &ProjectRow) -> Result<(), String> {
        let stat = nix::sys::statvfs::statvfs(Path::new(&project.root))
            .map_err(|e| format!("cannot check free space at {}: {e}", project.root))?;
        let free = stat.blocks_available().saturating_mul(stat.fragment_size());
        let need = self.config.limits.min_free_bytes;
        if free < need {
            return Err(format!("only {} MiB free (need {} MiB)", free >> 20, need >> 20));
        }
        Ok(())
    }

    /// Writes `pools.json` (0600) with what is ready now.
    pub(crate) fn save_pools(&self) {
        if !self.pools.is_running() {
            return;
        }
        let _one = self.pools.saving.lock().unwrap_or_else(PoisonError::into_inner);
        if let Ok(text) = serde_json::to_vec_pretty(&self.pools.record()) {
            let _ = crate::lifecycle::private::write_private_file(&self.config.pools_path(), &text);
        }
    }
}

/// Makes `ready` safe to hand out: a watch on its directories first, then (unless one was done
/// recently under the same watch) a full check. `false`: it changed and must go.
fn arm(repo: &Repo, ready: &mut Ready) -> bool {
    if !ready.untouched() {
        return false;
    }
    if ready.watch.is_none() {
        ready.watch = Watch::start(&ready.worktree.path).map(Arc::new);
        ready.checked = None;
    }
    if ready.checked.is_none_or(|at| at.elapsed() >= CHECK_EVERY) {
        if ready.worktree.status.is_empty() {
            // Moved to a new base by the host: its status is recorded, not compared.
            if !matches!(repo.quick_check_pooled(&ready.worktree), Ok(None)) {
                return false;
            }
            let Ok(status) = repo.pooled_fingerprint(&ready.worktree) else { return false };
            ready.worktree.status = status;
        } else if !matches!(repo.check_pooled(&ready.worktree), Ok(None)) {
            return false;
        }
        ready.checked = Some(Instant::now());
    }
    true
}

/// `r` verified and moved to `tip` (only changed files; the setup run again if there is one),
/// or `None` when it changed behind the host's back or cannot move: the caller discards it.
fn tended(repo: &Repo, mut r: Ready, tip: &str, setup: Option<&SetupSpec>) -> Option<Ready> {
    // Verified before it moves (after a restart it has no watch yet).
    if !arm(repo, &mut r) {
        return None;
    }
    if r.worktree.base_sha == tip {
        return Some(r);
    }
    // Rebuilt by the next fill, from scratch, when it cannot move.
    let (moved, changed) = repo.refresh_pooled(&r.worktree, tip, setup).ok()?;
    if setup.is_some() {
        // The setup's writes cannot be told from others': watched anew from here.
        r = Ready::new(moved);
    } else if r.watch.as_ref().is_some_and(|w| w.absorb(&changed)) {
        // Only the checkout's own files changed: still verified, fingerprint later.
        r.worktree = moved;
    } else {
        // Something else changed too (same path and branch: the caller discards it).
        return None;
    }
    arm(repo, &mut r).then_some(r)
}

/// What the pool says when it cannot fill.
fn pool_failure(error: &GitError) -> String {
    match error {
        GitError::SetupFailed { .. } | GitError::SetupTimedOut { .. } => {
            format!("the setup script failed in the pool, so sessions take the slow path: {error}")
        }
        other => format!("cannot prepare a worktree, so sessions take the slow path: {other}"),
    }
}

fn read_record(path: &Path) -> Record {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}
