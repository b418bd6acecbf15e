//! The backends this host offers (for `welcome`): whether each can start, what it can do, and
//! what a new-session form can suggest — each from its description (`nucleic_agents::backend`).

use nucleic_agents::BACKENDS;
use nucleic_protocol::BackendInfo;

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
    fn available(&self, backend: nucleic_protocol::Backend) -> bool {
        self.config.agents.program(backend).is_some_and(|(program, _)| program.is_file())
    }
}
