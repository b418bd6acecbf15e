//! `Context`: the state every part of the host shares — config, catalog, live sessions, change buses — and each part's own state, held once.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use nucleic_catalog::Catalog;
use nucleic_core::SessionHandle;
use nucleic_protocol::SessionSummary;
use tokio::sync::{broadcast, mpsc};

use crate::config::HostConfig;
use crate::error::{HostError, blocking};
use crate::lifecycle::recovery_report::RecoveryReport;

/// What the parts of the host share. A part takes `&Context` (or `Arc<Context>` for a task that
/// outlives a call); [`crate::Host`] derefs to it.
#[derive(Debug)]
pub struct Context {
    /// Itself, for tasks that outlive a call (`retire_when_finished`).
    pub(crate) me: Weak<Context>,
    pub(crate) config: HostConfig,
    pub(crate) catalog: Arc<Catalog>,
    /// Sessions with a live single writer (their agent may have exited since).
    pub(crate) live: Mutex<HashMap<String, SessionHandle>>,
    pub(crate) changes: broadcast::Sender<SessionSummary>,
    /// Ids of sessions that got a new writer or events written outside one (`writes`).
    pub(crate) writes: broadcast::Sender<String>,
    /// Ids of sessions whose agent just completed a turn (from the catalog followers), for
    /// the checks and report that follow turns.
    pub(crate) turns: mpsc::UnboundedSender<String>,
    /// What opening found and repaired.
    pub(crate) recovery: RecoveryReport,
    /// The token and device revocations (devices).
    pub(crate) credentials: crate::devices::credentials::Credentials,
    /// Chat bridges and their paired users.
    pub(crate) chat_people: crate::devices::chat_registry::ChatPeople,
    /// Agent starts under way, and whether the host is stopping (lifecycle: `shutdown.rs`).
    pub(crate) gate: crate::lifecycle::gate::LaunchGate,
    /// One writer start (or write outside a writer) per session at a time (`writing.rs`).
    pub(crate) writer_turns: crate::sessions::writing::WriterTurns,
    /// When idle sessions' writers let their transcript go (`writing.rs`).
    pub(crate) idle_release: crate::sessions::writing::IdleRelease,
    /// Directories of the keepers this host runs or re-adopted and has not released yet.
    pub(crate) keepers: Arc<Mutex<HashSet<PathBuf>>>,
    /// Warm worktree pools, tended once `start_pools` ran (`pool.rs`).
    pub(crate) pools: crate::worktrees::pool::Pools,
    /// Checks running per session, and their stop switches (`checks.rs`).
    pub(crate) checks: crate::dev_loop::check_runs::CheckRuns,
    /// The policies of sessions whose agent runs, by session id (`policy.rs`: modes, rules).
    pub(crate) policies: crate::policy::session::LivePolicies,
    /// Each confined agent's egress proxy, by session.
    pub(crate) egress: crate::policy::egress_proxies::EgressProxies,
    /// One worktree reclaim or restore at a time (`disk.rs`): two follow-ups to a reclaimed
    /// session restore it once.
    pub(crate) disk_moves: tokio::sync::Mutex<()>,
    /// Message ids being answered, so a resent copy waits for the first (`reply_turns.rs`).
    pub(crate) reply_turns: crate::api::reply_turns::ReplyTurns,
    /// One lock per session for its turn snapshots and review comments (`turns.rs`).
    pub(crate) review_locks: crate::dev_loop::session_locks::SessionLocks,
    /// The conversations this host carries on in place, each under its lock (`in_place_lock.rs`).
    pub(crate) in_place: crate::sessions::in_place_lock::InPlaceLocks,
    /// Whether turn boundaries are snapshotted (`turns.rs`; on unless a bench switches it off).
    pub(crate) turn_snapshots: std::sync::atomic::AtomicBool,
    /// Watches on worktrees since their last turn's end snapshot (`turn_watch.rs`).
    pub(crate) turn_watches: crate::dev_loop::turn_watch::TurnWatches,
}

impl Context {
    /// What opening found and repaired after the previous host stopped.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Summaries of sessions as they change, for every connected client.
    pub fn changes(&self) -> broadcast::Receiver<SessionSummary> {
        self.changes.subscribe()
    }

    /// Ids of sessions whose transcript just got a new writer (a resume) or events written
    /// outside one, straight from the host (not through the catalog): a stream of a dormant
    /// session subscribes again when its id comes by.
    pub fn writes(&self) -> broadcast::Receiver<String> {
        self.writes.subscribe()
    }

    /// Runs `f` on the catalog off the async workers.
    pub(crate) async fn catalog<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Catalog) -> Result<T, nucleic_catalog::CatalogError> + Send + 'static,
    ) -> Result<T, HostError> {
        let catalog = self.catalog.clone();
        blocking(move || f(&catalog)).await
    }

    pub(crate) fn live_handle(&self, id: &str) -> Option<SessionHandle> {
        self.live.lock().ok().and_then(|live| live.get(id).cloned())
    }

    pub(crate) fn handle(&self, id: &str) -> Result<SessionHandle, HostError> {
        self.live_handle(id)
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no running agent")))
    }

    /// Whether the session's agent is mid-turn (running or awaiting an approval), by its live
    /// controller's own status: the catalog's row trails it (it is folded from the events a moment
    /// later), so a client acting on `turnCompleted` would otherwise be told the session is still
    /// working. A session with no live agent is not working.
    pub(crate) fn is_working(&self, id: &str) -> bool {
        self.live_handle(id).is_some_and(|h| {
            let state = h.state();
            state.finished.is_none()
                && matches!(
                    state.status,
                    nucleic_protocol::SessionStatus::Running
                        | nucleic_protocol::SessionStatus::AwaitingApproval
                )
        })
    }
}
