//! The launch options every backend shares: program, workspace, mode, model, resume, environment
//! and confinement.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::isolation::Isolation;
use crate::process::SpawnSpec;

/// What every backend's launch options hold (each backend's own options add their extras).
#[derive(Debug, Clone)]
pub struct CommonOptions {
    /// The agent's executable (or `nucleic` itself for the simulated agent).
    pub program: PathBuf,
    /// The workspace: the process's cwd.
    pub cwd: PathBuf,
    /// The Nucleic permission mode (Claude Code's names; each backend validates and maps it).
    pub permission_mode: String,
    /// The model; the CLI's own default when `None`.
    pub model: Option<String>,
    /// Resume this earlier conversation (Claude's session id, Codex's thread id).
    pub resume: Option<String>,
    /// Extra environment (e.g. `ANTHROPIC_BASE_URL`, a provider key); overrides the inherited
    /// one.
    pub env: Vec<(OsString, OsString)>,
    /// Run under bubblewrap with the host's data dir hidden.
    pub isolation: Option<Isolation>,
}

impl CommonOptions {
    /// `program` in `cwd`, the `default` permission mode, nothing else set.
    pub fn new(program: PathBuf, cwd: PathBuf) -> CommonOptions {
        CommonOptions {
            program,
            cwd,
            permission_mode: "default".into(),
            model: None,
            resume: None,
            env: Vec::new(),
            isolation: None,
        }
    }

    /// The process: `program args…` in `cwd`, with the backend's own variables `env` first and
    /// the extra environment after them (it wins).
    pub fn spawn_spec(&self, args: Vec<OsString>, mut env: Vec<(OsString, OsString)>) -> SpawnSpec {
        env.extend(self.env.iter().cloned());
        SpawnSpec {
            program: self.program.clone(),
            args,
            cwd: self.cwd.clone(),
            env,
            isolation: self.isolation.clone(),
        }
    }
}

/// `CODEX_HOME` and the like: a state directory handed over in a variable, when one is set.
pub(crate) fn home_variable(name: &str, dir: Option<&PathBuf>) -> Vec<(OsString, OsString)> {
    dir.map(|d| (OsString::from(name), d.clone().into_os_string())).into_iter().collect()
}
