//! The backends this host offers (for `welcome`): whether each can start, what it can do, and
//! what a new-session form can suggest.

use nucleic_agents::claude::CLAUDE_CAPABILITIES;
use nucleic_agents::codex::{CODEX_CAPABILITIES, PERMISSION_MODES};
use nucleic_protocol::{Backend, BackendInfo};

use crate::host::Host;

/// Claude Code's model aliases (`--model` also takes full model names).
const CLAUDE_MODELS: &[&str] = &["sonnet", "opus", "haiku"];
/// Codex models of the CLI's catalog (`codex -m`).
const CODEX_MODELS: &[&str] = &["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex"];
/// The simulated agent reports whatever model it is given.
const SIM_MODELS: &[&str] = &["sim"];
/// Claude Code's `--permission-mode` values, the default first (the simulated agent takes the
/// same).
const CLAUDE_PERMISSION_MODES: &[&str] = &["default", "acceptEdits", "plan", "bypassPermissions"];

/// The modes the Codex adapter maps onto approval policy + sandbox, the default first.
const CODEX_PERMISSION_MODES: [&str; PERMISSION_MODES.len()] = {
    let mut modes = [""; PERMISSION_MODES.len()];
    let mut i = 0;
    while i < modes.len() {
        modes[i] = PERMISSION_MODES[i].0;
        i += 1;
    }
    modes
};

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

impl Host {
    /// Every backend, in a stable order, with whether sessions can be created with it here.
    pub fn backends(&self) -> Vec<BackendInfo> {
        [Backend::ClaudeCode, Backend::Codex, Backend::Simulated]
            .into_iter()
            .map(|backend| {
                let (capabilities, models, modes) = match backend {
                    Backend::ClaudeCode => {
                        (CLAUDE_CAPABILITIES, CLAUDE_MODELS, CLAUDE_PERMISSION_MODES)
                    }
                    Backend::Codex => {
                        (CODEX_CAPABILITIES, CODEX_MODELS, &CODEX_PERMISSION_MODES[..])
                    }
                    Backend::Simulated => {
                        (CLAUDE_CAPABILITIES, SIM_MODELS, CLAUDE_PERMISSION_MODES)
                    }
                };
                BackendInfo {
                    backend,
                    available: self.available(backend),
                    capabilities,
                    models: strings(models),
                    permission_modes: strings(modes),
                }
            })
            .collect()
    }

    /// Whether `agent_options` can start this backend: its executable is configured and exists.
    fn available(&self, backend: Backend) -> bool {
        match backend {
            Backend::ClaudeCode => self.config.agents.claude.as_ref().is_some_and(|p| p.is_file()),
            Backend::Simulated => self.config.agents.sim_program.is_file(),
            Backend::Codex => self.config.agents.codex.as_ref().is_some_and(|p| p.is_file()),
        }
    }
}
