//! What a host needs to know: where its data lives, how to start agents, and its guardrails.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Host settings.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// `$NUCLEIC_HOME`: the catalog, transcripts and setup logs live here (0700).
    pub home: PathBuf,
    pub agents: AgentPaths,
    pub limits: Limits,
    /// Pending approvals are denied after this long (never, when `None`).
    pub approval_timeout: Option<Duration>,
    /// How long a project's setup script may run.
    pub setup_timeout: Duration,
    /// Extra environment for every agent process (e.g. `ANTHROPIC_BASE_URL`, `CODEX_HOME`).
    pub agent_env: Vec<(OsString, OsString)>,
}

/// How to start each backend.
#[derive(Debug, Clone)]
pub struct AgentPaths {
    /// The `claude` executable, if installed.
    pub claude: Option<PathBuf>,
    /// The `codex` executable, if installed (its `CODEX_HOME` and provider key come from the
    /// inherited environment or `agent_env`).
    pub codex: Option<PathBuf>,
    /// The simulated agent: a program and the arguments before the Claude-style flags
    /// (`nucleic __sim-agent`).
    pub sim_program: PathBuf,
    pub sim_prefix: Vec<OsString>,
}

/// Guardrails checked before a session is created.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Sessions whose agent is alive at the same time.
    pub max_live_sessions: usize,
    /// Worktrees (of non-archived sessions) that exist at the same time.
    pub max_worktrees: usize,
    /// Free space the project's filesystem must have before a worktree is added.
    pub min_free_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_live_sessions: 20, max_worktrees: 50, min_free_bytes: 1 << 30 }
    }
}

impl HostConfig {
    /// The catalog database.
    pub fn catalog_path(&self) -> PathBuf {
        self.home.join("catalog.sqlite")
    }

    /// The directory holding one folder per session.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// A session's transcript.
    pub fn transcript_path(&self, session_id: &str) -> PathBuf {
        self.sessions_dir().join(session_id).join("transcript.jsonl")
    }

    /// A session's setup log.
    pub fn setup_log_path(&self, session_id: &str) -> PathBuf {
        self.sessions_dir().join(session_id).join("setup.log")
    }
}
