//! How a `codex app-server` process is launched: options → argv, environment and thread settings.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::AgentError;
use crate::options::{CommonOptions, home_variable};
use crate::process::SpawnSpec;

use super::sandbox::CommandSandbox;

/// Approval policies `thread/start` accepts.
pub const APPROVAL_POLICIES: &[&str] = &["untrusted", "on-failure", "on-request", "never"];
/// Sandbox modes `thread/start` accepts.
pub const SANDBOX_MODES: &[&str] = &["read-only", "workspace-write", "danger-full-access"];

/// How Nucleic's permission modes (Claude Code's names) map onto codex: `(mode, approvalPolicy,
/// sandbox)`. `default` asks before every file change and every command codex does not consider
/// known-safe (`untrusted`), and what is approved still runs in the workspace sandbox;
/// `acceptEdits` lets edits and commands inside the workspace sandbox run unasked and asks
/// before leaving it (`on-request`); `plan` changes nothing (`read-only`, never asks);
/// `bypassPermissions` asks nothing and has no sandbox.
pub const PERMISSION_MODES: &[(&str, &str, &str)] = &[
    ("default", "untrusted", "workspace-write"),
    ("acceptEdits", "on-request", "workspace-write"),
    ("plan", "never", "read-only"),
    ("bypassPermissions", "never", "danger-full-access"),
];

/// `(approvalPolicy, sandbox)` for a Nucleic permission mode; other modes are refused.
pub fn codex_policy(mode: &str) -> Result<(&'static str, &'static str), AgentError> {
    PERMISSION_MODES.iter().find(|(m, _, _)| *m == mode).map(|(_, p, s)| (*p, *s)).ok_or_else(
        || {
            let known: Vec<&str> = PERMISSION_MODES.iter().map(|(m, _, _)| *m).collect();
            AgentError::InvalidInput(format!(
                "codex has no permission mode {mode:?} (it supports {})",
                known.join(", ")
            ))
        },
    )
}

/// How long a turn may show no progress before the adapter gives up (see
/// [`CodexOptions::provider_timeout`]).
pub const DEFAULT_PROVIDER_TIMEOUT: Duration = Duration::from_secs(300);

/// Config overrides (`-c`) every codex run gets: the plugin marketplace off. Its sync runs
/// `git ls-remote https://github.com/openai/plugins.git` (and reaches api.github.com and
/// chatgpt.com) at every start — a git process codex starts, which the egress bridge cannot
/// tell from a command the agent ran, so each session would open with a question about
/// github.com. Inside the sandbox it could not reach them anyway, unless allow-listed.
pub const QUIET_CONFIG: &[&str] = &["features.plugins=false"];

/// `-c KEY=VALUE` for each of [`QUIET_CONFIG`].
pub(crate) fn quiet_config_args() -> impl Iterator<Item = OsString> {
    QUIET_CONFIG.iter().flat_map(|kv| [OsString::from("-c"), OsString::from(kv)])
}

/// Everything needed to start one `codex app-server` process and its thread.
#[derive(Debug, Clone)]
pub struct CodexOptions {
    /// The `codex` executable, the workspace (process cwd and the thread's `cwd`), the Nucleic
    /// permission mode `approval_policy` and `sandbox` came from (reported as the session's
    /// permission mode, so a resume maps it again), the thread's model (config.toml's when
    /// `None`), the thread to resume instead of starting one, extra environment (e.g. the
    /// provider's API key variable), confinement.
    pub common: CommonOptions,
    /// `CODEX_HOME` (config.toml, sessions); inherited when `None`.
    pub codex_home: Option<PathBuf>,
    /// `approvalPolicy` of the thread; `on-request` asks before escalations.
    pub approval_policy: String,
    /// `sandbox` of the thread (passed again on resume: codex does not restore it).
    pub sandbox: String,
    /// With `common.resume`: `thread/fork` instead of `thread/resume` — a new thread that
    /// carries the history, in `common.cwd`, the original left as it was.
    pub fork: bool,
    /// Give up (an `error`, then the run ends as `apiError`) when a turn shows no progress for
    /// this long while no approval is pending and no tool runs: codex itself retries an
    /// unreachable provider forever. `None` waits forever.
    pub provider_timeout: Option<Duration>,
}

impl CodexOptions {
    /// Defaults for `program` in `cwd`: the `default` permission mode (`untrusted` approvals
    /// in a `workspace-write` sandbox).
    pub fn new(program: PathBuf, cwd: PathBuf) -> CodexOptions {
        CodexOptions {
            common: CommonOptions::new(program, cwd),
            codex_home: None,
            approval_policy: "untrusted".into(),
            sandbox: "workspace-write".into(),
            fork: false,
            provider_timeout: Some(DEFAULT_PROVIDER_TIMEOUT),
        }
    }

    /// Sets approval policy and sandbox from a Nucleic permission mode (see
    /// [`PERMISSION_MODES`]).
    pub fn set_permission_mode(&mut self, mode: &str) -> Result<(), AgentError> {
        let (policy, sandbox) = codex_policy(mode)?;
        mode.clone_into(&mut self.common.permission_mode);
        self.approval_policy = policy.into();
        self.sandbox = sandbox.into();
        Ok(())
    }

    /// Refuses options codex would reject after starting.
    pub fn validate(&self) -> Result<(), AgentError> {
        if !APPROVAL_POLICIES.contains(&self.approval_policy.as_str()) {
            return Err(AgentError::InvalidInput(format!(
                "unknown approval policy {:?} (expected one of {})",
                self.approval_policy,
                APPROVAL_POLICIES.join(", ")
            )));
        }
        if !SANDBOX_MODES.contains(&self.sandbox.as_str()) {
            return Err(AgentError::InvalidInput(format!(
                "unknown sandbox {:?} (expected one of {})",
                self.sandbox,
                SANDBOX_MODES.join(", ")
            )));
        }
        if self.common.resume.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(AgentError::InvalidInput("empty thread id to resume".into()));
        }
        Ok(())
    }

    /// The process to spawn: `codex app-server` (stdio transport).
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        self.validate()?;
        let env = home_variable("CODEX_HOME", self.codex_home.as_ref());
        let mut args: Vec<OsString> =
            std::iter::once("app-server".into()).chain(quiet_config_args()).collect();
        if let Some(sandbox) = self.command_sandbox() {
            args.extend(sandbox.args());
        }
        Ok(self.common.spawn_spec(args, env))
    }

    /// Codex's own sandbox for its commands, with Nucleic's profile: planned for a confined
    /// codex (`None` unconfined, where the thread's legacy `sandbox` mode applies).
    pub fn command_sandbox(&self) -> Option<CommandSandbox> {
        let isolation = self.common.isolation.as_ref()?;
        Some(CommandSandbox::plan(
            isolation,
            &self.common.env,
            self.codex_home.as_deref(),
            &self.sandbox,
            &self.common.cwd,
        ))
    }

    /// The `thread/start` (or `thread/resume`, `thread/fork`) method and params. A confined
    /// thread gets no `sandbox`: it would replace Nucleic's profile (see [`CommandSandbox`]).
    pub fn thread_request(&self) -> (&'static str, Value) {
        let mut params = match &self.common.resume {
            // The fork runs where this session does (its worktree), not where the original ran.
            Some(id) if self.fork => json!({
                "threadId": id,
                "cwd": self.common.cwd.to_string_lossy(),
                "excludeTurns": true,
                "approvalPolicy": self.approval_policy,
                "sandbox": self.sandbox,
            }),
            Some(id) => json!({
                "threadId": id,
                "excludeTurns": true,
                "approvalPolicy": self.approval_policy,
                "sandbox": self.sandbox,
            }),
            None => json!({
                "cwd": self.common.cwd.to_string_lossy(),
                "approvalPolicy": self.approval_policy,
                "sandbox": self.sandbox,
            }),
        };
        if let Some(obj) = params.as_object_mut() {
            if let Some(model) = &self.common.model {
                obj.insert("model".into(), Value::String(model.clone()));
            }
            if self.common.isolation.is_some() {
                obj.shift_remove("sandbox");
            }
        }
        let method = match (&self.common.resume, self.fork) {
            (Some(_), true) => "thread/fork",
            (Some(_), false) => "thread/resume",
            (None, _) => "thread/start",
        };
        (method, params)
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn spec_and_thread_request() {
        let mut o = CodexOptions::new("codex".into(), "/tmp".into());
        o.codex_home = Some("/h".into());
        let spec = o.spawn_spec().unwrap();
        let args: Vec<OsString> =
            ["app-server", "-c", "features.plugins=false"].iter().map(OsString::from).collect();
        assert_eq!(spec.args, args);
        assert_eq!(spec.env[0], ("CODEX_HOME".into(), "/h".into()));
        let (m, p) = o.thread_request();
        assert_eq!(m, "thread/start");
        assert_eq!(p["sandbox"], "workspace-write");
        o.common.resume = Some("t1".into());
        let (m, p) = o.thread_request();
        assert_eq!(m, "thread/resume");
        assert_eq!(p["excludeTurns"], true);
        assert_eq!(p.get("cwd"), None);
        o.fork = true;
        let (m, p) = o.thread_request();
        assert_eq!(m, "thread/fork");
        assert_eq!((p["threadId"].as_str(), p["cwd"].as_str()), (Some("t1"), Some("/tmp")));
        o.fork = false;
        o.sandbox = "yolo".into();
        assert!(o.spawn_spec().is_err());
    }

    #[test]
    fn a_confined_thread_gets_nucleics_profile_instead_of_a_sandbox_mode() {
        let mut o = CodexOptions::new("codex".into(), "/tmp".into());
        o.codex_home = Some("/nowhere/codex".into());
        o.common.isolation = Some(crate::isolation::Isolation::new("/usr/bin/bwrap".into()));
        let args: Vec<String> =
            o.spawn_spec().unwrap().args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.contains(&"default_permissions=\"nucleic\"".to_owned()), "{args:?}");
        assert!(args.iter().any(|a| a.contains("/nowhere/codex/auth.json\"=\"none\"")), "{args:?}");
        let (_, p) = o.thread_request();
        assert!(p.get("sandbox").is_none(), "{p}");
        o.common.resume = Some("t1".into());
        assert!(o.thread_request().1.get("sandbox").is_none());
        assert!(o.command_sandbox().is_some());
    }

    #[test]
    fn permission_modes_map_to_policy_and_sandbox() {
        let mut o = CodexOptions::new("codex".into(), "/tmp".into());
        assert_eq!(
            (o.approval_policy.as_str(), o.sandbox.as_str()),
            ("untrusted", "workspace-write")
        );
        o.set_permission_mode("plan").unwrap();
        assert_eq!((o.approval_policy.as_str(), o.sandbox.as_str()), ("never", "read-only"));
        o.set_permission_mode("acceptEdits").unwrap();
        assert_eq!(o.approval_policy, "on-request");
        let err = o.set_permission_mode("dontAsk").unwrap_err().to_string();
        assert!(err.contains("dontAsk") && err.contains("bypassPermissions"), "{err}");
        for (_, policy, sandbox) in PERMISSION_MODES {
            assert!(APPROVAL_POLICIES.contains(policy) && SANDBOX_MODES.contains(sandbox));
        }
    }
}
