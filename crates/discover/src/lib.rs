//! The person's own agent sessions of a checkout, made outside Nucleic: Claude Code's
//! transcripts (`~/.claude/projects/<slug>/<id>.jsonl`) and Codex's rollouts
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`) whose working directory is the checkout or
//! below it — with title, last activity, turns, model, and whether a live process holds one.
//! Only the head and the tail of each file are read, every file is opened read-only, and the
//! whole walk stops at a deadline or a file count, saying so. Nucleic's own sessions (under the
//! checkout's `.nucleic/`) are not listed.
//!
//! - `window`: the head and tail of a file, as complete lines.
//! - `claude`, `codex`: where each CLI keeps its sessions and what a session's lines say.
//! - `live`: the `claude` / `codex` processes running now, and which session each holds.
//! - `error`: [`DiscoverError`].

mod claude;
mod codex;
mod error;
mod live;
mod window;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use nucleic_protocol::Backend;
use serde::Serialize;

pub use error::DiscoverError;
pub use live::{LiveProcess, running_agents};

/// Where the person's agent CLIs keep their state.
#[derive(Debug, Clone, Default)]
pub struct Homes {
    /// Claude Code's config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude: Option<PathBuf>,
    /// Codex's home: `$CODEX_HOME`, else `~/.codex`.
    pub codex: Option<PathBuf>,
}

impl Homes {
    /// The folders the CLIs use given the environment `var` reads (`HOME`, `CLAUDE_CONFIG_DIR`,
    /// `CODEX_HOME`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = set("HOME");
        Homes {
            claude: set("CLAUDE_CONFIG_DIR").or_else(|| home.as_ref().map(|h| h.join(".claude"))),
            codex: set("CODEX_HOME").or_else(|| home.as_ref().map(|h| h.join(".codex"))),
        }
    }
}

/// How much one discovery may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The walk stops here (what was found so far is returned, marked truncated).
    pub deadline: Duration,
    /// Session files examined at most (newest first).
    pub max_files: usize,
    /// Bytes read from each end of a file.
    pub window: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { deadline: Duration::from_secs(3), max_files: 5_000, window: 64 * 1024 }
    }
}

/// How many turns a session has: exact when the whole file was read, else what its head and
/// tail hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "count")]
pub enum Turns {
    Exact(u32),
    AtLeast(u32),
}

/// One session found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutsideSession {
    pub backend: Backend,
    /// The CLI's own session id (what its `--resume` takes).
    pub id: String,
    pub path: PathBuf,
    /// The working directory the session ran in (the checkout or below it).
    pub cwd: PathBuf,
    /// False when that directory no longer exists.
    pub cwd_exists: bool,
    /// Its title, or its first prompt (cut to [`TITLE_LIMIT`] characters).
    pub title: Option<String>,
    /// The first and last timestamps its lines carry (RFC 3339, as the CLI wrote them).
    pub started_at: Option<String>,
    pub last_at: Option<String>,
    /// The file's last change.
    #[serde(skip)]
    pub modified: Option<SystemTime>,
    pub turns: Turns,
    pub model: Option<String>,
    pub cli_version: Option<String>,
    /// A `claude` / `codex` process on it now.
    pub live: Option<LiveProcess>,
    /// Lines of a type this version does not know (a newer CLI), in what was read.
    pub unknown_lines: usize,
    /// Lines that are not JSON (corruption, or a torn last line), in what was read.
    pub bad_lines: usize,
}

/// A session file that could not be read as one.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// What a discovery found, newest first.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    pub sessions: Vec<OutsideSession>,
    /// Session files looked at (of every project, for Codex).
    pub examined: usize,
    /// Files of this checkout that were not sessions (at most [`SKIPPED_LIMIT`] named).
    pub skipped: Vec<Skipped>,
    /// Why the walk stopped early, when it did.
    pub truncated: Option<String>,
}

/// Longest title kept, in characters.
pub const TITLE_LIMIT: usize = 80;
/// Skipped files named at most.
pub const SKIPPED_LIMIT: usize = 20;

/// The walk's budget as it goes.
pub(crate) struct Budget {
    started: Instant,
    limits: Limits,
    examined: usize,
    truncated: Option<String>,
}

impl Budget {
    fn new(limits: Limits) -> Self {
        Budget { started: Instant::now(), limits, examined: 0, truncated: None }
    }

    /// Counts one more file; false (and why, once) when the budget is spent.
    pub(crate) fn take(&mut self) -> bool {
        if self.truncated.is_some() {
            return false;
        }
        if self.examined >= self.limits.max_files {
            self.truncated = Some(format!(
                "stopped after {} session files (the newest); older ones were not looked at",
                self.limits.max_files
            ));
            return false;
        }
        if self.started.elapsed() >= self.limits.deadline {
            self.truncated = Some(format!(
                "stopped at the {} ms deadline after {} session files",
                self.limits.deadline.as_millis(),
                self.examined
            ));
            return false;
        }
        self.examined += 1;
        true
    }

    pub(crate) fn window(&self) -> usize {
        self.limits.window
    }
}

/// The sessions of `checkout` (or below it) that the CLIs under `homes` keep, with the live
/// processes in `running` matched to them (see [`running_agents`]).
pub fn discover(
    checkout: &Path,
    homes: &Homes,
    limits: Limits,
    running: &[LiveProcess],
) -> Result<Discovery, DiscoverError> {
    let checkout = checkout
        .canonicalize()
        .map_err(|e| DiscoverError::Checkout { path: checkout.to_owned(), why: e.to_string() })?;
    let mut budget = Budget::new(limits);
    let mut found = Discovery::default();
    if let Some(dir) = &homes.claude {
        claude::sessions(dir, &checkout, &mut budget, &mut found);
    }
    if let Some(dir) = &homes.codex {
        codex::sessions(dir, &checkout, &mut budget, &mut found);
    }
    found.skipped.truncate(SKIPPED_LIMIT);
    found.sessions.sort_by_key(|s| std::cmp::Reverse(s.modified));
    let mut claimed = Vec::new();
    for session in &mut found.sessions {
        session.live = live::holder(session, running, &mut claimed);
    }
    found.examined = budget.examined;
    found.truncated = budget.truncated;
    Ok(found)
}

/// Claude Code's transcript of conversation `id` run in `cwd` (`<config>/projects/<slug>/<id>.jsonl`)
/// and its text, read as discovery reads — a regular file only, opened without blocking on a
/// FIFO, at most `limit` bytes (a longer file is refused, not cut); `None` when there is none.
/// An `id` that is not a plain session id (a path, `..`) finds nothing.
pub fn claude_conversation(
    homes: &Homes,
    cwd: &Path,
    id: &str,
    limit: u64,
) -> Result<Option<(PathBuf, String)>, DiscoverError> {
    use std::io::Read;
    let plain = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let Some(config) = homes.claude.as_ref().filter(|_| plain) else { return Ok(None) };
    let path = config.join("projects").join(claude::slug(cwd)).join(format!("{id}.jsonl"));
    let unreadable = |why: String| DiscoverError::Unreadable { path: path.clone(), why };
    let file = match window::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let len = file.metadata().map_err(|e| unreadable(e.to_string()))?.len();
    if len > limit {
        return Err(unreadable(format!("it holds {len} bytes, more than the {limit} read")));
    }
    let mut text = String::new();
    file.take(limit).read_to_string(&mut text).map_err(|e| unreadable(e.to_string()))?;
    Ok(Some((path, text)))
}

/// Whether `cwd` is `checkout` or below it, and not Nucleic's own worktrees there.
pub(crate) fn belongs(cwd: &Path, checkout: &Path) -> bool {
    cwd.starts_with(checkout) && !cwd.starts_with(checkout.join(".nucleic"))
}

/// `text` cut to [`TITLE_LIMIT`] characters on one line.
pub(crate) fn title_of(text: &str) -> Option<String> {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    let mut cut: String = line.chars().take(TITLE_LIMIT).collect();
    if line.chars().count() > TITLE_LIMIT {
        cut.push('…');
    }
    Some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_follow_the_clis_own_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let homes = Homes::from_env(env(&[("HOME", "/h")]));
        assert_eq!(homes.claude.as_deref(), Some(Path::new("/h/.claude")));
        assert_eq!(homes.codex.as_deref(), Some(Path::new("/h/.codex")));
        let homes = Homes::from_env(env(&[
            ("HOME", "/h"),
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("CODEX_HOME", "/x"),
        ]));
        assert_eq!(homes.claude.as_deref(), Some(Path::new("/c")));
        assert_eq!(homes.codex.as_deref(), Some(Path::new("/x")));
        assert!(Homes::from_env(env(&[])).claude.is_none());
    }

    #[test]
    fn a_session_belongs_to_the_checkout_or_below_but_not_to_nucleics_worktrees() {
        let root = Path::new("/src/app");
        assert!(belongs(root, root));
        assert!(belongs(Path::new("/src/app/sub"), root));
        assert!(!belongs(Path::new("/src/app-x"), root));
        assert!(!belongs(Path::new("/src/app/.nucleic/worktrees/fix-1"), root));
    }

    #[test]
    fn titles_are_one_line_and_cut() {
        assert_eq!(title_of("  fix\n the   test "), Some("fix the test".into()));
        assert_eq!(title_of(" \n "), None);
        let long = title_of(&"x".repeat(200)).unwrap();
        assert_eq!(long.chars().count(), TITLE_LIMIT + 1);
    }
}
