//! How a `codex app-server` process is launched: options → argv, environment and thread settings.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::AgentError;
use crate::isolation::Isolation;
use crate::process::SpawnSpec;

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

/// Everything needed to start one `codex app-server` process and its thread.
#[derive(Debug, Clone)]
pub struct CodexOptions {
    /// The `codex` executable.
    pub program: PathBuf,
    /// The workspace (process cwd and the thread's `cwd`).
    pub cwd: PathBuf,
    /// `CODEX_HOME` (config.toml, sessions); inherited when `None`.
    pub codex_home: Option<PathBuf>,
    /// The Nucleic permission mode `approval_policy` and `sandbox` came from (reported as the
    /// session's permission mode, so a resume maps it again).
    pub permission_mode: String,
    /// `approvalPolicy` of the thread; `on-request` asks before escalations.
    pub approval_policy: String,
    /// `sandbox` of the thread (passed again on resume: codex does not restore it).
    pub sandbox: String,
    /// Model for the thread; config.toml's when `None`.
    pub model: Option<String>,
    /// Resume this earlier thread instead of starting one.
    pub resume: Option<String>,
    /// Extra environment (e.g. the provider's API key variable); overrides the inherited one.
    pub env: Vec<(OsString, OsString)>,
    /// Give up (an `error`, then the run ends as `apiError`) when a turn shows no progress for
    /// this long while no approval is pending and no tool runs: codex itself retries an
    /// unreachable provider forever. `None` waits forever.
    pub provider_timeout: Option<Duration>,
    /// Run under bubblewrap with the host's data dir hidden.
    pub isolation: Option<Isolation>,
}

impl CodexOptions {
    /// Defaults for `program` in `cwd`: the `default` permission mode (`untrusted` approvals
    /// in a `workspace-write` sandbox).
    pub fn new(program: PathBuf, cwd: PathBuf) -> CodexOptions {
        CodexOptions {
            program,
            cwd,
            codex_home: None,
            permission_mode: "default".into(),
            approval_policy: "untrusted".into(),
            sandbox: "workspace-write".into(),
            model: None,
            resume: None,
            env: Vec::new(),
            provider_timeout: Some(DEFAULT_PROVIDER_TIMEOUT),
            isolation: None,
        }
    }

    /// Sets approval policy and sandbox from a Nucleic permission mode (see
    /// [`PERMISSION_MODES`]).
    pub fn set_permission_mode(&mut self, mode: &str) -> Result<(), AgentError> {
        let (policy, sandbox) = codex_policy(mode)?;
        mode.clone_into(&mut self.permission_mode);
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
        if self.resume.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(AgentError::InvalidInput("empty thread id to resume".into()));
        }
        Ok(())
    }

    /// The process to spawn: `codex app-server` (stdio transport).
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        self.validate()?;
        let mut env: Vec<(OsString, OsString)> = Vec::new();
        if let Some(home) = &self.codex_home {
            env.push(("CODEX_HOME".into(), home.clone().into_os_string()));
        }
        env.extend(self.env.iter().cloned());
        Ok(SpawnSpec {
            program: self.program.clone(),
            args: vec!["app-server".into()],
            cwd: self.cwd.clone(),
            env,
            isolation: self.isolation.clone(),
        })
    }

    /// The `thread/start` (or `thread/resume`) method and params.
    pub fn thread_request(&self) -> (&'static str, Value) {
        let mut params = match &self.resume {
            Some(id) => json!({
                "threadId": id,
                "excludeTurns": true,
                "approvalPolicy": self.approval_policy,
                "sandbox": self.sandbox,
            }),
            None => json!({
                "cwd": self.cwd.to_string_lossy(),
                "approvalPolicy": self.approval_policy,
                "sandbox": self.sandbox,
            }),
        };
        if let (Some(model), Some(obj)) = (&self.model, params.as_object_mut()) {
            obj.insert("model".into(), Value::String(model.clone()));
        }
        let method = if self.resume.is_some() { "thread/resume" } else { "thread/start" };
        (method, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_and_thread_request() {
        let mut o = CodexOptions::new("codex".into(), "/tmp".into());
        o.codex_home = Some("/h".into());
        let spec = o.spawn_spec().unwrap();
        assert_eq!(spec.args, vec![OsString::from("app-server")]);
        assert_eq!(spec.env[0], ("CODEX_HOME".into(), "/h".into()));
        let (m, p) = o.thread_request();
        assert_eq!(m, "thread/start");
        assert_eq!(p["sandbox"], "workspace-write");
        o.resume = Some("t1".into());
        let (m, p) = o.thread_request();
        assert_eq!(m, "thread/resume");
        assert_eq!(p["excludeTurns"], true);
        o.sandbox = "yolo".into();
        assert!(o.spawn_spec().is_err());
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
