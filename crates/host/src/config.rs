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
    /// Agents inherit the host's environment except its own `NUCLEIC_*` variables.
    pub agent_env: Vec<(OsString, OsString)>,
    /// Whether agents run where `home` cannot be seen (bubblewrap).
    pub agent_isolation: AgentIsolation,
    /// Run each agent under a keeper process so it outlives the host (`None`: agents are the
    /// host's children and stop with it).
    pub keepers: Option<KeeperSettings>,
    /// Judge every approval of Claude Code and Codex sessions with the policy engine (Claude
    /// Code's settings files and Nucleic's rule files, `docs/policy.md`) before a person is
    /// asked; `false`: every approval goes to a person, as the agent asks it.
    pub policy: bool,
}

/// How agents are kept (see `nucleic_agents::keeper`).
#[derive(Debug, Clone)]
pub struct KeeperSettings {
    /// The program that runs `__keeper <dir>` (the `nucleic` executable).
    pub program: PathBuf,
    /// Stop an agent no host attached to for this long.
    pub orphan_after: Duration,
    /// A keeper whose agent exited waits this long for a host.
    pub linger: Duration,
}

impl KeeperSettings {
    /// The variable that turns keepers off (`NUCLEIC_AGENT_KEEPERS=off`).
    pub const VARIABLE: &str = "NUCLEIC_AGENT_KEEPERS";

    /// Keepers run by `program` with the default timeouts.
    pub fn new(program: PathBuf) -> KeeperSettings {
        KeeperSettings {
            program,
            orphan_after: nucleic_agents::keeper::DEFAULT_ORPHAN_AFTER,
            linger: nucleic_agents::keeper::DEFAULT_LINGER,
        }
    }

    /// Keepers by `program` unless the environment turns them off ([`Self::VARIABLE`]).
    pub fn from_env(program: PathBuf) -> Result<Option<KeeperSettings>, String> {
        match std::env::var(Self::VARIABLE).as_deref() {
            Err(_) | Ok("" | "on") => Ok(Some(KeeperSettings::new(program))),
            Ok("off") => Ok(None),
            Ok(other) => Err(format!("{}={other:?}: expected on or off", Self::VARIABLE)),
        }
    }
}

/// How agents are kept from the host's data dir (the token, the catalog, every transcript).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AgentIsolation {
    /// Under bubblewrap when it works on this machine; otherwise agents run without it and the
    /// host says so once, when it opens.
    #[default]
    Auto,
    /// Under bubblewrap or not at all: agents are refused when it does not work.
    Required,
    /// Never (agents still lose the host's `NUCLEIC_*` variables).
    Off,
}

impl AgentIsolation {
    /// The variable `nucleic serve` (and `demo`, `doctor`) read the setting from.
    pub const VARIABLE: &str = "NUCLEIC_AGENT_ISOLATION";

    /// Parses `auto`, `bwrap` (required) or `off`.
    pub fn parse(text: &str) -> Result<AgentIsolation, String> {
        match text.trim() {
            "" | "auto" => Ok(AgentIsolation::Auto),
            "bwrap" | "required" => Ok(AgentIsolation::Required),
            "off" => Ok(AgentIsolation::Off),
            other => Err(format!(
                "{}={other:?}: expected auto (bubblewrap when it works), bwrap (required) or off",
                Self::VARIABLE
            )),
        }
    }

    /// The setting in the environment ([`Self::VARIABLE`]); `Auto` when unset.
    pub fn from_env() -> Result<AgentIsolation, String> {
        match std::env::var(Self::VARIABLE) {
            Ok(text) => Self::parse(&text),
            Err(std::env::VarError::NotPresent) => Ok(AgentIsolation::Auto),
            Err(e) => Err(format!("{}: {e}", Self::VARIABLE)),
        }
    }
}

/// How to start each backend.
#[derive(Debug, Clone)]
pub struct AgentPaths {
    /// The `claude` executable, if installed.
    pub claude: Option<PathBuf>,
    /// The `codex` executable, if installed (its `CODEX_HOME` and provider key come from the
    /// inherited environment or `agent_env`).
    pub codex: Option<PathBuf>,
    /// The `gemini` executable (Gemini CLI), if installed (its key or login come from the
    /// inherited environment, `agent_env`, or `~/.gemini`).
    pub gemini: Option<PathBuf>,
    /// The `opencode` executable (OpenCode), if installed (its provider from its config or
    /// `agent_env`'s `OPENCODE_CONFIG_CONTENT`).
    pub opencode: Option<PathBuf>,
    /// The `qwen` executable (Qwen Code), if installed (its key from `~/.qwen` or the
    /// environment's `OPENAI_*`).
    pub qwen: Option<PathBuf>,
    /// The simulated agent: a program and the arguments before the Claude-style flags
    /// (`nucleic __sim-agent`).
    pub sim_program: PathBuf,
    pub sim_prefix: Vec<OsString>,
    /// The `nucleic` executable: its `__confine` entry runs first in every agent's sandbox
    /// (the network bridge to the host's egress proxy).
    pub nucleic: PathBuf,
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
    /// The variable that turns the policy off (`NUCLEIC_POLICY=off`).
    pub const POLICY_VARIABLE: &str = "NUCLEIC_POLICY";

    /// The policy setting in the environment: on unless [`Self::POLICY_VARIABLE`] says off.
    pub fn policy_from_env() -> Result<bool, String> {
        match std::env::var(Self::POLICY_VARIABLE).as_deref() {
            Err(_) | Ok("" | "on") => Ok(true),
            Ok("off") => Ok(false),
            Ok(other) => Err(format!("{}={other:?}: expected on or off", Self::POLICY_VARIABLE)),
        }
    }

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

    /// The directory holding one folder per agent keeper.
    pub fn keepers_dir(&self) -> PathBuf {
        self.home.join("keepers")
    }

    /// What the warm worktree pools have ready (`pool.rs`).
    pub fn pools_path(&self) -> PathBuf {
        self.home.join("pools.json")
    }

    /// The setup log of a pooled worktree (it becomes the session's setup log when taken).
    pub fn pool_log_path(&self, name: &str) -> PathBuf {
        self.home.join("pool").join(format!("{name}.setup.log"))
    }

    /// A session's setup log.
    pub fn setup_log_path(&self, session_id: &str) -> PathBuf {
        self.sessions_dir().join(session_id).join("setup.log")
    }
}
