//! The policy of a session: Claude Code's settings files and Nucleic's rule files for its project,
//! loaded when its agent starts, judging every approval request (`nucleic-policy`) before a
//! person sees one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::time::SystemTime;

use nucleic_core::{ApprovalPolicy, Judgement, Verdict};
use nucleic_policy::{
    Behaviour, CodexCommand, Context, FsResolver, LoadWarning, Mode, PathResolver, Policy, Risk,
    Scope, Sources,
};
use nucleic_protocol::ApprovalRequested;
use nucleic_protocol::{RuleScope, SessionMode};
use serde_json::Value;

use crate::config::HostConfig;
use crate::policy::fetch_grants::FetchGrants;
use crate::policy::rules::RuleFile;

/// Tool names of Codex approvals (`nucleic_agents::codex`): a command and a file change.
const CODEX_SHELL: &str = "shell";
const CODEX_PATCH: &str = "apply_patch";

/// Claude Code's permission mode of a session that plans before it acts.
pub const PLAN_PERMISSION_MODE: &str = "plan";

/// The tools that write the plan file while a session plans.
const PLAN_WRITERS: &[&str] = &["Write", "Edit", "MultiEdit"];

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
    /// Folders outside it the agent may read, never write (the session's attachments).
    pub read_roots: Vec<PathBuf>,
}

/// The rule files a session's policy reads.
pub fn sources(config: &HostConfig, place: &SessionPlace) -> Sources {
    let mut sources = Sources::claude(&place.project_root, agent_home(config));
    sources.nucleic_project =
        place.project_id.as_ref().map(|p| config.rule_file(&RuleFile::Project(p.clone())));
    sources.nucleic_host = Some(config.rule_file(&RuleFile::Host));
    sources
}

/// One session's policy. Its rule files are read again at the first tool call after one of them
/// changed (size or modification time): an "always" kept by another session, or `nucleic rules`,
/// applies to the next call of every running session.
#[derive(Debug)]
pub struct SessionPolicy {
    policy: RwLock<Policy>,
    sources: Sources,
    /// Each rule file's (modification time, size) when last read.
    stamps: Mutex<Vec<Option<(SystemTime, u64)>>>,
    /// Rules of this session ("always", or added from a client; in memory, kept across reloads).
    session_rules: Mutex<Vec<(Behaviour, String)>>,
    place: SessionPlace,
    home: PathBuf,
    data_dir: PathBuf,
    /// The session's Nucleic mode (switched when a plan is approved, or by a person).
    mode: RwLock<Mode>,
    /// Planning (Claude Code's `plan` mode): the mode is `readonly`, and the one file the agent
    /// may write is its plan, a markdown file directly in `<agent home>/.claude/plans/`.
    planning: AtomicBool,
    /// Where an allowed fetch's name is granted to the session's egress proxy.
    fetch_grants: OnceLock<Arc<FetchGrants>>,
}

impl SessionPolicy {
    /// Loads every rule file for `place`; the warnings name each file that is wrong (its rules
    /// are ignored, the other files still apply). The session runs in `mode`, else in its
    /// project's default mode (Nucleic's rule files), else in `edit`.
    pub fn load(
        config: &HostConfig,
        place: SessionPlace,
        mode: Option<Mode>,
    ) -> (Arc<SessionPolicy>, Vec<LoadWarning>) {
        let sources = sources(config, &place);
        let stamps = stamps(&sources);
        let (policy, warnings) = Policy::load(&sources);
        let mode = mode.or(policy.default_mode).unwrap_or_default();
        let session = SessionPolicy {
            policy: RwLock::new(policy),
            sources,
            stamps: Mutex::new(stamps),
            session_rules: Mutex::new(Vec::new()),
            place,
            home: agent_home(config),
            data_dir: config.home.clone(),
            mode: RwLock::new(mode),
            planning: AtomicBool::new(false),
            fetch_grants: OnceLock::new(),
        };
        (Arc::new(session), warnings)
    }

    /// Allowed fetches (`WebFetch`) grant their name to `grants`, the session's egress proxy's.
    pub(crate) fn grant_fetches_to(&self, grants: Arc<FetchGrants>) {
        let _ = self.fetch_grants.set(grants);
    }

    /// Sets the session's Nucleic mode: every later call is judged under it.
    pub fn set_session_mode(&self, mode: Mode) {
        *self.mode.write().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// The session's Nucleic mode now.
    pub fn session_mode(&self) -> Mode {
        *self.mode.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session plans before it acts: `readonly` until a plan is approved, its plan file
    /// writable.
    pub fn start_planning(&self) {
        self.planning.store(true, Ordering::SeqCst);
        self.set_session_mode(Mode::Readonly);
    }

    /// Whether the session is planning.
    pub fn planning(&self) -> bool {
        self.planning.load(Ordering::SeqCst)
    }

    /// A write of the session's plan file while it plans: a markdown file directly in
    /// `<agent home>/.claude/plans/`, symlinks resolved (a plan file that is a link elsewhere is
    /// not one).
    fn writes_the_plan_file(&self, request: &ApprovalRequested) -> bool {
        if !self.planning() || !PLAN_WRITERS.contains(&request.tool_name.as_str()) {
            return false;
        }
        let Some(path) = request.input.get("file_path").and_then(Value::as_str) else {
            return false;
        };
        let plans = FsResolver.resolve(&self.home.join(".claude/plans"));
        let file = FsResolver.resolve(Path::new(path));
        Path::new(path).is_absolute()
            && file.parent() == Some(plans.as_path())
            && file.extension().is_some_and(|e| e == "md")
    }

    /// Reads the rule files again if one changed since they were read.
    fn refresh(&self) {
        let now = stamps(&self.sources);
        let mut seen = self.stamps.lock().unwrap_or_else(PoisonError::into_inner);
        if *seen == now {
            return;
        }
        let (mut policy, _) = Policy::load(&self.sources);
        for (behaviour, rule) in
            self.session_rules.lock().unwrap_or_else(PoisonError::into_inner).iter()
        {
            let _ = policy.add_rule(Scope::Session, *behaviour, rule);
        }
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = policy;
        *seen = now;
    }

    fn context(&self) -> Context<'static> {
        Context {
            project_root: self.place.project_root.clone(),
            worktree: self.place.worktree.clone(),
            cwd: self.place.worktree.clone(),
            home: self.home.clone(),
            data_dir: self.data_dir.clone(),
            extra_write_roots: Vec::new(),
            read_roots: self.place.read_roots.clone(),
            mode: self.session_mode(),
            resolver: &FsResolver,
        }
    }

    /// The tool call of a request as the policy sees it: Codex's command as `Bash`.
    fn as_tool_call(request: &ApprovalRequested) -> (String, Value) {
        match request.tool_name.as_str() {
            CODEX_SHELL => {
                let line = request.input.get("command").and_then(Value::as_str).unwrap_or_default();
                ("Bash".into(), serde_json::json!({ "command": line }))
            }
            tool => (tool.to_owned(), request.input.clone()),
        }
    }

    /// The policy's decision on one request, tool names of both backends understood.
    pub fn decide(&self, request: &ApprovalRequested) -> nucleic_policy::Decision {
        if self.writes_the_plan_file(request) {
            return nucleic_policy::Decision {
                behaviour: Behaviour::Allow,
                by: "plan:plan-file".into(),
                reason: "the session writes its plan".into(),
                risk: Risk::Low,
                risk_reasons: Vec::new(),
            };
        }
        self.refresh();
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

    /// Keeps the narrowest rules that allow `request` in `scope`.
    pub fn remember(
        &self,
        request: &ApprovalRequested,
        scope: RuleScope,
    ) -> Result<Vec<String>, String> {
        self.refresh();
        let (tool, input) = Self::as_tool_call(request);
        let rules = if request.tool_name == CODEX_PATCH {
            let paths = codex_patch_paths(&request.input, &self.place.worktree);
            let policy = self.policy.read().unwrap_or_else(PoisonError::into_inner);
            let ctx = self.context();
            let mut rules = Vec::new();
            for path in paths {
                rules.extend(policy.suggest_rules(
                    "Write",
                    &serde_json::json!({ "file_path": path }),
                    &ctx,
                ));
            }
            rules
        } else {
            let policy = self.policy.read().unwrap_or_else(PoisonError::into_inner);
            policy.suggest_rules(&tool, &input, &self.context())
        };
        if rules.is_empty() {
            return Err(format!(
                "no rule can always allow this {tool} call (a hard invariant refuses it, or part of it is only known at run time)"
            ));
        }
        let file = match scope {
            RuleScope::Session => None,
            RuleScope::Project => Some(RuleFile::Project(
                self.place.project_id.clone().ok_or("this session has no project")?,
            )),
            RuleScope::Host => Some(RuleFile::Host),
        };
        match file {
            None => {
                let mut kept = self.session_rules.lock().unwrap_or_else(PoisonError::into_inner);
                let mut policy = self.policy.write().unwrap_or_else(PoisonError::into_inner);
                for rule in &rules {
                    policy
                        .add_rule(Scope::Session, Behaviour::Allow, rule)
                        .map_err(|e| e.to_string())?;
                    kept.push((Behaviour::Allow, rule.clone()));
                }
            }
            Some(file) => {
                let path = file.path(&self.data_dir);
                for rule in &rules {
                    crate::policy::rules::add_rule(&path, Behaviour::Allow, rule)
                        .map_err(|e| e.to_string())?;
                }
                self.refresh();
            }
        }
        Ok(rules)
    }
}

impl SessionPolicy {
    /// The mode the session's calls are judged in now.
    pub fn mode(&self) -> Mode {
        self.session_mode()
    }

    /// Judges every later call in `mode`.
    pub fn set_mode(&self, mode: Mode) {
        self.set_session_mode(mode);
    }

    /// The rule files this session reads, by scope.
    pub fn files(&self) -> Vec<(Scope, PathBuf)> {
        self.sources.files()
    }

    /// This session's own rules (in memory).
    pub fn session_rules(&self) -> Vec<(Behaviour, String)> {
        self.session_rules.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds a rule for this session only; false when it was there already. A rule that does not
    /// parse is refused with the parser's message.
    pub fn add_session_rule(&self, behaviour: Behaviour, rule: &str) -> Result<bool, String> {
        let text = nucleic_policy::Rule::parse(rule).map_err(|e| e.to_string())?.text;
        let mut kept = self.session_rules.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.iter().any(|(b, r)| *b == behaviour && *r == text) {
            return Ok(false);
        }
        let mut policy = self.policy.write().unwrap_or_else(PoisonError::into_inner);
        policy.add_rule(Scope::Session, behaviour, &text).map_err(|e| e.to_string())?;
        kept.push((behaviour, text));
        Ok(true)
    }

    /// Removes a rule of this session (whatever its behaviour); how many entries went.
    pub fn remove_session_rule(&self, rule: &str) -> usize {
        let rule = rule.trim();
        let mut kept = self.session_rules.lock().unwrap_or_else(PoisonError::into_inner);
        let before = kept.len();
        kept.retain(|(_, r)| r != rule);
        let mut policy = self.policy.write().unwrap_or_else(PoisonError::into_inner);
        policy.remove_rule(Scope::Session, rule);
        before - kept.len()
    }
}

/// The policies of the sessions whose agents run, by session id (dropped with their writer).
#[derive(Debug, Default)]
pub(crate) struct LivePolicies(Mutex<HashMap<String, Weak<SessionPolicy>>>);

impl LivePolicies {
    pub(crate) fn insert(&self, id: &str, policy: &Arc<SessionPolicy>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, p| p.strong_count() > 0);
        map.insert(id.to_owned(), Arc::downgrade(policy));
    }

    /// Sessions whose policy is still alive (dead entries are forgotten first).
    pub(crate) fn held(&self) -> usize {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, p| p.strong_count() > 0);
        map.len()
    }

    /// The running session's policy, if its agent runs with one.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<SessionPolicy>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(id).and_then(Weak::upgrade)
    }
}

/// `readonly`, `edit` or `full`; anything else is refused naming the three.
pub fn parse_mode(name: &str) -> Result<Mode, crate::HostError> {
    Mode::parse(name.trim()).ok_or_else(|| {
        crate::HostError::Invalid(format!(
            "unknown mode {name:?}: a mode is readonly, edit or full"
        ))
    })
}

/// (modification time, size) of each rule file; `None` for a missing one.
fn stamps(sources: &Sources) -> Vec<Option<(SystemTime, u64)>> {
    sources
        .files()
        .iter()
        .map(|(_, path)| {
            std::fs::metadata(path).ok().and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// The paths of a Codex file change (`{"changes": [{"path": …}, …]}`, or a map keyed by path).
fn codex_patch_paths(input: &Value, cwd: &Path) -> Vec<PathBuf> {
    // Moves included: a rename's destination is written too.
    nucleic_policy::codex::patch_paths(input, cwd)
}

impl ApprovalPolicy for SessionPolicy {
    fn remember(
        &self,
        request: &ApprovalRequested,
        scope: RuleScope,
    ) -> Result<Vec<String>, String> {
        SessionPolicy::remember(self, request, scope)
    }

    fn allowing(&self, request: &ApprovalRequested) {
        if let Some(grants) = self.fetch_grants.get() {
            grants.allowing(request);
        }
    }

    fn set_mode(&self, mode: SessionMode) -> Result<(), String> {
        self.planning.store(false, Ordering::SeqCst);
        self.set_session_mode(policy_mode(mode));
        Ok(())
    }

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

/// A Nucleic mode on the wire as the policy's.
pub fn policy_mode(mode: SessionMode) -> Mode {
    match mode {
        SessionMode::Readonly => Mode::Readonly,
        SessionMode::Edit => Mode::Edit,
        SessionMode::Full => Mode::Full,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::config::{AgentPaths, Limits};
    use serde_json::json;

    fn write(tool: &str, path: &Path) -> ApprovalRequested {
        ApprovalRequested {
            request_id: "r".into(),
            tool_call_id: None,
            tool_name: tool.into(),
            input: json!({"file_path": path, "content": "x"}),
            description: None,
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }
    }

    #[test]
    fn a_planning_session_writes_only_its_plan_file_until_the_plan_is_approved() {
        let dir = tempfile::tempdir().unwrap();
        let (home, root, worktree) =
            (dir.path().join("agent-home"), dir.path().join("repo"), dir.path().join("wt"));
        let plans = home.join(".claude/plans");
        for d in [&plans, &root, &worktree] {
            std::fs::create_dir_all(d).unwrap();
        }
        // A plan file that is a link to a file outside is not a plan file.
        std::os::unix::fs::symlink(dir.path().join("outside.md"), plans.join("link.md")).unwrap();
        let config = HostConfig {
            home: dir.path().join("nucleic-home"),
            agents: AgentPaths {
                claude: None,
                codex: None,
                gemini: None,
                opencode: None,
                qwen: None,
                sim_program: "nucleic".into(),
                sim_prefix: Vec::new(),
                nucleic: "nucleic".into(),
            },
            limits: Limits { max_live_sessions: 1, max_worktrees: 1, min_free_bytes: 0 },
            approval_timeout: None,
            setup_timeout: std::time::Duration::from_secs(1),
            agent_env: vec![("HOME".into(), home.into())],
            agent_isolation: crate::AgentIsolation::Auto,
            keepers: None,
            policy: true,
        };
        let place = SessionPlace {
            project_root: root,
            project_id: None,
            worktree: worktree.clone(),
            read_roots: Vec::new(),
        };
        let (policy, _) = SessionPolicy::load(&config, place, None);
        policy.start_planning();
        let decide = |tool: &str, path: &Path| {
            let d = policy.decide(&write(tool, path));
            (d.behaviour, d.by)
        };
        let plan_file = (Behaviour::Allow, "plan:plan-file".to_owned());
        assert_eq!(decide("Write", &plans.join("fix-it.md")), plan_file);
        assert_eq!(decide("Edit", &plans.join("fix-it.md")), plan_file);
        for (tool, path) in [
            ("Write", plans.join("link.md")),
            ("Write", plans.join("sub/fix-it.md")),
            ("Write", plans.join("fix-it.sh")),
            ("Write", plans.join("../settings.json")),
            ("Bash", plans.join("fix-it.md")),
        ] {
            assert_ne!(decide(tool, &path).1, plan_file.1, "{tool} {}", path.display());
        }
        // Readonly while planning: the worktree is not written.
        assert_eq!(
            decide("Write", &worktree.join("a.txt")),
            (Behaviour::Deny, "mode:readonly".into())
        );

        // Approved into edit: the worktree is written; the plans dir is outside it again.
        ApprovalPolicy::set_mode(&*policy, SessionMode::Edit).unwrap();
        assert_eq!(policy.session_mode(), Mode::Edit);
        assert_eq!(decide("Write", &worktree.join("a.txt")).0, Behaviour::Allow);
        assert_eq!(decide("Write", &plans.join("fix-it.md")).0, Behaviour::Deny);
    }
}
