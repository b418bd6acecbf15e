//! Qwen Code's profile and row: `qwen --acp` as fewer processes, set to its asking mode at
//! start (it starts in `auto`, whose model classifier would approve commands unasked).

use nucleic_protocol::Backend;

use super::profile::{AcpOptions, AcpProfile};
use super::session::ACP_CAPABILITIES;
use crate::any::AgentLaunch;
use crate::backend::{
    AgentProgram, BackendDescription, ConfinementNeeds, Extras, LaunchRequest, ModelEndpoints,
    StateDir,
};
use crate::error::AgentError;

/// The Qwen Code version the adapter is tested against.
pub const TESTED_QWEN: &str = "0.24.4";

/// Qwen Code (`qwen --acp`).
pub const QWEN: AcpProfile = AcpProfile {
    backend: Backend::Qwen,
    label: "Qwen Code",
    args: &["--acp"],
    model_flag: Some("--model"),
    // Two processes instead of three (its wrapper re-spawns itself; the group is killed).
    env: &[("QWEN_CODE_NO_RELAUNCH", "true")],
    // `session/new` reports `auto`, so the adapter sets `default` before the first prompt.
    modes: &[
        ("default", "default"),
        ("acceptEdits", "auto-edit"),
        ("plan", "plan"),
        ("bypassPermissions", "yolo"),
    ],
    missing_file_as_empty: false,
    hidden_text_prefixes: &[],
};

/// What a mode switch does to a live agent the host's policy decides for.
const HOST_DECIDES: &str = "applies at once to every write and command Qwen Code asks about \
                            (reads are not asked); its own mode stays as started";

/// What Qwen Code may read under `~/.qwen` but never write: what a later run loads.
pub const QWEN_READ_ONLY: &[&str] = &["settings.json", "QWEN.md", ".env", "oauth_creds.json"];

/// Folders of `~/.qwen` a later run loads code or prompts from.
pub const QWEN_READ_ONLY_DIRS: &[&str] = &["extensions", "commands", "agents", "skills"];

/// Qwen Code.
pub const QWEN_CODE: BackendDescription = BackendDescription {
    backend: Backend::Qwen,
    name: "qwen",
    about: "Qwen Code over the Agent Client Protocol (`qwen --acp`; its key from `~/.qwen` or \
            OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL)",
    label: "Qwen Code",
    program: AgentProgram::Installed {
        executable: "qwen",
        package: "qwen-code",
        tested: TESTED_QWEN,
        instead: "another backend",
    },
    capabilities: ACP_CAPABILITIES,
    models: &[],
    permission_modes: &["default", "acceptEdits", "plan", "bypassPermissions"],
    extras: Extras { append_system_prompt: false, exec: false, host_hooks: false },
    handoff: Some("qwen --resume"),
    session_files: None,
    policy: true,
    live_mode_switch: HOST_DECIDES,
    confinement: ConfinementNeeds {
        optional: false,
        home_state: None,
        state_dir: Some(StateDir {
            variable: "QWEN_HOME",
            within: None,
            default: ".qwen",
            read_only: QWEN_READ_ONLY,
            read_only_dirs: QWEN_READ_ONLY_DIRS,
            base_urls_in: None,
        }),
        private_copies: &[],
        settings_seeds: &[],
        endpoints: ModelEndpoints {
            base_url_variables: &["OPENAI_BASE_URL"],
            defaults: &["dashscope.aliyuncs.com:443", "chat.qwen.ai:443"],
            defaults_only_when_unset: true,
        },
    },
    launch,
};

/// The ACP adapter with Qwen's profile; the mode is mapped through it (checked here).
fn launch(_: &BackendDescription, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
    let LaunchRequest { common, .. } = request;
    let mut o = AcpOptions::new(&QWEN, common.program.clone(), common.cwd.clone());
    o.common = common;
    o.agent_mode()?;
    Ok(AgentLaunch::Acp(o))
}
