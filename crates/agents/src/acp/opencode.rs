//! OpenCode's profile and row: `opencode acp`, every edit and command asked (so the host's
//! policy sees each call), modes `build` / `plan`, its state under the XDG data home.

use nucleic_protocol::Backend;

use super::profile::{AcpOptions, AcpProfile};
use super::session::ACP_CAPABILITIES;
use crate::any::AgentLaunch;
use crate::backend::{
    AgentProgram, BackendDescription, ConfinementNeeds, Extras, LaunchRequest, ModelEndpoints,
    StateDir,
};
use crate::error::AgentError;

/// The OpenCode version the adapter is tested against.
pub const TESTED_OPENCODE: &str = "1.18.33";

/// OpenCode's permission rules, forced over its configuration: with its default (allow all) it
/// never sends `session/request_permission`, and the host's policy would see nothing.
pub const OPENCODE_PERMISSION: &str = r#"{"edit":"ask","bash":"ask"}"#;

/// OpenCode (`opencode acp`).
pub const OPENCODE: AcpProfile = AcpProfile {
    backend: Backend::OpenCode,
    label: "OpenCode",
    args: &["acp"],
    // `opencode acp` takes no model flag (the model is its config's, or `session/set_model`).
    model_flag: None,
    env: &[
        ("OPENCODE_PERMISSION", OPENCODE_PERMISSION),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_SHARE", "1"),
    ],
    // `session/new` has no `modes`, only a `mode` config option (`build`, `plan`): every mode
    // but plan is `build`, the host's policy deciding what is asked.
    modes: &[
        ("default", "build"),
        ("acceptEdits", "build"),
        ("plan", "plan"),
        ("bypassPermissions", "build"),
    ],
    missing_file_as_empty: false,
    hidden_text_prefixes: &[],
};

/// What a mode switch does to a live agent the host's policy decides for.
/// OpenCode's `Config.ensureGitignore` writes `.opencode/.gitignore` at every start when absent
/// and forgives only "permission denied": on the read-only mount of the settings folder it
/// exits "Unexpected error". The host makes the file first, with OpenCode's own content, which
/// ignores itself: git sees no change.
const OPENCODE_SETTINGS_SEEDS: &[(&str, &str, &str)] = &[(
    ".opencode",
    ".gitignore",
    "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore",
)];

const HOST_DECIDES: &str = "applies at once to every edit and command OpenCode asks about \
                            (reads are not asked); its own mode stays as started";

/// Configuration files in OpenCode's data folder a later run loads: read-only.
const OPENCODE_READ_ONLY: &[&str] = &["auth.json"];

/// OpenCode.
pub const OPENCODE_CLI: BackendDescription = BackendDescription {
    backend: Backend::OpenCode,
    name: "opencode",
    about: "OpenCode over the Agent Client Protocol (`opencode acp`; its provider from its \
            config, `OPENCODE_CONFIG` or `OPENCODE_CONFIG_CONTENT`)",
    label: "OpenCode",
    program: AgentProgram::Installed {
        executable: "opencode",
        package: "opencode",
        tested: TESTED_OPENCODE,
        instead: "another backend",
    },
    capabilities: ACP_CAPABILITIES,
    // Its own model list comes from its config; none is suggested.
    models: &[],
    permission_modes: &["default", "acceptEdits", "plan", "bypassPermissions"],
    extras: Extras { append_system_prompt: false, exec: false, host_hooks: false },
    // `opencode --session <id>` opens the session (ids `ses_…`, the ACP session id).
    handoff: Some("opencode --session"),
    session_files: None,
    policy: true,
    live_mode_switch: HOST_DECIDES,
    confinement: ConfinementNeeds {
        optional: false,
        home_state: None,
        // Its session database lives in `$XDG_DATA_HOME/opencode`.
        state_dir: Some(StateDir {
            variable: "XDG_DATA_HOME",
            within: Some("opencode"),
            default: ".local/share/opencode",
            read_only: OPENCODE_READ_ONLY,
            read_only_dirs: &[],
            base_urls_in: None,
        }),
        private_copies: &[],
        settings_seeds: OPENCODE_SETTINGS_SEEDS,
        endpoints: ModelEndpoints {
            // The provider's base URL is in its config, which the host does not read: a
            // confined OpenCode reaches what `agent_env` or the person's rules allow.
            base_url_variables: &["OPENAI_BASE_URL"],
            defaults: &["opencode.ai:443", "api.openai.com:443", "api.anthropic.com:443"],
            defaults_only_when_unset: true,
        },
    },
    launch,
};

/// The ACP adapter with OpenCode's profile; the mode is mapped through it (checked here).
fn launch(_: &BackendDescription, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
    let LaunchRequest { common, .. } = request;
    let mut o = AcpOptions::new(&OPENCODE, common.program.clone(), common.cwd.clone());
    o.common = common;
    o.agent_mode()?;
    Ok(AgentLaunch::Acp(o))
}
