//! Stopping the host within a deadline: no agent starts any more, every live agent is stopped as
//! a whole process tree (SIGTERM, SIGKILL after a grace period), its writer records how the run
//! ended, the catalog catches up, and whatever did not finish in time is reported, never waited
//! for.
//!
//! A stopped session's transcript ends with `interruptRequested` (by `host:stopping`), its voided
//! approvals and `runFinished` (`stopped`): it is `finished`, and the next prompt resumes the
//! agent's conversation natively, like any session whose agent is gone.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_catalog::Catalog;
use nucleic_core::SessionHandle;
use nucleic_protocol::{EventKind, InterruptRequested};
use tokio::time::{Instant, timeout_at};

use crate::context::Context;
use crate::error::blocking;
use crate::lifecycle::gate::{Member, lock};

/// Who the transcript says interrupted a session's agent when the host stopped it.
pub const STOPPING_BY: &str = "host:stopping";

/// Longest wait for one request to a session's writer during a shutdown.
pub(crate) const ASK_WITHIN: Duration = Duration::from_secs(1);

/// What a shutdown did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Sessions whose agent was stopped; their end is recorded.
    pub stopped: Vec<String>,
    /// Sessions whose agent had already exited; their writers were closed.
    pub closed: Vec<String>,
    /// Sessions that did not finish stopping by the deadline.
    pub late: Vec<LateSession>,
    /// Agent starts that were still under way at the deadline.
    pub starts_in_flight: usize,
    /// How long it took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// True when everything stopped in time.
    pub fn is_complete(&self) -> bool {
        self.late.is_empty() && self.starts_in_flight == 0
    }
}

/// A session that did not finish stopping in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateSession {
    pub session_id: String,
    /// What was still awaited: "the agent's exit", "its writer", "the catalog".
    pub waiting_for: &'static str,
}

/// How one session's stop ended.
pub(crate) enum Outcome {
    Stopped,
    Closed,
    Late(&'static str),
}

impl Context {
    /// True once [`Context::shutdown`] began: new sessions and resumes are refused.
    pub fn is_stopping(&self) -> bool {
        self.gate.is_stopping()
    }

    /// SIGKILLs now whatever is left of the agent trees a shutdown began stopping, including
    /// processes that outlived their agent (no longer its descendants). For a forced exit;
    /// returns how many processes were signalled.
    pub fn kill_stopping_agents(&self) -> usize {
        let members = lock(&self.gate.trees).clone();
        kill_members(&members)
    }

    /// Stops the host's agents within `within`: refuses new agent starts (and waits for the ones
    /// under way), then, for every live session at once, records `interruptRequested` (by
    /// [`STOPPING_BY`]), stops the agent's process tree (SIGTERM, SIGKILL after `grace`), waits
    /// for the writer to record the exit, closes the writer and waits for the catalog to fold
    /// it. Nothing here waits past the deadline: what did not finish is in the report. Only the
    /// agents are stopped; the host itself stays usable for reads.
    pub async fn shutdown(&self, grace: Duration, within: Duration) -> ShutdownReport {
        let started = Instant::now();
        let deadline = started + within;
        // Checks are killed whole at once; their runs record `stopped`.
        self.checks.stop_all();
        let mut report = ShutdownReport {
            starts_in_flight: self.gate.close(deadline).await,
            ..ShutdownReport::default()
        };
        let sessions: Vec<(String, SessionHandle)> = self
            .live
            .lock()
            .map(|live| live.iter().map(|(id, h)| (id.clone(), h.clone())).collect())
            .unwrap_or_default();
        let mut pending: HashSet<String> = sessions.iter().map(|(id, _)| id.clone()).collect();
        let mut tasks = tokio::task::JoinSet::new();
        for (id, handle) in sessions {
            let catalog = Arc::clone(&self.catalog);
            let trees = Arc::clone(&self.gate.trees);
            tasks.spawn(async move {
                let outcome = stop_session(&catalog, &trees, &id, &handle, grace, deadline).await;
                (id, outcome)
            });
        }
        // Each task keeps to the deadline itself; the margin lets it report why it is late.
        let collect_until = deadline + Duration::from_millis(200);
        while let Ok(Some(joined)) = timeout_at(collect_until, tasks.join_next()).await {
            let Ok((id, outcome)) = joined else { continue };
            pending.remove(&id);
            match outcome {
                Outcome::Stopped => report.stopped.push(id),
                Outcome::Closed => report.closed.push(id),
                Outcome::Late(waiting_for) => {
                    report.late.push(LateSession { session_id: id, waiting_for });
                }
            }
        }
        tasks.abort_all();
        report.late.extend(
            pending
                .into_iter()
                .map(|session_id| LateSession { session_id, waiting_for: "its stop" }),
        );
        // Their writers are gone: later host events go straight to the transcript.
        if let Ok(mut live) = self.live.lock() {
            for id in report.stopped.iter().chain(&report.closed) {
                live.remove(id);
            }
        }
        report.stopped.sort();
        report.closed.sort();
        report.elapsed = started.elapsed();
        report
    }
}

/// Stops one session's agent and closes its writer, by `deadline`.
pub(crate) async fn stop_session(
    catalog: &Arc<Catalog>,
    trees: &Mutex<Vec<Member>>,
    id: &str,
    handle: &SessionHandle,
    grace: Duration,
    deadline: Instant,
) -> Outcome {
    let ask_by = || deadline.min(Instant::now() + ASK_WITHIN);
    let was_running = handle.state().finished.is_none();
    if was_running {
        // The tree as it is now: what survives the agent (a command ignoring SIGTERM, reparented
        // away from it) is still found and killed after the grace.
        let tree = agent_tree(catalog, id, ask_by()).await;
        lock(trees).extend(&tree);
        let note = EventKind::InterruptRequested(InterruptRequested { by: STOPPING_BY.into() });
        let _ = timeout_at(ask_by(), handle.record(note)).await;
        let stopped_at = Instant::now();
        match timeout_at(ask_by(), handle.stop(grace, None)).await {
            Ok(_) => {}
            // The writer is stuck: stop the process tree directly (its exit is then recorded
            // whenever the writer gets to it, or by recovery at the next start).
            Err(_) => {
                if let Some((pid, _)) = tree.first() {
                    nucleic_agents::process::terminate_tree(*pid, grace);
                }
            }
        }
        if timeout_at(deadline, handle.wait_finished()).await.is_err() {
            return Outcome::Late("the agent's exit");
        }
        if !tree_gone(&tree, stopped_at + grace, deadline).await {
            return Outcome::Late("processes of its tree");
        }
    }
    // The agent is gone: the writer stops for good (syncing the transcript).
    if timeout_at(ask_by(), handle.close()).await.is_err() {
        return Outcome::Late("its writer");
    }
    if !catalog_caught_up(catalog, id, handle.state().last_seq, deadline).await {
        return Outcome::Late("the catalog");
    }
    let key = id.to_owned();
    let cleared = {
        let catalog = Arc::clone(catalog);
        timeout_at(deadline, blocking(move || catalog.set_agent_process(&key, None))).await
    };
    if !matches!(cleared, Ok(Ok(()))) {
        return Outcome::Late("the catalog");
    }
    if was_running { Outcome::Stopped } else { Outcome::Closed }
}

/// The agent process the catalog recorded for `id` (if it still is that process) and its
/// descendants, agent first.
pub(crate) async fn agent_tree(catalog: &Arc<Catalog>, id: &str, by: Instant) -> Vec<Member> {
    let (catalog, key) = (Arc::clone(catalog), id.to_owned());
    let row = timeout_at(by, blocking(move || catalog.session(&key))).await;
    let Ok(Ok(Some(row))) = row else { return Vec::new() };
    let Some(agent) = row.agent.filter(|a| alive(&(a.pid, a.start_ticks))) else {
        return Vec::new();
    };
    let mut tree = vec![(agent.pid, agent.start_ticks)];
    for pid in nucleic_agents::process::descendants(agent.pid) {
        if let Some(stat) = proc_stat(pid) {
            tree.push((pid, stat.start_ticks));
        }
    }
    tree
}

/// Waits until every process of `tree` is gone; SIGKILLs the rest at `kill_at`. False when some
/// are still there at `deadline`.
pub(crate) async fn tree_gone(tree: &[Member], kill_at: Instant, deadline: Instant) -> bool {
    let mut killed = false;
    loop {
        let left: Vec<Member> = tree.iter().copied().filter(alive).collect();
        if left.is_empty() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        if now >= kill_at && !killed {
            kill_members(&left);
            killed = true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn proc_stat(pid: u32) -> Option<nucleic_agents::process::ProcStat> {
    nucleic_agents::process::proc_stat(pid)
}

/// True while `member` runs (a zombie has already stopped).
pub(crate) fn alive(member: &Member) -> bool {
    nucleic_agents::process::is_running(member.0, member.1)
}

/// SIGKILLs the members still alive, with their current descendants.
pub(crate) fn kill_members(members: &[Member]) -> usize {
    let mut signalled = 0;
    for member in members.iter().filter(|m| alive(m)) {
        nucleic_agents::process::kill_tree(member.0);
        signalled += 1;
    }
    signalled
}

/// Waits until the catalog has folded every event up to `last_seq`.
pub(crate) async fn catalog_caught_up(
    catalog: &Arc<Catalog>,
    id: &str,
    last_seq: u64,
    deadline: Instant,
) -> bool {
    loop {
        let (c, key) = (Arc::clone(catalog), id.to_owned());
        let folded = timeout_at(deadline, blocking(move || c.session(&key))).await;
        match folded {
            Ok(Ok(Some(row))) if row.last_seq >= last_seq => return true,
            Ok(Ok(None)) => return true,
            Err(_) => return false,
            Ok(_) => {}
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
