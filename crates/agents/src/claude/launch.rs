//! How a Claude Code process is launched: options → argv and environment.

use std::ffi::OsString;
use std::path::PathBuf;

use nucleic_protocol::Backend;

use crate::error::AgentError;
use crate::options::CommonOptions;
use crate::process::SpawnSpec;

/// The simulated agent's fault list (`nucleic_sim`'s `FAULT_ENV`).
const SIM_FAULT_VARIABLE: &str = "NUCLEIC_SIM_FAULT";

use super::input::PERMISSION_MODES;
use super::sandbox::CommandSandbox;

/// Everything needed to start one Claude Code (or simulated agent) process.
#[derive(Debug, Clone)]
pub struct ClaudeOptions {
    /// Program, workspace, `--permission-mode` (`default` asks before edits and unknown
    /// commands), `--model`, `--resume`, environment, confinement.
    pub common: CommonOptions,
    /// Arguments placed before the CLI flags (e.g. the simulated agent's subcommand).
    pub prefix_args: Vec<OsString>,
    /// What to record as the events' backend.
    pub backend: Backend,
    /// With `resume`: continue in a new conversation id that carries the history.
    pub fork: bool,
    /// Use this conversation id for a new session.
    pub session_id: Option<String>,
    pub append_system_prompt: Option<String>,
    /// Stream text as partial deltas (`--include-partial-messages`).
    pub partial_messages: bool,
    /// Register the host's PreToolUse hook (`initialize` on the control protocol): every tool
    /// call is then put to the host first. Real Claude Code only (the simulated agent has no
    /// hooks).
    pub host_hooks: bool,
}

impl ClaudeOptions {
    /// Defaults for `program` in `cwd`: default permission mode, partial deltas on.
    pub fn new(program: PathBuf, cwd: PathBuf) -> ClaudeOptions {
        ClaudeOptions {
            common: CommonOptions::new(program, cwd),
            prefix_args: Vec::new(),
            backend: Backend::ClaudeCode,
            fork: false,
            session_id: None,
            append_system_prompt: None,
            partial_messages: true,
            host_hooks: false,
        }
    }

    /// Sets `--permission-mode`; a mode Claude Code does not have is refused.
    pub fn set_permission_mode(&mut self, mode: &str) -> Result<(), AgentError> {
        check_permission_mode(mode)?;
        mode.clone_into(&mut self.common.permission_mode);
        Ok(())
    }

    /// The process to spawn. Approvals go through the stdio control protocol
    /// (`--permission-prompt-tool stdio`), which needs stream-json input; project `.mcp.json`
    /// servers are ignored (`--strict-mcp-config`) because they would start without approval.
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        let c = &self.common;
        check_permission_mode(&c.permission_mode)?;
        if self.fork && c.resume.is_none() {
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
        args.push(c.permission_mode.clone().into());
        if self.partial_messages {
            args.push("--include-partial-messages".into());
        }
        let mut flag = |name: &str, value: &Option<String>| {
            if let Some(v) = value {
                args.push(name.into());
                args.push(v.into());
            }
        };
        flag("--model", &c.model);
        flag("--resume", &c.resume);
        flag("--session-id", &self.session_id);
        flag("--append-system-prompt", &self.append_system_prompt);
        if self.fork {
            args.push("--fork-session".into());
        }
        if let Some(settings) = self.confined_settings() {
            args.push("--settings".into());
            args.push(settings.to_string().into());
        }
        let mut env: Vec<(OsString, OsString)> =
            vec![("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into())];
        // The simulated agent's fault injection is its input, not a host secret: it is handed
        // over explicitly (inherited `NUCLEIC_*` variables never reach an agent).
        if self.backend == Backend::Simulated
            && let Some(faults) = std::env::var_os(SIM_FAULT_VARIABLE)
            && !c.env.iter().any(|(k, _)| k == SIM_FAULT_VARIABLE)
        {
            env.push((SIM_FAULT_VARIABLE.into(), faults));
        }
        Ok(c.spawn_spec(args, env))
    }
}

impl ClaudeOptions {
    /// Claude Code's own sandbox for its commands: planned for a confined real Claude Code
    /// (`None` for the simulated agent or an unconfined run).
    pub fn command_sandbox(&self) -> Option<CommandSandbox> {
        let isolation = self.common.isolation.as_ref()?;
        (self.backend == Backend::ClaudeCode)
            .then(|| CommandSandbox::plan(isolation, &self.common.env))
    }
}

impl ClaudeOptions {
    /// The `--settings` of a confined real Claude Code: its own command sandbox (when it can
    /// run), and no `WebFetch` preflight — the CLI's check of each name with Anthropic's API,
    /// which the egress proxy refuses as the CLI's own traffic, failing every fetch ("Unable to
    /// verify if domain … is safe"); the host's egress rules stand in for it.
    fn confined_settings(&self) -> Option<serde_json::Value> {
        let sandbox = self.command_sandbox()?;
        let mut settings = match sandbox {
            CommandSandbox::On { settings } => settings,
            CommandSandbox::Off { .. } => serde_json::json!({}),
        };
        if let Some(object) = settings.as_object_mut() {
            object.insert("skipWebFetchPreflight".into(), serde_json::Value::Bool(true));
        }
        Some(settings)
    }
}

/// Refuses a mode Claude Code does not have, naming the ones it has.
fn check_permission_mode(mode: &str) -> Result<(), AgentError> {
    if PERMISSION_MODES.contains(&mode) {
        return Ok(());
    }
    Err(AgentError::InvalidInput(format!(
        "unknown permission mode {mode:?} (expected one of {})",
        PERMISSION_MODES.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_carries_the_required_flags_and_options() {
        let mut o = ClaudeOptions::new("claude".into(), "/tmp".into());
        o.common.model = Some("sonnet".into());
        o.common.resume = Some("abc".into());
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
        assert!(o.set_permission_mode("yolo").is_err());
        o.common.permission_mode = "yolo".into();
        assert!(o.spawn_spec().is_err());
        let mut o = ClaudeOptions::new("claude".into(), "/tmp".into());
        o.fork = true;
        assert!(o.spawn_spec().is_err());
    }
}
