//! Starting an agent process for a session: which executable, which flags, which environment.

use std::path::Path;

use nucleic_agents::AgentLaunch;
use nucleic_agents::claude::ClaudeOptions;
use nucleic_agents::codex::CodexOptions;
use nucleic_protocol::Backend;

use crate::config::HostConfig;
use crate::error::HostError;

/// What a session asks of its agent.
#[derive(Debug, Clone, Default)]
pub struct AgentRequest {
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    /// Resume this backend conversation (and fork it into a new one when `fork`).
    pub resume: Option<String>,
    pub fork: bool,
}

/// The launch options for `backend` in `cwd`.
pub fn agent_options(
    config: &HostConfig,
    backend: Backend,
    cwd: &Path,
    request: &AgentRequest,
) -> Result<AgentLaunch, HostError> {
    let mut opts = match backend {
        Backend::ClaudeCode => {
            let program = config.agents.claude.clone().ok_or_else(|| {
                HostError::Invalid(
                    "claude is not installed (scripts/install-agents.sh); use the simulated backend".into(),
                )
            })?;
            ClaudeOptions::new(program, cwd.to_owned())
        }
        Backend::Simulated => {
            let mut o = ClaudeOptions::new(config.agents.sim_program.clone(), cwd.to_owned());
            o.prefix_args = config.agents.sim_prefix.clone();
            o
        }
        Backend::Codex => return codex_options(config, cwd, request).map(AgentLaunch::Codex),
    };
    opts.backend = backend;
    opts.model = request.model.clone();
    if let Some(mode) = &request.permission_mode {
        opts.permission_mode = mode.clone();
    }
    opts.resume = request.resume.clone();
    opts.fork = request.fork;
    opts.env = config.agent_env.clone();
    Ok(AgentLaunch::Claude(opts))
}

/// `codex app-server` options: the permission mode mapped onto approval policy and sandbox,
/// `thread/resume` for a resume. Codex threads cannot be forked here, so a fork is refused.
fn codex_options(
    config: &HostConfig,
    cwd: &Path,
    request: &AgentRequest,
) -> Result<CodexOptions, HostError> {
    let program = config.agents.codex.clone().ok_or_else(|| {
        HostError::Invalid(
            "codex is not installed (scripts/install-agents.sh); use another backend".into(),
        )
    })?;
    if request.fork {
        return Err(HostError::Invalid("the Codex backend cannot fork a conversation".into()));
    }
    let mut o = CodexOptions::new(program, cwd.to_owned());
    if let Some(mode) = &request.permission_mode {
        o.set_permission_mode(mode).map_err(|e| HostError::Invalid(e.to_string()))?;
    }
    o.model = request.model.clone();
    o.resume = request.resume.clone();
    o.env = config.agent_env.clone();
    Ok(o)
}
