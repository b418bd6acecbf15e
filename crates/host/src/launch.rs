//! Starting an agent process for a session: which executable, which flags, which environment.

use std::path::Path;

use nucleic_agents::claude::ClaudeOptions;
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
) -> Result<ClaudeOptions, HostError> {
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
        Backend::Codex => {
            return Err(HostError::Invalid("the Codex backend is not available yet".into()));
        }
    };
    opts.backend = backend;
    opts.model = request.model.clone();
    if let Some(mode) = &request.permission_mode {
        opts.permission_mode = mode.clone();
    }
    opts.resume = request.resume.clone();
    opts.fork = request.fork;
    opts.env = config.agent_env.clone();
    Ok(opts)
}
