//! Claude Code's row and the simulated agent's (same protocol): launch, modes, models, handoff,
//! confinement needs.

use nucleic_protocol::Backend;

use super::launch::ClaudeOptions;
use super::session::CLAUDE_CAPABILITIES;
use crate::any::AgentLaunch;
use crate::backend::{
    AgentProgram, BackendDescription, ConfinementNeeds, Extras, LaunchRequest, ModelEndpoints,
    SessionFiles,
};
use crate::error::AgentError;

/// The Claude Code version the adapter is tested against.
pub const TESTED_CLAUDE: &str = "2.1.332";

/// What Claude Code writes under `~/.claude` as it works (created first, so they are there to
/// bind): conversations, todos, shell snapshots, its bookkeeping. The rest of `~/.claude` —
/// settings, plugins, agents, commands, hooks, credentials — stays read-only: what a later
/// Claude Code run by the person would load or execute.
pub const CLAUDE_WRITABLE: &[&str] = &[
    "projects",
    "sessions",
    "todos",
    "shell-snapshots",
    "session-env",
    "file-history",
    "plans",
    "statsig",
    "backups",
    "debug",
    "telemetry",
];

/// The modes a new-session form offers, the default first (the CLI takes more:
/// [`super::PERMISSION_MODES`], all of which a launch accepts).
const OFFERED_MODES: &[&str] = &["default", "acceptEdits", "plan", "bypassPermissions"];

/// What a mode switch does to a live agent the host's policy decides for.
const HOST_DECIDES: &str = "applies at once: the host decides every tool call";

/// Claude Code.
pub const CLAUDE_CODE: BackendDescription = BackendDescription {
    backend: Backend::ClaudeCode,
    name: "claude",
    about: "Claude Code (the `claude` CLI)",
    label: "Claude Code",
    program: AgentProgram::Installed {
        executable: "claude",
        package: "claude-code",
        tested: TESTED_CLAUDE,
        instead: "the simulated backend",
    },
    capabilities: CLAUDE_CAPABILITIES,
    // Model aliases (`--model` also takes full model names).
    models: &["sonnet", "opus", "haiku"],
    permission_modes: OFFERED_MODES,
    extras: Extras { append_system_prompt: true, exec: false, host_hooks: true },
    handoff: Some("claude --resume"),
    policy: true,
    session_files: Some(SessionFiles::ClaudeTranscripts),
    live_mode_switch: HOST_DECIDES,
    confinement: ConfinementNeeds {
        optional: false,
        home_state: Some((".claude", CLAUDE_WRITABLE)),
        state_dir: None,
        // Its configuration file (MCP servers it would start, trust, onboarding).
        private_copies: &[".claude.json"],
        settings_seeds: &[],
        endpoints: ModelEndpoints {
            base_url_variables: &["ANTHROPIC_BASE_URL"],
            defaults: &["api.anthropic.com:443", "console.anthropic.com:443"],
            defaults_only_when_unset: true,
        },
    },
    launch,
};

/// The built-in simulated agent: Claude Code's protocol, no model, no network.
pub const SIMULATED: BackendDescription = BackendDescription {
    backend: Backend::Simulated,
    name: "sim",
    about: "The built-in simulated agent: no API key, no network",
    label: "simulated",
    program: AgentProgram::Nucleic { args: &[crate::entry_points::SIM_AGENT_ENTRY] },
    capabilities: CLAUDE_CAPABILITIES,
    // It reports whatever model it is given.
    models: &["sim"],
    permission_modes: OFFERED_MODES,
    extras: Extras { append_system_prompt: true, exec: false, host_hooks: false },
    handoff: Some("claude --resume"),
    policy: false,
    session_files: None,
    live_mode_switch: HOST_DECIDES,
    confinement: ConfinementNeeds {
        optional: true,
        home_state: None,
        state_dir: None,
        private_copies: &[],
        settings_seeds: &[],
        endpoints: ModelEndpoints {
            base_url_variables: &[],
            defaults: &[],
            defaults_only_when_unset: true,
        },
    },
    launch,
};

fn launch(d: &BackendDescription, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
    let LaunchRequest { common, prefix_args, fork, append_system_prompt, policy, .. } = request;
    let mode = common.permission_mode.clone();
    let mut o = ClaudeOptions::new(common.program.clone(), common.cwd.clone());
    o.common = common;
    o.set_permission_mode(&mode)?;
    o.backend = d.backend;
    o.prefix_args = prefix_args;
    o.fork = fork;
    o.append_system_prompt = append_system_prompt;
    // Every tool call is put to the host's policy first (the simulated agent has no hooks).
    o.host_hooks = policy && d.extras.host_hooks;
    Ok(AgentLaunch::Claude(o))
}
