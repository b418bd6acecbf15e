//! Finding agent executables: an explicit path, then `PATH`, then the project's pinned install
//! cache (`scripts/install-agents.sh`).

use std::path::PathBuf;

use nucleic_agents::process::which;

/// Claude Code version the adapter is tested against.
pub const TESTED_CLAUDE: &str = "2.1.332";
/// Codex version the adapter is tested against.
pub const TESTED_CODEX: &str = "0.171.0";

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

/// `claude`: on PATH, else the pinned install.
pub fn find_claude() -> Option<PathBuf> {
    which("claude".as_ref()).or_else(|| {
        let p =
            agent_cache()?.join(format!("claude-code-{TESTED_CLAUDE}/node_modules/.bin/claude"));
        p.is_file().then_some(p)
    })
}

/// `codex`: on PATH, else the pinned install.
pub fn find_codex() -> Option<PathBuf> {
    which("codex".as_ref()).or_else(|| {
        let p = agent_cache()?.join(format!("codex-{TESTED_CODEX}/node_modules/.bin/codex"));
        p.is_file().then_some(p)
    })
}

/// Where sessions live: `--home` / `$NUCLEIC_HOME`, else `$XDG_DATA_HOME/nucleic`, else
/// `~/.local/share/nucleic`.
pub fn nucleic_home(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit
        .or_else(|| std::env::var_os("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("nucleic")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/nucleic")))
}
