//! The backends this host offers (for `welcome`): whether each can start, what it can do, and
//! what a new-session form can suggest — each from its description (`nucleic_agents::backend`).

use std::ffi::OsString;
use std::path::Path;

use nucleic_agents::BACKENDS;
use nucleic_protocol::{Backend, BackendInfo};

use crate::config::AgentPaths;
use crate::context::Context;

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

impl Context {
    /// Every backend, in a stable order, with whether sessions can be created with it here.
    pub fn backends(&self) -> Vec<BackendInfo> {
        BACKENDS
            .iter()
            .map(|d| BackendInfo {
                backend: d.backend,
                available: self.available(d.backend),
                capabilities: d.capabilities,
                models: strings(d.models),
                permission_modes: strings(d.permission_modes),
            })
            .collect()
    }

    /// Whether `agent_options` can start this backend: its executable is configured and exists.
    pub(crate) fn available(&self, backend: nucleic_protocol::Backend) -> bool {
        self.config.agents.program(backend).is_some_and(|(program, _)| program.is_file())
    }
}

/// The backend of a project that names none, and of an imported session whose transcript does
/// not say.
pub(crate) const DEFAULT_BACKEND: Backend = Backend::ClaudeCode;

impl AgentPaths {
    /// The executable that starts `backend` and the arguments before its flags; `None` when it
    /// is not installed.
    pub fn program(&self, backend: Backend) -> Option<(&Path, &[OsString])> {
        let none: &[OsString] = &[];
        let rows = [
            (Backend::ClaudeCode, self.claude.as_deref(), none),
            (Backend::Codex, self.codex.as_deref(), none),
            (Backend::Gemini, self.gemini.as_deref(), none),
            (Backend::OpenCode, self.opencode.as_deref(), none),
            (Backend::Qwen, self.qwen.as_deref(), none),
            (Backend::Simulated, Some(self.sim_program.as_path()), &self.sim_prefix[..]),
        ];
        let (_, program, prefix) = rows.into_iter().find(|(b, _, _)| *b == backend)?;
        Some((program?, prefix))
    }
}
