//! Each running agent's way out: an egress proxy per session, served by the host on a Unix socket
//! that the agent's sandbox has bound in, allowing only the backend's model endpoints; every
//! refusal becomes an `egressRefused` event of the session.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nucleic_agents::isolation::Mount;
use nucleic_egress::{AllowList, EgressEvent};
use nucleic_protocol::{Backend, Confinement, EgressRefused, EventKind};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::AbortHandle;

use crate::agents::confinement::{egress_dir, model_endpoints};
use crate::config::AgentIsolation;
use crate::context::Context;
use crate::error::HostError;
use crate::policy::egress_ask::egress_ask_timeout;
use crate::policy::egress_proxies::{AsksEgress, Served, SessionRules};
use std::sync::Weak;

impl Context {
    /// Serves session `id`'s egress proxy (if it is not served already) in its socket directory,
    /// which a confined agent's sandbox has bound in; a socket left by an earlier host is
    /// replaced (an agent that outlived it reconnects to the new one). A name off `allowed` is
    /// asked about as an approval of the session.
    pub(crate) fn serve_egress(&self, id: &str, allowed: &[String]) -> Result<(), HostError> {
        if self.egress.running.lock().is_ok_and(|r| r.contains_key(id)) {
            return Ok(());
        }
        let list = allow_list(id, allowed)?;
        let grants = self.egress.grants_for(id);
        let asks = self.me.clone() as Weak<dyn AsksEgress>;
        let rules = Arc::new(SessionRules::new(list, grants, id, asks));
        let ask_deadline = egress_ask_timeout()?;
        let (proxy, mut refusals) = start_proxy(&self.config, id, rules.clone(), ask_deadline)?;
        let (me, session) = (self.me.clone(), id.to_owned());
        let relay = tokio::spawn(async move {
            while let Some(event) = refusals.recv().await {
                let EgressEvent::Refused { host, port, method, reason } = event else { continue };
                let Some(host_now) = me.upgrade() else { return };
                let refused = EgressRefused { host, port, method, reason };
                // A session that can no longer record loses the note, not the refusal.
                let _ = host_now.record(&session, EventKind::EgressRefused(refused)).await;
            }
        });
        let served = Served { proxy, relay: relay.abort_handle(), rules };
        if let Ok(mut running) = self.egress.running.lock() {
            running.insert(id.to_owned(), served);
        }
        Ok(())
    }

    /// Before an agent starts: its session's proxy served when its sandbox has a network
    /// bridge, and the `confinement` event that says what holds (recorded once it runs).
    pub(crate) fn prepare_confinement(
        &self,
        id: &str,
        opts: &nucleic_agents::AgentLaunch,
    ) -> Result<EventKind, HostError> {
        let spec = opts.spawn_spec().ok();
        let cwd = spec.as_ref().map(|s| s.cwd.clone()).unwrap_or_default();
        let Some(isolation) = spec.and_then(|s| s.isolation) else {
            return Ok(EventKind::Confinement(Confinement {
                confined: false,
                summary: unconfined_reason(self.config.agent_isolation),
                egress_allowed: Vec::new(),
            }));
        };
        let allowed = match &isolation.network {
            Some(network) => {
                self.serve_egress(id, &network.allowed)?;
                network.allowed.clone()
            }
            None => Vec::new(),
        };
        let writes =
            if isolation.mounts.iter().any(|m| matches!(m, Mount::Writable(p) if p == &cwd)) {
                "its worktree, git's session refs and its own state"
            } else {
                "its own state (the worktree is read-only)"
            };
        let network = match allowed.is_empty() {
            true => "no network".to_owned(),
            false => format!("network only to {}", allowed.join(", ")),
        };
        let mut summary = format!(
            "bubblewrap: your home and secrets hidden, writes only to {writes}, no privilege, {network}"
        );
        if let Some(note) = opts.commands_note() {
            summary = format!("{summary}; {note}");
        }
        Ok(EventKind::Confinement(Confinement { confined: true, summary, egress_allowed: allowed }))
    }

    /// Stops session `id`'s egress proxy and removes its socket directory.
    pub(crate) fn stop_egress(&self, id: &str) {
        let served = self.egress.running.lock().ok().and_then(|mut r| r.remove(id));
        self.egress.drop_grants(id);
        if served.is_some() {
            let _ = std::fs::remove_dir_all(egress_dir(&self.config, id));
        }
    }
}

/// Session `id`'s egress proxy, started in its socket directory: the task (aborted to stop it)
/// and the proxy's decisions.
pub(crate) fn start_proxy(
    config: &crate::config::HostConfig,
    id: &str,
    rules: Arc<dyn nucleic_egress::EgressRules>,
    ask_deadline: Duration,
) -> Result<(AbortHandle, UnboundedReceiver<EgressEvent>), HostError> {
    let dir = egress_dir(config, id);
    let socket = dir.join(nucleic_agents::isolation::EGRESS_SOCKET_NAME);
    let listener = bind(&dir, &socket).map_err(|e| {
        HostError::Invalid(format!("cannot serve the egress proxy at {}: {e}", socket.display()))
    })?;
    let (events, decisions) = tokio::sync::mpsc::unbounded_channel();
    let proxy_config = nucleic_egress::ProxyConfig { ask_deadline, ..Default::default() };
    let proxy = tokio::spawn(nucleic_egress::serve_with(listener, rules, events, proxy_config));
    Ok((proxy.abort_handle(), decisions))
}

pub(crate) fn allow_list(id: &str, allowed: &[String]) -> Result<AllowList, HostError> {
    AllowList::parse(allowed).map_err(|e| {
        HostError::Invalid(format!("session {id}'s egress allow-list is invalid: {e}"))
    })
}

/// The egress proxy of one agent run outside the daemon (`nucleic run`): stopped, and its
/// socket directory removed, when dropped.
#[derive(Debug)]
pub struct RunEgress {
    pub(crate) proxy: AbortHandle,
    pub(crate) dir: std::path::PathBuf,
    /// The proxy's decisions (a refusal is to be shown to the person).
    pub decisions: UnboundedReceiver<EgressEvent>,
}

impl RunEgress {
    /// Starts run `id`'s proxy for an agent of `backend` (inside a tokio runtime).
    pub fn start(
        config: &crate::config::HostConfig,
        id: &str,
        backend: Backend,
    ) -> Result<RunEgress, HostError> {
        let list = allow_list(id, &model_endpoints(config, backend))?;
        // Nobody to ask outside the daemon: what is not listed is refused at once.
        let (proxy, decisions) = start_proxy(config, id, Arc::new(list), Duration::ZERO)?;
        Ok(RunEgress { proxy, dir: egress_dir(config, id), decisions })
    }
}

impl Drop for RunEgress {
    fn drop(&mut self) {
        self.proxy.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh listening socket at `socket` in the private directory `dir`.
pub(crate) fn bind(dir: &Path, socket: &Path) -> std::io::Result<tokio::net::UnixListener> {
    crate::lifecycle::private::private_dir(dir)?;
    match std::fs::remove_file(socket) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    tokio::net::UnixListener::bind(socket)
}

/// Why an agent runs unconfined, in words.
pub(crate) fn unconfined_reason(setting: AgentIsolation) -> String {
    match (setting, crate::agents::launch::bubblewrap()) {
        (AgentIsolation::Off, _) => format!(
            "{}=off: the agent and its commands can read your secrets, write outside the \
             worktree and reach the network",
            AgentIsolation::VARIABLE
        ),
        (_, Err(why)) => format!("the simulated agent runs unconfined: {why}"),
        (_, Ok(_)) => "unconfined".to_owned(),
    }
}
