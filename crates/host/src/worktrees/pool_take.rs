//! Handing pooled worktrees to new sessions: take one at the base's tip (waiting briefly for
//! one being checked), rename it to the session's, and hold the refill until the session's
//! agent has started.

use std::sync::PoisonError;
use std::time::Instant;

use nucleic_catalog::ProjectRow;
use nucleic_git::{GitError, PooledWorktree, Repo, Worktree};

use crate::context::Context;
use crate::worktrees::pool::{HOLD_FOR_START, WAIT_FOR_CHECK};

impl Context {
    /// A ready worktree of the project's pool for a new session on `base_ref` at `base_sha`,
    /// renamed to the session's `slug` (`None`: take today's path), and whether it is clean
    /// (its files exactly its base's tree). The pool is refilled behind it.
    pub(crate) async fn take_pooled(
        &self,
        project: &ProjectRow,
        repo: &Repo,
        tip: Option<String>,
        slug: &str,
        session_id: &str,
    ) -> Option<(Worktree, bool)> {
        let tip = tip?;
        let Some((pooled, full_check)) = self.take_or_wait(&project.id, &tip).await else {
            // Perhaps one changed or the base moved: the pool deals with it now.
            self.pools.wake();
            return None;
        };
        let log = self.config.pool_log_path(&pooled.name);
        let session_log = self.config.setup_log_path(session_id);
        let (repo, slug) = (repo.clone(), slug.to_owned());
        let (name, clean) = (pooled.name.clone(), pooled.clean());
        let claimed = tokio::task::spawn_blocking(move || {
            let unchanged = !full_check || matches!(repo.check_pooled(&pooled), Ok(None));
            let claimed = if unchanged {
                repo.claim_pooled(&pooled, &slug)
            } else {
                Err(GitError::PoolStale { path: pooled.path.clone(), reason: "changed".into() })
            };
            if claimed.is_err() {
                repo.discard_pooled(&pooled);
            } else if log.exists() {
                // The setup's log goes with the worktree, where the session's would be.
                if let Some(dir) = session_log.parent() {
                    let _ = crate::lifecycle::private::private_dir(dir);
                }
                let _ = std::fs::rename(&log, &session_log);
            }
            claimed
        })
        .await
        .ok();
        self.pools.done_with(&name);
        // Written (and synced) off the session's start: a host that dies before it finds the
        // taken worktree recorded, and missing, and forgets it.
        let host = self.me.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(host) = host.upgrade() {
                host.save_pools();
            }
        });
        // Refilled once the session's agent has started (`RefillHold`): a checkout running
        // now would slow the agent's start on a small machine.
        claimed?.ok().map(|worktree| (worktree, clean))
    }

    /// A ready worktree at `tip`; when there is none but one is being checked (or waits for
    /// its first check), waits up to [`WAIT_FOR_CHECK`] for it: a check costs one
    /// `git status`, the slow path a whole checkout and setup.
    async fn take_or_wait(&self, project: &str, tip: &str) -> Option<(PooledWorktree, bool)> {
        let deadline = tokio::time::Instant::now() + WAIT_FOR_CHECK;
        loop {
            // Asked for before looking, so a worktree returned in between is not missed.
            let returned = self.pools.returned.notified();
            if let Some(taken) = self.pools.take(project, tip) {
                return Some(taken);
            }
            if !self.pools.pending(project, tip) || tokio::time::Instant::now() >= deadline {
                return None;
            }
            // A first check after a restart happens in the next round: now.
            self.pools.wake();
            let _ = tokio::time::timeout_at(deadline, returned).await;
        }
    }

    /// The tip of `base_ref` when a new session on it could take a pooled worktree (pools run
    /// and it is the project's default branch).
    pub(crate) async fn pool_tip(
        &self,
        project: &ProjectRow,
        repo: &Repo,
        base_ref: &str,
    ) -> Option<String> {
        if !self.pools.is_running() || base_ref != project.settings.default_branch {
            return None;
        }
        let (repo, base_ref) = (repo.clone(), base_ref.to_owned());
        tokio::task::spawn_blocking(move || repo.resolve(&base_ref)).await.ok()?.ok()
    }
}

/// Holds the pools' refills while a session starts; dropping it ends the hold and wakes them.
#[derive(Debug)]
pub(crate) struct RefillHold {
    host: std::sync::Weak<Context>,
    session_id: String,
}

impl RefillHold {
    /// Ends the hold once the session's agent said it started (`sessionStarted`), its run
    /// ended, or [`HOLD_FOR_START`] passed, whichever comes first.
    pub(crate) fn release_when_started(self, session: nucleic_core::SessionHandle) {
        tokio::spawn(async move {
            let Ok(mut events) = session.subscribe(1) else { return };
            let started = async {
                while let Ok(Some(event)) = events.next().await {
                    if matches!(
                        event.kind,
                        nucleic_protocol::EventKind::SessionStarted(_)
                            | nucleic_protocol::EventKind::RunFinished(_)
                    ) {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(HOLD_FOR_START, started).await;
            drop(self);
        });
    }
}

impl Drop for RefillHold {
    fn drop(&mut self) {
        let Some(host) = self.host.upgrade() else { return };
        host.pools.starting.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.session_id);
        host.pools.wake();
    }
}

impl Context {
    /// Holds every pool's refill while the session `session_id` starts: a checkout and a setup
    /// script take the CPU and disk the agent's own start-up needs on a small machine.
    pub(crate) fn hold_refill(&self, session_id: &str) -> RefillHold {
        if self.pools.is_running() {
            let mut starting = self.pools.starting.lock().unwrap_or_else(PoisonError::into_inner);
            starting.insert(session_id.to_owned(), Instant::now());
        }
        RefillHold { host: self.me.clone(), session_id: session_id.to_owned() }
    }
}
