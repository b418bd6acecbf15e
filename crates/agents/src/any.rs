//! One launch description and one running handle for every backend, so hosts start Claude Code,
//! the simulated agent or Codex through the same calls.

use nucleic_protocol::{Backend, Decision};
use tokio::sync::mpsc;

use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::claude::{CLAUDE_CAPABILITIES, ClaudeHandle, ClaudeOptions, spawn_claude};
use crate::codex::{
    CODEX_CAPABILITIES, CodexExecHandle, CodexExecOptions, CodexHandle, CodexOptions, spawn_codex,
    spawn_codex_exec,
};
use crate::error::AgentError;
use crate::supervisor::AgentProcess;

/// How to start an agent: the backend's own options.
#[derive(Debug, Clone)]
pub enum AgentLaunch {
    /// Claude Code, or the simulated agent (same protocol; `backend` in the options says which).
    Claude(ClaudeOptions),
    /// `codex app-server`.
    Codex(CodexOptions),
    /// `codex exec --json`: one prompt, no approvals.
    CodexExec(CodexExecOptions),
}

/// A running agent of any backend.
#[derive(Debug, Clone)]
pub enum AnyAgent {
    Claude(ClaudeHandle),
    Codex(CodexHandle),
    CodexExec(CodexExecHandle),
}

/// What `backend` supports through its interactive adapter (Codex: `app-server`), known before
/// anything is started.
pub fn backend_capabilities(backend: Backend) -> Capabilities {
    match backend {
        Backend::ClaudeCode | Backend::Simulated => CLAUDE_CAPABILITIES,
        Backend::Codex => CODEX_CAPABILITIES,
    }
}

impl AgentLaunch {
    /// The backend the events will be recorded under.
    pub fn backend(&self) -> Backend {
        match self {
            AgentLaunch::Claude(o) => o.backend,
            AgentLaunch::Codex(_) | AgentLaunch::CodexExec(_) => Backend::Codex,
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
        }
    }
}

impl AgentControl for AnyAgent {
    fn capabilities(&self) -> Capabilities {
        match self {
            AnyAgent::Claude(h) => h.capabilities(),
            AnyAgent::Codex(h) => h.capabilities(),
            AnyAgent::CodexExec(h) => h.capabilities(),
        }
    }

    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        match self {
            AnyAgent::Claude(h) => h.send_user_text(text).await,
            AnyAgent::Codex(h) => h.send_user_text(text).await,
            AnyAgent::CodexExec(h) => h.send_user_text(text).await,
        }
    }

    async fn respond(&self, request_id: &str, decision: &Decision) -> Result<(), AgentError> {
        match self {
            AnyAgent::Claude(h) => h.respond(request_id, decision).await,
            AnyAgent::Codex(h) => h.respond(request_id, decision).await,
            AnyAgent::CodexExec(h) => h.respond(request_id, decision).await,
        }
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        match self {
            AnyAgent::Claude(h) => h.interrupt().await,
            AnyAgent::Codex(h) => h.interrupt().await,
            AnyAgent::CodexExec(h) => h.interrupt().await,
        }
    }

    async fn set_model(&self, model: &str) -> Result<(), AgentError> {
        match self {
            AnyAgent::Claude(h) => h.set_model(model).await,
            AnyAgent::Codex(h) => h.set_model(model).await,
            AnyAgent::CodexExec(h) => h.set_model(model).await,
        }
    }

    async fn set_permission_mode(&self, mode: &str) -> Result<(), AgentError> {
        match self {
            AnyAgent::Claude(h) => h.set_permission_mode(mode).await,
            AnyAgent::Codex(h) => h.set_permission_mode(mode).await,
            AnyAgent::CodexExec(h) => h.set_permission_mode(mode).await,
        }
    }

    fn process(&self) -> Option<&AgentProcess> {
        match self {
            AnyAgent::Claude(h) => h.process(),
            AnyAgent::Codex(h) => h.process(),
            AnyAgent::CodexExec(h) => h.process(),
        }
    }
}
