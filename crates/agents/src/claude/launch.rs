//! How a Claude Code process is launched: options → argv and environment.

use std::ffi::OsString;
use std::path::PathBuf;

use nucleic_protocol::Backend;

use crate::error::AgentError;
use crate::isolation::Isolation;
use crate::process::SpawnSpec;

/// The simulated agent's fault list (`nucleic_sim`'s `FAULT_ENV`).
const SIM_FAULT_VARIABLE: &str = "NUCLEIC_SIM_FAULT";

use super::input::PERMISSION_MODES;

/// Everything needed to start one Claude Code (or simulated agent) process.
#[derive(Debug, Clone)]
pub struct ClaudeOptions {
    /// The `claude` executable (or `nucleic` itself for the simulated agent).
    pub program: PathBuf,
    /// Arguments placed before the CLI flags (e.g. the simulated agent's subcommand).
    pub prefix_args: Vec<OsString>,
    /// What to record as the events' backend.
    pub backend: Backend,
    pub cwd: PathBuf,
    /// `--permission-mode`; `default` asks before edits and unknown commands.
    pub permission_mode: String,
    pub model: Option<String>,
    /// Resume this earlier conversation.
    pub resume: Option<String>,
    /// With `resume`: continue in a new conversation id that carries the history.
    pub fork: bool,
    /// Use this conversation id for a new session.
    pub session_id: Option<String>,
    pub append_system_prompt: Option<String>,
    /// Stream text as partial deltas (`--include-partial-messages`).
    pub partial_messages: bool,
    /// Extra environment (e.g. `ANTHROPIC_BASE_URL`); overrides the inherited one.
    pub env: Vec<(OsString, OsString)>,
    /// Run under bubblewrap with the host's data dir hidden.
    pub isolation: Option<Isolation>,
    /// Register the host's PreToolUse hook (`initialize` on the control protocol): every tool
    /// call is then put to the host first. Real Claude Code only (the simulated agent has no
    /// hooks).
    pub host_hooks: bool,
}

impl ClaudeOptions {
    /// Defaults for `program` in `cwd`: default permission mode, partial deltas on.
    pub fn new(program: PathBuf, cwd: PathBuf) -> ClaudeOptions {
        ClaudeOptions {
            program,
            prefix_args: Vec::new(),
            backend: Backend::ClaudeCode,
            cwd,
            permission_mode: "default".into(),
            model: None,
            resume: None,
            fork: false,
            session_id: None,
            append_system_prompt: None,
            partial_messages: true,
            env: Vec::new(),
            isolation: None,
            host_hooks: false,
        }
    }

    /// The process to spawn. Approvals go through the stdio control protocol
    /// (`--permission-prompt-tool stdio`), which needs stream-json input; project `.mcp.json`
    /// servers are ignored (`--strict-mcp-config`) because they would start without approval.
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        if !PERMISSION_MODES.contains(&self.permission_mode.as_str()) {
            return Err(AgentError::InvalidInput(format!(
                "unknown permission mode {:?} (expected one of {})",
                self.permission_mode,
                PERMISSION_MODES.join(", ")
            )));
        }
        if self.fork && self.resume.is_none() {
            return Err(AgentError::InvalidInput("fork needs a session to resume".into()));
        }
        let mut args: Vec<OsString> = self.prefix_args.clone();
        for a in [
            "-p",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
            "--strict-mcp-config",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
        ] {
            args.push(a.into());
        }
        args.push(self.permission_mode.clone().into());
        if self.partial_messages {
            args.push("--include-partial-messages".into());
        }
        let mut flag = |name: &str, value: &Option<String>| {
            if let Some(v) = value {
                args.push(name.into());
                args.push(v.into());
            }
        };
        flag("--model", &self.model);
        flag("--resume", &self.resume);
        flag("--session-id", &self.session_id);
        flag("--append-system-prompt", &self.append_system_prompt);
        if self.fork {
            args.push("--fork-session".into());
        }
        let mut env: Vec<(OsString, OsString)> =
            vec![("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into())];
        // The simulated agent's fault injection is its input, not a host secret: it is handed
        // over explicitly (inherited `NUCLEIC_*` variables never reach an agent).
        if self.backend == Backend::Simulated
            && let Some(faults) = std::env::var_os(SIM_FAULT_VARIABLE)
            && !self.env.iter().any(|(k, _)| k == SIM_FAULT_VARIABLE)
        {
            env.push((SIM_FAULT_VARIABLE.into(), faults));
        }
        env.extend(self.env.iter().cloned());
        Ok(SpawnSpec {
            program: self.program.clone(),
            args,
            cwd: self.cwd.clone(),
            env,
            isolation: self.isolation.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_carries_the_required_flags_and_options() {
        let mut o = ClaudeOptions::new("claude".into(), "/tmp".into());
        o.model = Some("sonnet".into());
        o.resume = Some("abc".into());
        o.fork = true;
        o.append_system_prompt = Some("be brief".into());
        let spec = o.spawn_spec().unwrap();
        let argv: Vec<String> =
            spec.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let joined = argv.join(" ");
        assert!(joined.starts_with("-p --output-format stream-json --input-format stream-json --verbose --strict-mcp-config --permission-prompt-tool stdio --permission-mode default --include-partial-messages"), "{joined}");
        assert!(
            joined.contains(
                "--model sonnet --resume abc --append-system-prompt be brief --fork-session"
            ),
            "{joined}"
        );
    }

    #[test]
    fn bad_options_are_refused_before_spawning() {
        let mut o = ClaudeOptions::new("claude".into(), "/tmp".into());
        o.permission_mode = "yolo".into();
        assert!(o.spawn_spec().is_err());
        let mut o = ClaudeOptions::new("claude".into(), "/tmp".into());
        o.fork = true;
        assert!(o.spawn_spec().is_err());
    }
}
