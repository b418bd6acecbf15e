//! Codex's row: launch (`app-server`, or `exec --json` for one prompt), modes, models, handoff,
//! confinement needs.

use nucleic_protocol::Backend;

use super::exec_session::CodexExecOptions;
use super::launch::{CodexOptions, PERMISSION_MODES};
use super::session::CODEX_CAPABILITIES;
use crate::any::AgentLaunch;
use crate::backend::{
    AgentProgram, BackendDescription, ConfinementNeeds, Extras, LaunchRequest, ModelEndpoints,
    SessionFiles, StateDir,
};
use crate::error::AgentError;

/// The Codex version the adapter is tested against.
pub const TESTED_CODEX: &str = "0.171.0";

/// The modes the adapter maps onto approval policy + sandbox, the default first.
const MODES: [&str; PERMISSION_MODES.len()] = {
    let mut modes = [""; PERMISSION_MODES.len()];
    let mut i = 0;
    while i < modes.len() {
        modes[i] = PERMISSION_MODES[i].0;
        i += 1;
    }
    modes
};

/// OpenAI Codex.
pub const CODEX: BackendDescription = BackendDescription {
    backend: Backend::Codex,
    name: "codex",
    about: "OpenAI Codex (`codex app-server`; `CODEX_HOME` and the provider's key from the \
            environment)",
    label: "Codex",
    program: AgentProgram::Installed {
        executable: "codex",
        package: "codex",
        tested: TESTED_CODEX,
        instead: "another backend",
    },
    capabilities: CODEX_CAPABILITIES,
    // Models of the CLI's catalog (`codex -m`).
    models: &["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex"],
    permission_modes: &MODES,
    extras: Extras { append_system_prompt: false, exec: true, host_hooks: false },
    handoff: Some("codex resume"),
    policy: true,
    session_files: Some(SessionFiles::CodexRollouts),
    live_mode_switch: "applies at once to every command and file change codex asks about \
                       (every write and every command it does not know to be safe); codex's \
                       own sandbox stays as started",
    confinement: ConfinementNeeds {
        optional: false,
        home_state: None,
        // Its sessions and state are writable; its configuration is policy.
        state_dir: Some(StateDir {
            variable: "CODEX_HOME",
            within: None,
            default: ".codex",
            read_only: &["config.toml"],
            read_only_dirs: &[],
            base_urls_in: Some("config.toml"),
        }),
        private_copies: &[],
        settings_seeds: &[],
        endpoints: ModelEndpoints {
            base_url_variables: &["OPENAI_BASE_URL", "OPENAI_API_BASE"],
            defaults: &["api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"],
            defaults_only_when_unset: false,
        },
    },
    launch,
};

/// `app-server` with the mode mapped onto approval policy and sandbox (`thread/resume` for a
/// resume), or `exec --json` with the mode mapped onto its sandbox.
fn launch(_: &BackendDescription, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
    let LaunchRequest { common, provider_timeout, exec, fork, .. } = request;
    let (program, cwd) = (common.program.clone(), common.cwd.clone());
    if exec && fork {
        return Err(AgentError::Refused(
            "codex's exec mode cannot fork a conversation (app-server's thread/fork can)".into(),
        ));
    }
    if exec {
        let mut o = CodexExecOptions::new(program, cwd);
        o.common = common;
        o.sandbox()?;
        o.provider_timeout = provider_timeout.or(o.provider_timeout);
        return Ok(AgentLaunch::CodexExec(o));
    }
    let mode = common.permission_mode.clone();
    let mut o = CodexOptions::new(program, cwd);
    o.common = common;
    o.set_permission_mode(&mode)?;
    o.fork = fork;
    // codex retries an unreachable provider forever, and its retry notices count as output:
    // the adapter's own watchdog gives up on turns that make no progress.
    o.provider_timeout = provider_timeout.or(o.provider_timeout);
    Ok(AgentLaunch::Codex(o))
}
