//! Gemini CLI's row: launch (`gemini --acp` through the ACP adapter), modes, models, handoff,
//! confinement needs.

use nucleic_protocol::Backend;

use super::profile::{AcpOptions, GEMINI, TESTED_GEMINI};
use super::session::ACP_CAPABILITIES;
use crate::any::AgentLaunch;
use crate::backend::{
    AgentProgram, BackendDescription, ConfinementNeeds, Extras, LaunchRequest, ModelEndpoints,
    StateDir,
};
use crate::error::AgentError;

/// What Gemini CLI may read under `~/.gemini` but never write: what a later run by the person
/// loads (settings with their hooks and MCP servers, context, environment, folder trust) and its
/// credentials. The rest of the directory — chats, history, the project registry it rewrites by
/// rename — is its state, writable.
pub const GEMINI_READ_ONLY: &[&str] = &[
    "settings.json",
    "GEMINI.md",
    ".env",
    "trustedFolders.json",
    "oauth_creds.json",
    "google_accounts.json",
];

/// The folders of `~/.gemini` a later run loads code or prompts from: read-only, made first
/// when absent.
pub const GEMINI_READ_ONLY_DIRS: &[&str] =
    &["extensions", "commands", "agents", "skills", "policies"];

/// What a mode switch does to a live agent the host's policy decides for.
const HOST_DECIDES: &str = "applies at once to every write and command Gemini CLI asks about \
                            (reads are not asked); its own mode stays as started";

/// Google's Gemini CLI.
pub const GEMINI_CLI: BackendDescription = BackendDescription {
    backend: Backend::Gemini,
    name: "gemini",
    about: "Google Gemini CLI over the Agent Client Protocol (`gemini --acp`; its key or login \
            from `~/.gemini` or the environment)",
    label: "Gemini CLI",
    program: AgentProgram::Installed {
        executable: "gemini",
        package: "gemini-cli",
        tested: TESTED_GEMINI,
        instead: "another backend",
    },
    capabilities: ACP_CAPABILITIES,
    // The models its `session/new` offers (`--model` takes others).
    models: &["auto", "gemini-2.5-pro", "gemini-3.8-flash", "gemini-3.5-flash-lite"],
    permission_modes: &["default", "acceptEdits", "plan", "bypassPermissions"],
    extras: Extras { append_system_prompt: false, exec: false, host_hooks: false },
    // `--resume` takes the session's UUID, which is the ACP session id.
    handoff: Some("gemini --resume"),
    session_files: None,
    policy: true,
    live_mode_switch: HOST_DECIDES,
    confinement: ConfinementNeeds {
        optional: false,
        home_state: None,
        state_dir: Some(StateDir {
            variable: "GEMINI_CLI_HOME",
            within: Some(".gemini"),
            default: ".gemini",
            read_only: GEMINI_READ_ONLY,
            read_only_dirs: GEMINI_READ_ONLY_DIRS,
            base_urls_in: None,
        }),
        private_copies: &[],
        settings_seeds: &[],
        endpoints: ModelEndpoints {
            base_url_variables: &["GOOGLE_GEMINI_BASE_URL"],
            defaults: &[
                "generativelanguage.googleapis.com:443",
                "cloudcode-pa.googleapis.com:443",
                "oauth2.googleapis.com:443",
            ],
            defaults_only_when_unset: true,
        },
    },
    launch,
};

/// The ACP adapter with Gemini's profile; the mode is mapped through it (checked here).
fn launch(_: &BackendDescription, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
    let LaunchRequest { common, .. } = request;
    let mut o = AcpOptions::new(&GEMINI, common.program.clone(), common.cwd.clone());
    o.common = common;
    o.agent_mode()?;
    Ok(AgentLaunch::Acp(o))
}
