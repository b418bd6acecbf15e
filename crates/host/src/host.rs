//! `Host`: the face front ends hold — opening a host's data, and a thin wrapper that derefs to
//! the shared [`Context`] every part of the host takes.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use nucleic_push::RetryPolicy;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use crate::config::HostConfig;
use crate::context::Context;
use crate::devices::push::PushReport;
use crate::error::{HostError, blocking};
use crate::lifecycle::gate::LaunchGate;
use crate::lifecycle::recovery::{open_catalog, recover_sessions};
use crate::lifecycle::recovery_report::RecoveryReport;
use crate::sessions::writing::WriterTurns;

/// The host. Share it as `Arc<Host>`; every operation is a method of the [`Context`] it derefs
/// to, defined by the part it belongs to.
#[derive(Debug)]
pub struct Host {
    ctx: Arc<Context>,
}

impl Deref for Host {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl Host {
    /// Opens the host's data under `config.home` (created 0700; an existing home, its files and
    /// session directories are tightened to 0700 / 0600).
    pub async fn open(config: HostConfig) -> Result<Arc<Host>, HostError> {
        crate::lifecycle::private::private_home(&config.home, &config.sessions_dir()).map_err(
            |e| {
                HostError::Invalid(format!(
                    "cannot create {} privately: {e}",
                    config.home.display()
                ))
            },
        )?;
        let credentials = crate::devices::credentials::Credentials::load(&config.home)?;
        let chat_people = crate::devices::chat_registry::ChatPeople::load(&config.home)?;
        let (path, sessions) = (config.catalog_path(), config.sessions_dir());
        let keepers = config.keepers_dir();
        let (catalog, report) = blocking(move || {
            let mut report = RecoveryReport::default();
            let catalog = open_catalog(&path, &sessions, &mut report)?;
            recover_sessions(&catalog, &sessions, &keepers, &mut report)?;
            Ok::<_, HostError>((catalog, report))
        })
        .await?;
        let (changes, _) = broadcast::channel(1024);
        let (writes, _) = broadcast::channel(1024);
        // Probes bubblewrap once for the process (a child process: off the async workers).
        let probed = config.clone();
        blocking(move || {
            crate::agents::launch::report_isolation(&probed);
            Ok::<_, HostError>(())
        })
        .await?;
        let kept: Vec<_> = report
            .kept
            .iter()
            .map(|id| {
                (id.clone(), crate::agents::keeper_dirs::keeper_dirs_of(&config.keepers_dir(), id))
            })
            .collect();
        let (turns, turns_done) = tokio::sync::mpsc::unbounded_channel();
        let ctx = Arc::new_cyclic(|me| Context {
            me: me.clone(),
            config,
            catalog: Arc::new(catalog),
            live: Mutex::default(),
            changes,
            writes,
            recovery: report,
            credentials,
            chat_people,
            gate: LaunchGate::default(),
            writer_turns: WriterTurns::default(),
            idle_release: crate::sessions::writing::IdleRelease::default(),
            keepers: Arc::default(),
            pools: crate::worktrees::pool::Pools::default(),
            checks: crate::dev_loop::check_runs::CheckRuns::default(),
            policies: crate::policy::session::LivePolicies::default(),
            egress: crate::policy::egress_proxies::EgressProxies::default(),
            turns,
            disk_moves: tokio::sync::Mutex::default(),
            reply_turns: crate::api::reply_turns::ReplyTurns::default(),
            review_locks: crate::dev_loop::session_locks::SessionLocks::default(),
            in_place: crate::sessions::in_place_lock::InPlaceLocks::default(),
            turn_snapshots: std::sync::atomic::AtomicBool::new(true),
            turn_watches: crate::dev_loop::turn_watch::TurnWatches::default(),
        });
        tokio::spawn(crate::dev_loop::checks::after_turns(Arc::downgrade(&ctx), turns_done));
        ctx.readopt_keepers(kept).await;
        Ok(Arc::new(Host { ctx }))
    }

    /// Starts tending the warm worktree pools of every project (the daemon does; in-process
    /// hosts run without pools unless they call this). Worktrees recorded by an earlier host
    /// are checked in full before they are handed out again.
    pub fn start_pools(&self) {
        self.ctx.start_pools();
    }

    /// Checks every ready pooled worktree in full now (discarding what changed behind the
    /// host's back), follows base moves and refills, instead of waiting for the next round.
    pub async fn recheck_pools(&self) {
        self.ctx.recheck_pools().await;
    }

    /// Runs one round of tending now (follow base moves, due checks, refill) and waits for it.
    pub async fn tend_pools_now(&self) {
        self.ctx.tend_pools_now().await;
    }

    /// Starts the notifier: every session change that needs a person (the rule of
    /// [`nucleic_push::needs_person`]) sends each subscribed device outside its quiet hours one
    /// content-free message, tried per `policy`; expired subscriptions (404/410) are dropped.
    /// Ends when the host is dropped. Outcomes go to `reports` when given, else failures to
    /// stderr.
    pub fn start_push(
        &self,
        policy: RetryPolicy,
        reports: Option<mpsc::UnboundedSender<PushReport>>,
    ) -> JoinHandle<()> {
        self.ctx.start_push(policy, reports)
    }
}
