//! Finding agent executables: an explicit path, then `PATH`, then the project's pinned install
//! cache (`scripts/install-agents.sh`).

use std::ffi::OsString;
use std::path::PathBuf;

use nucleic_agents::BackendDescription;
use nucleic_agents::backend::AgentProgram;
use nucleic_agents::process::which;

/// Claude Code version the adapter is tested against.
pub const TESTED_CLAUDE: &str = nucleic_agents::claude::TESTED_CLAUDE;
/// Codex version the adapter is tested against.
pub const TESTED_CODEX: &str = nucleic_agents::codex::TESTED_CODEX;

/// The install cache of `scripts/install-agents.sh`.
pub fn agent_cache() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("NUCLEIC_AGENT_CACHE") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("nucleic/agents"))
}

/// The executable of a backend and the arguments before its flags: an installed CLI on PATH,
/// else its pinned install; `nucleic` itself for the simulated agent.
pub fn find_agent(description: &BackendDescription) -> Option<(PathBuf, Vec<OsString>)> {
    match description.program {
        AgentProgram::Installed { executable, .. } => {
            let found = which(executable.as_ref()).or_else(|| {
                let p = description.program.in_cache(&agent_cache()?)?;
                p.is_file().then_some(p)
            })?;
            Some((found, Vec::new()))
        }
        AgentProgram::Nucleic { args } => {
            let nucleic = std::env::current_exe().ok()?;
            Some((nucleic, args.iter().map(OsString::from).collect()))
        }
    }
}

/// `claude`: on PATH, else the pinned install.
pub fn find_claude() -> Option<PathBuf> {
    find_agent(&nucleic_agents::claude::CLAUDE_CODE).map(|(p, _)| p)
}

/// `codex`: on PATH, else the pinned install.
pub fn find_codex() -> Option<PathBuf> {
    find_agent(&nucleic_agents::codex::CODEX).map(|(p, _)| p)
}

/// `gemini`: on PATH, else the pinned install.
pub fn find_gemini() -> Option<PathBuf> {
    find_agent(&nucleic_agents::acp::GEMINI_CLI).map(|(p, _)| p)
}

/// `opencode`: on PATH, else the pinned install.
pub fn find_opencode() -> Option<PathBuf> {
    find_agent(&nucleic_agents::acp::OPENCODE_CLI).map(|(p, _)| p)
}

/// `qwen`: on PATH, else the pinned install.
pub fn find_qwen() -> Option<PathBuf> {
    find_agent(&nucleic_agents::acp::QWEN_CODE).map(|(p, _)| p)
}

/// Where sessions live: `--home` / `$NUCLEIC_HOME`, else `$XDG_DATA_HOME/nucleic`, else
/// `~/.local/share/nucleic`.
pub fn nucleic_home(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit
        .or_else(|| std::env::var_os("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("nucleic")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/nucleic")))
}
