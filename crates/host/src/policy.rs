//! The policy of a session: Claude Code's settings files and Nucleic's rule files for its project,
//! loaded when its agent starts, judging every approval request (`nucleic-policy`) before a
//! person sees one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use nucleic_core::{ApprovalPolicy, Judgement, Verdict};
use nucleic_policy::{
    Behaviour, CodexCommand, Context, FsResolver, LoadWarning, Mode, Policy, Risk, Sources,
};
use nucleic_protocol::ApprovalRequested;
use serde_json::Value;

use crate::config::HostConfig;

/// Tool names of Codex approvals (`nucleic_agents::codex`): a command and a file change.
const CODEX_SHELL: &str = "shell";
const CODEX_PATCH: &str = "apply_patch";

/// Nucleic's rule file for every project of this host.
pub fn host_rules_path(config: &HostConfig) -> PathBuf {
    config.home.join("rules.json")
}

/// Nucleic's rule file for one project (kept by the host, outside the repository, so an agent
/// cannot grant itself rules).
pub fn project_rules_path(config: &HostConfig, project_id: &str) -> PathBuf {
    config.home.join("projects").join(project_id).join("rules.json")
}

/// The home agents run with (`HOME` of `agent_env`, else the host's): its
/// `.claude/settings.json` is the user's Claude Code settings.
pub fn agent_home(config: &HostConfig) -> PathBuf {
    config
        .agent_env
        .iter()
        .rev()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Where a session's rules come from and where it works.
#[derive(Debug, Clone)]
pub struct SessionPlace {
    /// The project's main checkout (its `.claude/` is read).
    pub project_root: PathBuf,
    pub project_id: Option<String>,
    /// The agent's working directory (the worktree).
    pub worktree: PathBuf,
}

/// The rule files a session's policy reads.
pub fn sources(config: &HostConfig, place: &SessionPlace) -> Sources {
    let mut sources = Sources::claude(&place.project_root, agent_home(config));
    sources.nucleic_project = place.project_id.as_deref().map(|p| project_rules_path(config, p));
    sources.nucleic_host = Some(host_rules_path(config));
    sources
}

/// One session's policy.
#[derive(Debug)]
pub struct SessionPolicy {
    policy: RwLock<Policy>,
    place: SessionPlace,
    home: PathBuf,
    data_dir: PathBuf,
    mode: Mode,
}

impl SessionPolicy {
    /// Loads every rule file for `place`; the warnings name each file that is wrong (its rules
    /// are ignored, the other files still apply).
    pub fn load(config: &HostConfig, place: SessionPlace) -> (Arc<SessionPolicy>, Vec<LoadWarning>) {
        let (policy, warnings) = Policy::load(&sources(config, &place));
        let mode = policy.default_mode.unwrap_or_default();
        let session = SessionPolicy {
            policy: RwLock::new(policy),
            place,
            home: agent_home(config),
            data_dir: config.home.clone(),
            mode,
        };
        (Arc::new(session), warnings)
    }

    fn context(&self) -> Context<'static> {
        Context {
            project_root: self.place.project_root.clone(),
            worktree: self.place.worktree.clone(),
            cwd: self.place.worktree.clone(),
            home: self.home.clone(),
            data_dir: self.data_dir.clone(),
            extra_write_roots: Vec::new(),
            mode: self.mode,
            resolver: &FsResolver,
        }
    }

    /// The policy's decision on one request, tool names of both backends understood.
    pub fn decide(&self, request: &ApprovalRequested) -> nucleic_policy::Decision {
        let policy = self.policy.read().unwrap_or_else(PoisonError::into_inner);
        let ctx = self.context();
        let input = &request.input;
        match request.tool_name.as_str() {
            CODEX_SHELL => {
                let line = input.get("command").and_then(Value::as_str).unwrap_or_default();
                let cwd = input.get("cwd").and_then(Value::as_str).map(PathBuf::from);
                policy.evaluate_codex_command(&CodexCommand::Line(line.to_owned()), cwd, &ctx)
            }
            CODEX_PATCH => {
                let paths = codex_patch_paths(input, &ctx.cwd);
                policy.evaluate_codex_file_change(&paths, &ctx)
            }
            tool => policy.evaluate(tool, input, &ctx),
        }
    }
}

/// The paths of a Codex file change (`{"changes": [{"path": …}, …]}`, or a map keyed by path).
fn codex_patch_paths(input: &Value, cwd: &Path) -> Vec<PathBuf> {
    let paths: Vec<String> = match input.get("changes") {
        Some(Value::Array(changes)) => changes
            .iter()
            .filter_map(|c| c.get("path").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        Some(Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    };
    paths.into_iter().map(|p| cwd.join(p)).collect()
}

impl ApprovalPolicy for SessionPolicy {
    fn judge(&self, request: &ApprovalRequested) -> Judgement {
        let decision = self.decide(request);
        Judgement {
            verdict: match decision.behaviour {
                Behaviour::Allow => Verdict::Allow,
                Behaviour::Ask => Verdict::Ask,
                Behaviour::Deny => Verdict::Deny,
            },
            by: decision.by,
            reason: decision.reason,
            risk: wire_risk(decision.risk),
            risk_reasons: decision.risk_reasons,
        }
    }
}

/// The policy's risk class on the wire.
pub fn wire_risk(risk: Risk) -> nucleic_protocol::Risk {
    match risk {
        Risk::Low => nucleic_protocol::Risk::Low,
        Risk::Medium => nucleic_protocol::Risk::Medium,
        Risk::High => nucleic_protocol::Risk::High,
        Risk::Critical => nucleic_protocol::Risk::Critical,
    }
}

impl crate::host::Host {
    /// The policy of a session of `backend` in project `project_id` working in `cwd` (none for
    /// the simulated agent, whose approvals exist to be answered by a person, for a session
    /// outside a project, or when the host runs without a policy), and an `error` event for
    /// each rule file that is wrong, to record in the session.
    pub(crate) async fn session_policy(
        &self,
        backend: nucleic_protocol::Backend,
        project_id: Option<&str>,
        cwd: &Path,
    ) -> (Option<Arc<dyn ApprovalPolicy>>, Vec<nucleic_protocol::EventKind>) {
        if !self.config.policy || backend == nucleic_protocol::Backend::Simulated {
            return (None, Vec::new());
        }
        let Some(project_id) = project_id else { return (None, Vec::new()) };
        let Ok(project) = self.project(project_id).await else { return (None, Vec::new()) };
        let place = SessionPlace {
            project_root: PathBuf::from(&project.root),
            project_id: Some(project.id.clone()),
            worktree: cwd.to_owned(),
        };
        let config = self.config.clone();
        let loaded = tokio::task::spawn_blocking(move || SessionPolicy::load(&config, place)).await;
        let Ok((policy, warnings)) = loaded else { return (None, Vec::new()) };
        let errors = warnings
            .into_iter()
            .map(|w| {
                nucleic_protocol::EventKind::Error(nucleic_protocol::ErrorEvent {
                    code: nucleic_protocol::ErrorCode::InvalidInput,
                    message: format!("policy: {w}"),
                    http_status: None,
                })
            })
            .collect();
        (Some(policy), errors)
    }
}
