//! What one backend is, in one row: how it is launched, its modes, capabilities, models,
//! handoff command and what its confinement must allow. The host and `nucleic run` know backends
//! only through these rows ([`describe`], [`BACKENDS`]).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use nucleic_protocol::Backend;

use crate::agent::Capabilities;
use crate::any::AgentLaunch;
use crate::error::AgentError;
use crate::options::CommonOptions;

/// Every backend, in the order clients list them.
pub const BACKENDS: &[&BackendDescription] = &[
    &crate::claude::CLAUDE_CODE,
    &crate::codex::CODEX,
    &crate::acp::GEMINI_CLI,
    &crate::acp::OPENCODE_CLI,
    &crate::acp::QWEN_CODE,
    &crate::claude::SIMULATED,
];

/// The folders of a project agent CLIs load settings from (Claude Code's `.claude/`, Codex's
/// `.codex/`, Gemini CLI's `.gemini/`, OpenCode's `.opencode/`, Qwen Code's `.qwen/`). Their
/// hooks and helper commands run as the CLI itself, outside its own command sandbox and unasked:
/// no agent may write them in any worktree (any backend may later run there).
pub const PROJECT_SETTINGS_DIRS: &[&str] = &[".claude", ".codex", ".gemini", ".opencode", ".qwen"];

/// The description of `backend` (exhaustive: a new `Backend` does not build without its row).
pub fn describe(backend: Backend) -> &'static BackendDescription {
    match backend {
        Backend::ClaudeCode => &crate::claude::CLAUDE_CODE,
        Backend::Codex => &crate::codex::CODEX,
        Backend::Simulated => &crate::claude::SIMULATED,
        Backend::Gemini => &crate::acp::GEMINI_CLI,
        Backend::OpenCode => &crate::acp::OPENCODE_CLI,
        Backend::Qwen => &crate::acp::QWEN_CODE,
    }
}

/// The backend called `name` on the command line (`--agent claude`).
pub fn backend_named(name: &str) -> Option<&'static BackendDescription> {
    BACKENDS.iter().copied().find(|d| d.name == name)
}

/// What `backend` supports through its interactive adapter (Codex: `app-server`), known before
/// anything is started.
pub fn backend_capabilities(backend: Backend) -> Capabilities {
    describe(backend).capabilities
}

/// The format of the files a CLI keeps its sessions in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionFiles {
    /// Claude Code's `~/.claude/projects/<slug>/<id>.jsonl` transcripts.
    ClaudeTranscripts,
    /// Codex's `$CODEX_HOME/sessions/…/rollout-…-<id>.jsonl` rollouts.
    CodexRollouts,
}

/// One backend.
#[derive(Debug)]
pub struct BackendDescription {
    pub backend: Backend,
    /// Its name on the command line (`--agent <name>`).
    pub name: &'static str,
    /// What it is, in a few words (`--agent`'s help).
    pub about: &'static str,
    /// How people call it in messages ("the Codex backend").
    pub label: &'static str,
    /// Where its executable comes from.
    pub program: AgentProgram,
    /// What its interactive adapter supports.
    pub capabilities: Capabilities,
    /// Models a new-session form can suggest (the CLI may take others).
    pub models: &'static [&'static str],
    /// The permission modes it takes (Claude Code's names), the default first.
    pub permission_modes: &'static [&'static str],
    /// What it does with the options only some backends have.
    pub extras: Extras,
    /// The command a person runs, followed by the conversation id, to go on with a session in
    /// the vendor's CLI (`claude --resume`); `None`: no handoff.
    pub handoff: Option<&'static str>,
    /// Its tool calls are judged by the host's policy (the session has a mode).
    pub policy: bool,
    /// How its CLI keeps a session on disk, for reading one made outside Nucleic in
    /// (adoption's history); `None`: its sessions are not read.
    pub session_files: Option<SessionFiles>,
    /// What switching the mode of a live agent does (said to the person).
    pub live_mode_switch: &'static str,
    /// What its sandbox must let it reach and write.
    pub confinement: ConfinementNeeds,
    /// Builds the launch from the request (checked against [`Extras`] before).
    pub(crate) launch: fn(&BackendDescription, LaunchRequest) -> Result<AgentLaunch, AgentError>,
}

/// Where a backend's executable comes from.
#[derive(Debug, Clone, Copy)]
pub enum AgentProgram {
    /// A vendor CLI: `executable` on `PATH`, else the pinned install of
    /// `scripts/install-agents.sh` (`<cache>/<package>-<tested>/node_modules/.bin/<executable>`).
    Installed {
        executable: &'static str,
        package: &'static str,
        /// The version the adapter is tested against.
        tested: &'static str,
        /// What to use instead when it is missing ("another backend").
        instead: &'static str,
    },
    /// `nucleic` itself with these arguments first (the simulated agent).
    Nucleic { args: &'static [&'static str] },
}

impl AgentProgram {
    /// The pinned install's path under the agent cache, for an installed CLI.
    pub fn in_cache(&self, cache: &Path) -> Option<std::path::PathBuf> {
        match self {
            AgentProgram::Installed { executable, package, tested, .. } => {
                Some(cache.join(format!("{package}-{tested}/node_modules/.bin/{executable}")))
            }
            AgentProgram::Nucleic { .. } => None,
        }
    }
}

/// The options only some backends have.
#[derive(Debug, Clone, Copy)]
pub struct Extras {
    /// It takes an appended system prompt.
    pub append_system_prompt: bool,
    /// It has a one-prompt, non-interactive mode (`codex exec`).
    pub exec: bool,
    /// It puts every tool call to the host first when the policy is on (Claude Code's
    /// PreToolUse hook).
    pub host_hooks: bool,
}

/// What a backend's sandbox must allow besides the worktree.
#[derive(Debug, Clone, Copy)]
pub struct ConfinementNeeds {
    /// It may run unconfined where bubblewrap cannot be used and confinement is `auto` (it runs
    /// nothing a model chose).
    pub optional: bool,
    /// A directory under the agent's home, read-only (its settings, plugins, hooks are policy),
    /// with these subdirectories writable (created first): `(".claude", ["projects", …])`.
    pub home_state: Option<(&'static str, &'static [&'static str])>,
    /// A state directory named by a variable, writable, with policy files in it read-only.
    pub state_dir: Option<StateDir>,
    /// Files in the agent's home it gets a private copy of (read and rewritten freely, never
    /// written back).
    pub private_copies: &'static [&'static str],
    /// Files it cannot start without in a project settings folder (folder, file, content),
    /// made by the host when absent before that folder is mounted read-only — for this backend
    /// only, so no other agent's run leaves them in a person's folder.
    pub settings_seeds: &'static [(&'static str, &'static str, &'static str)],
    /// Where its model is.
    pub endpoints: ModelEndpoints,
}

/// A state directory handed to the agent in a variable (`CODEX_HOME`).
#[derive(Debug, Clone, Copy)]
pub struct StateDir {
    pub variable: &'static str,
    /// The state directory is this folder of the variable's directory (Gemini's
    /// `$GEMINI_CLI_HOME/.gemini`); `None`: the variable names it (`CODEX_HOME`).
    pub within: Option<&'static str>,
    /// Under the agent's home when the variable is not set.
    pub default: &'static str,
    /// Files in it the agent may read, never write (its configuration).
    pub read_only: &'static [&'static str],
    /// Folders in it the agent may read, never write (what a later run loads: extensions,
    /// commands); made first when absent, so the agent cannot create them.
    pub read_only_dirs: &'static [&'static str],
    /// A file in it whose `base_url = "…"` lines name model endpoints.
    pub base_urls_in: Option<&'static str>,
}

/// The model endpoints a backend must reach.
#[derive(Debug, Clone, Copy)]
pub struct ModelEndpoints {
    /// Variables holding a base URL.
    pub base_url_variables: &'static [&'static str],
    /// `host:port`s when none is configured.
    pub defaults: &'static [&'static str],
    /// The defaults apply only when no variable is set at all (a set variable that names no
    /// endpoint then gives none); otherwise when no endpoint was found.
    pub defaults_only_when_unset: bool,
}

/// A launch in backend-neutral terms: the shared options and the extras some backends take.
#[derive(Debug, Clone)]
pub struct LaunchRequest {
    pub common: CommonOptions,
    /// Arguments before the backend's flags (the simulated agent's subcommand).
    pub prefix_args: Vec<OsString>,
    /// With `common.resume`: continue in a new conversation that carries the history.
    pub fork: bool,
    pub append_system_prompt: Option<String>,
    /// The host's policy is on (backends with [`Extras::host_hooks`] put tool calls to it).
    pub policy: bool,
    /// Give up on a turn that shows no progress for this long (backends with a watchdog);
    /// `None`: the backend's default.
    pub provider_timeout: Option<Duration>,
    /// The non-interactive mode ([`Extras::exec`]).
    pub exec: bool,
}

impl LaunchRequest {
    /// `program` in `cwd` with nothing else set.
    pub fn new(program: std::path::PathBuf, cwd: std::path::PathBuf) -> LaunchRequest {
        LaunchRequest {
            common: CommonOptions::new(program, cwd),
            prefix_args: Vec::new(),
            fork: false,
            append_system_prompt: None,
            policy: false,
            provider_timeout: None,
            exec: false,
        }
    }
}

impl BackendDescription {
    /// The launch of this backend for `request`: what it cannot do is refused
    /// ([`AgentError::Refused`]), its permission mode validated (and mapped) here.
    pub fn launch(&self, request: LaunchRequest) -> Result<AgentLaunch, AgentError> {
        let label = self.label;
        if request.fork && !self.capabilities.fork {
            return Err(AgentError::Refused(format!(
                "the {label} backend cannot fork a conversation"
            )));
        }
        if request.append_system_prompt.is_some() && !self.extras.append_system_prompt {
            return Err(AgentError::Refused(format!(
                "the {label} backend takes no appended system prompt"
            )));
        }
        if request.exec && !self.extras.exec {
            return Err(AgentError::Refused(format!(
                "the {label} backend has no non-interactive exec mode"
            )));
        }
        (self.launch)(self, request)
    }

    /// Why it cannot start here: its executable is missing.
    pub fn not_installed(&self) -> String {
        match self.program {
            AgentProgram::Installed { executable, instead, .. } => {
                format!("{executable} is not installed (scripts/install-agents.sh); use {instead}")
            }
            AgentProgram::Nucleic { .. } => format!("the {} agent cannot be found", self.label),
        }
    }

    /// The command that continues conversation `id` in the vendor's CLI, from `dir`, quoted for
    /// a POSIX shell; `None` when this backend has no handoff.
    pub fn handoff_command(&self, dir: &str, id: &str) -> Option<String> {
        self.handoff
            .map(|command| format!("cd {} && {command} {}", shell_quote(dir), shell_quote(id)))
    }
}

/// `text` as one single-quoted POSIX shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_has_one_row_found_by_backend_and_by_name() {
        for backend in [
            Backend::ClaudeCode,
            Backend::Codex,
            Backend::Gemini,
            Backend::OpenCode,
            Backend::Qwen,
            Backend::Simulated,
        ] {
            let d = describe(backend);
            assert_eq!(d.backend, backend);
            assert_eq!(backend_named(d.name).map(|n| n.backend), Some(backend));
            assert_eq!(BACKENDS.iter().filter(|r| r.backend == backend).count(), 1);
            assert_eq!(d.permission_modes.first(), Some(&"default"));
        }
    }

    #[test]
    fn the_offered_modes_are_the_four_every_backend_maps() {
        let four = ["default", "acceptEdits", "plan", "bypassPermissions"];
        for d in BACKENDS {
            assert_eq!(d.permission_modes, four, "{:?}", d.backend);
        }
        // Claude Code takes more than it offers.
        let mut more = LaunchRequest::new("x".into(), "/w".into());
        more.common.permission_mode = "dontAsk".into();
        assert!(describe(Backend::ClaudeCode).launch(more).is_ok());
    }

    #[test]
    fn the_handoff_command_is_quoted_for_a_shell() {
        let claude = describe(Backend::ClaudeCode);
        assert_eq!(
            claude.handoff_command("/w/it's", "abc").as_deref(),
            Some(r"cd '/w/it'\''s' && claude --resume 'abc'")
        );
        let codex = describe(Backend::Codex).handoff_command("/w", "t1");
        assert_eq!(codex.as_deref(), Some("cd '/w' && codex resume 't1'"));
    }

    #[test]
    fn what_a_backend_cannot_do_is_refused_and_modes_are_validated() {
        let request = || LaunchRequest::new("x".into(), "/w".into());
        let codex = describe(Backend::Codex);
        let mut fork = request();
        fork.fork = true;
        fork.common.resume = Some("t".into());
        let err = describe(Backend::Gemini).launch(fork.clone()).unwrap_err().to_string();
        assert_eq!(err, "the Gemini CLI backend cannot fork a conversation");
        assert!(describe(Backend::ClaudeCode).launch(fork.clone()).is_ok());
        // Codex forks through app-server's `thread/fork`, not in its exec mode.
        assert!(codex.launch(fork.clone()).is_ok());
        let mut exec_fork = fork;
        exec_fork.exec = true;
        let err = codex.launch(exec_fork).unwrap_err().to_string();
        assert!(err.contains("exec mode cannot fork"), "{err}");
        let mut prompt = request();
        prompt.append_system_prompt = Some("be brief".into());
        assert!(codex.launch(prompt).is_err());
        let mut exec = request();
        exec.exec = true;
        assert!(describe(Backend::ClaudeCode).launch(exec.clone()).is_err());
        assert!(matches!(codex.launch(exec), Ok(AgentLaunch::CodexExec(_))));
        for backend in [
            Backend::ClaudeCode,
            Backend::Codex,
            Backend::Gemini,
            Backend::OpenCode,
            Backend::Qwen,
            Backend::Simulated,
        ] {
            let mut bad = request();
            bad.common.permission_mode = "yolo".into();
            assert!(describe(backend).launch(bad).is_err(), "{backend:?}");
            for mode in describe(backend).permission_modes {
                let mut good = request();
                good.common.permission_mode = (*mode).to_owned();
                let launch = describe(backend).launch(good).unwrap();
                assert_eq!(launch.common().permission_mode, *mode);
                assert_eq!(launch.backend(), backend);
            }
        }
    }

    #[test]
    fn host_hooks_only_where_the_backend_has_them_and_the_policy_is_on() {
        let hooks = |backend, policy| {
            let mut r = LaunchRequest::new("x".into(), "/w".into());
            r.policy = policy;
            match describe(backend).launch(r) {
                Ok(AgentLaunch::Claude(o)) => o.host_hooks,
                other => panic!("{other:?}"),
            }
        };
        assert!(hooks(Backend::ClaudeCode, true));
        assert!(!hooks(Backend::ClaudeCode, false));
        assert!(!hooks(Backend::Simulated, true));
    }
}
