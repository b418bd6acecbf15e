//! One launch description and one running handle for every backend, so hosts start Claude Code,
//! the simulated agent or Codex through the same calls.

use nucleic_protocol::{Backend, Decision};

use crate::options::CommonOptions;
use tokio::sync::mpsc;

use crate::acp::{AcpHandle, AcpOptions, run_acp, spawn_acp};
use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::claude::{ClaudeHandle, ClaudeOptions, run_claude, spawn_claude};
use crate::codex::{
    CodexExecHandle, CodexExecOptions, CodexHandle, CodexOptions, run_codex, run_codex_exec,
    spawn_codex, spawn_codex_exec,
};
use crate::error::AgentError;
use crate::keeper::{
    KeeperDir, KeeperError, KeeperHello, KeeperSpec, Reach, attach, read_spool, start_keeper,
};
use crate::process::SpawnSpec;
use crate::supervisor::{AgentProcess, Checkpoint, Origins, Streams, Supervision};

/// How long a host waits for a keeper to listen and say hello.
pub const KEEPER_ATTACH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// An agent run by a keeper, as the host attached to it.
#[derive(Debug)]
pub struct KeptAgent {
    pub agent: AnyAgent,
    pub outputs: mpsc::Receiver<AgentOutput>,
    /// The keeper's hello (its run id, the agent's pid); `None` for a dead keeper's spool.
    pub hello: Option<KeeperHello>,
}

/// How to start an agent: the backend's own options.
#[derive(Debug, Clone)]
pub enum AgentLaunch {
    /// Claude Code, or the simulated agent (same protocol; `backend` in the options says which).
    Claude(ClaudeOptions),
    /// `codex app-server`.
    Codex(CodexOptions),
    /// `codex exec --json`: one prompt, no approvals.
    CodexExec(CodexExecOptions),
    /// An agent over the Agent Client Protocol (its profile says which: Gemini CLI).
    Acp(AcpOptions),
}

/// A running agent of any backend.
#[derive(Debug, Clone)]
pub enum AnyAgent {
    Claude(ClaudeHandle),
    Codex(CodexHandle),
    CodexExec(CodexExecHandle),
    Acp(AcpHandle),
}

impl AgentLaunch {
    /// The backend the events will be recorded under.
    pub fn backend(&self) -> Backend {
        match self {
            AgentLaunch::Claude(o) => o.backend,
            AgentLaunch::Codex(_) | AgentLaunch::CodexExec(_) => Backend::Codex,
            AgentLaunch::Acp(o) => o.profile.backend,
        }
    }

    /// The options every backend shares (program, cwd, mode, model, resume, env, confinement).
    pub fn common(&self) -> &CommonOptions {
        match self {
            AgentLaunch::Claude(o) => &o.common,
            AgentLaunch::Codex(o) => &o.common,
            AgentLaunch::CodexExec(o) => &o.common,
            AgentLaunch::Acp(o) => &o.common,
        }
    }

    /// The same, to change (the host fills in `isolation` once the launch is built).
    pub fn common_mut(&mut self) -> &mut CommonOptions {
        match self {
            AgentLaunch::Claude(o) => &mut o.common,
            AgentLaunch::Codex(o) => &mut o.common,
            AgentLaunch::CodexExec(o) => &mut o.common,
            AgentLaunch::Acp(o) => &mut o.common,
        }
    }

    /// How long the adapter's own watchdog lets a turn make no progress (`None`: no watchdog).
    pub fn provider_timeout(&self) -> Option<std::time::Duration> {
        match self {
            AgentLaunch::Claude(_) | AgentLaunch::Acp(_) => None,
            AgentLaunch::Codex(o) => o.provider_timeout,
            AgentLaunch::CodexExec(o) => o.provider_timeout,
        }
    }

    /// What holds for the commands the agent runs inside Nucleic's sandbox, beyond it (one
    /// sentence for the confinement summary), when the backend adds a sandbox of its own.
    pub fn commands_note(&self) -> Option<String> {
        match self {
            AgentLaunch::Claude(o) => o.command_sandbox().map(|s| s.note()),
            AgentLaunch::Codex(o) => o.command_sandbox().map(|s| s.note()),
            AgentLaunch::CodexExec(o) => o.command_sandbox().map(|s| s.note()),
            // Its commands run in Nucleic's sandbox only; its file writes are the host's.
            AgentLaunch::Acp(_) => None,
        }
    }

    /// Starts the agent. The outputs end with exactly one [`AgentOutput::Exited`].
    pub fn spawn(&self) -> Result<(AnyAgent, mpsc::Receiver<AgentOutput>), AgentError> {
        match self {
            AgentLaunch::Claude(o) => spawn_claude(o).map(|(h, rx)| (AnyAgent::Claude(h), rx)),
            AgentLaunch::Codex(o) => spawn_codex(o).map(|(h, rx)| (AnyAgent::Codex(h), rx)),
            AgentLaunch::CodexExec(o) => {
                spawn_codex_exec(o).map(|(h, rx)| (AnyAgent::CodexExec(h), rx))
            }
            AgentLaunch::Acp(o) => spawn_acp(o).map(|(h, rx)| (AnyAgent::Acp(h), rx)),
        }
    }

    /// The process the launch starts.
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        match self {
            AgentLaunch::Claude(o) => o.spawn_spec(),
            AgentLaunch::Codex(o) => o.spawn_spec(),
            AgentLaunch::CodexExec(o) => o.spawn_spec(),
            AgentLaunch::Acp(o) => o.spawn_spec(),
        }
    }

    /// Starts the agent under a keeper (`program __keeper <dir>`, see [`crate::keeper`]) so it
    /// outlives the host, and attaches to it. Its events carry origins.
    pub async fn spawn_kept(
        &self,
        program: &std::path::Path,
        dir: &KeeperDir,
        tune: impl FnOnce(&mut KeeperSpec),
    ) -> Result<KeptAgent, KeeperError> {
        let mut spec = KeeperSpec::new(self.spawn_spec()?);
        tune(&mut spec);
        start_keeper(program, dir, &spec)?;
        let attached = attach(dir, Reach::Starting, KEEPER_ATTACH_DEADLINE).await?;
        let origins = Origins { run: spec.run, after: Checkpoint::default() };
        let (agent, outputs) = self.run(attached.process, attached.streams, origins, false);
        Ok(KeptAgent { agent, outputs, hello: Some(attached.hello) })
    }

    /// Attaches to the keeper in `dir`, started by a previous host for this launch: its output
    /// is decoded again from the start (rebuilding the adapter's state) and events up to
    /// `after` (what the transcript holds of run `run`) are not handed over again.
    pub async fn readopt(
        &self,
        dir: &KeeperDir,
        after: impl FnOnce(&str) -> Checkpoint,
    ) -> Result<KeptAgent, KeeperError> {
        let attached = attach(dir, Reach::Existing, KEEPER_ATTACH_DEADLINE).await?;
        let origins =
            Origins { after: after(&attached.hello.run), run: attached.hello.run.clone() };
        let (agent, outputs) = self.run(attached.process, attached.streams, origins, true);
        Ok(KeptAgent { agent, outputs, hello: Some(attached.hello) })
    }

    /// What a keeper that is gone left in `dir`: its spool decoded as [`AgentLaunch::readopt`]
    /// does, with no agent behind it (it ends with the recorded exit, or an unknown one).
    pub fn replay_spool(
        &self,
        dir: &KeeperDir,
        after: impl FnOnce(&str) -> Checkpoint,
    ) -> Result<KeptAgent, KeeperError> {
        let run = dir.read_spec()?.run;
        let streams = read_spool(dir)?;
        let process = std::sync::Arc::new(AgentProcess::new(tokio::io::sink(), None));
        let origins = Origins { after: after(&run), run };
        let (agent, outputs) = self.run(process, streams, origins, true);
        Ok(KeptAgent { agent, outputs, hello: None })
    }

    /// Supervises a started (or re-adopted) agent with its backend's protocol.
    fn run(
        &self,
        process: std::sync::Arc<AgentProcess>,
        streams: Streams,
        origins: Origins,
        adopted: bool,
    ) -> (AnyAgent, mpsc::Receiver<AgentOutput>) {
        let supervision =
            |watchdog| Supervision { watchdog, origins: Some(origins), ..Supervision::default() };
        match self {
            AgentLaunch::Claude(o) => {
                let (h, rx) =
                    run_claude(process, streams, supervision(None), o.host_hooks && !adopted);
                (AnyAgent::Claude(h), rx)
            }
            AgentLaunch::Codex(o) => {
                let (h, rx) =
                    run_codex(o, process, streams, supervision(o.provider_timeout), adopted);
                (AnyAgent::Codex(h), rx)
            }
            AgentLaunch::CodexExec(o) => {
                let (h, rx) = run_codex_exec(o, process, streams, supervision(o.provider_timeout));
                (AnyAgent::CodexExec(h), rx)
            }
            AgentLaunch::Acp(o) => {
                let (h, rx) = run_acp(o, process, streams, supervision(None), adopted);
                (AnyAgent::Acp(h), rx)
            }
        }
    }
}

/// `$call` on the handle inside `$agent`, whichever backend it is.
macro_rules! on_handle {
    ($agent:expr, $h:ident => $call:expr) => {
        match $agent {
            AnyAgent::Claude($h) => $call,
            AnyAgent::Codex($h) => $call,
            AnyAgent::CodexExec($h) => $call,
            AnyAgent::Acp($h) => $call,
        }
    };
}

impl AgentControl for AnyAgent {
    fn capabilities(&self) -> Capabilities {
        on_handle!(self, h => h.capabilities())
    }

    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        on_handle!(self, h => h.send_user_text(text).await)
    }

    async fn respond(&self, request_id: &str, decision: &Decision) -> Result<(), AgentError> {
        on_handle!(self, h => h.respond(request_id, decision).await)
    }

    fn is_precheck(&self, request_id: &str) -> bool {
        on_handle!(self, h => h.is_precheck(request_id))
    }

    async fn defer(&self, request_id: &str) -> Result<(), AgentError> {
        on_handle!(self, h => h.defer(request_id).await)
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        on_handle!(self, h => h.interrupt().await)
    }

    async fn set_model(&self, model: &str) -> Result<(), AgentError> {
        on_handle!(self, h => h.set_model(model).await)
    }

    async fn set_permission_mode(&self, mode: &str) -> Result<(), AgentError> {
        on_handle!(self, h => h.set_permission_mode(mode).await)
    }

    fn process(&self) -> Option<&AgentProcess> {
        on_handle!(self, h => h.process())
    }
}
