//! Which policy and mode a session runs under: its rules when its agent starts (policy, rule-file
//! problems, approval timeout), the mode it starts in, and switching it mid-session.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nucleic_core::ApprovalPolicy;
use nucleic_policy::Mode;

use crate::policy::rules::RuleFile;
use crate::policy::session::{PLAN_PERMISSION_MODE, SessionPlace, SessionPolicy, parse_mode};

/// What a session gets from its project's rules: the policy, problems to record, the timeout.
pub(crate) struct SessionRules {
    pub policy: Option<Arc<dyn ApprovalPolicy>>,
    /// An `error` event for each rule file that is wrong.
    pub problems: Vec<nucleic_protocol::EventKind>,
    /// The project's (else the host's) approval timeout, else the host configuration's.
    pub approval_timeout: Option<std::time::Duration>,
}

impl crate::context::Context {
    /// The rules of a session of `backend` in project `project_id` working in `cwd`: its
    /// policy (none for the simulated agent, whose approvals exist to be answered by a person,
    /// for a session outside a project, or when the host runs without a policy), the problems
    /// of its rule files, and its approval timeout.
    pub(crate) async fn session_rules(
        &self,
        session_id: &str,
        backend: nucleic_protocol::Backend,
        project_id: Option<&str>,
        cwd: &Path,
        mode: Option<&str>,
        permission_mode: Option<&str>,
    ) -> SessionRules {
        let mut rules = SessionRules {
            policy: None,
            problems: Vec::new(),
            approval_timeout: self.config.approval_timeout,
        };
        let error = |message: String| {
            nucleic_protocol::EventKind::Error(nucleic_protocol::ErrorEvent {
                code: nucleic_protocol::ErrorCode::InvalidInput,
                message,
                http_status: None,
            })
        };
        let mut files = vec![RuleFile::Host];
        if let Some(p) = project_id {
            files.insert(0, RuleFile::Project(p.to_owned()));
        }
        for file in files {
            match crate::policy::rules::approval_timeout(&self.config.rule_file(&file)) {
                Ok(Some(timeout)) => {
                    rules.approval_timeout = Some(timeout);
                    break;
                }
                Ok(None) => {}
                Err(e) => rules.problems.push(error(format!("policy: {e}"))),
            }
        }
        if !self.has_policy(backend) {
            return rules;
        }
        let Some(project_id) = project_id else { return rules };
        let Ok(project) = self.project(project_id).await else { return rules };
        let place = SessionPlace {
            project_root: PathBuf::from(&project.root),
            project_id: Some(project.id.clone()),
            worktree: cwd.to_owned(),
            // Its attachments (sent from a chat): the sandbox shows them read-only.
            read_roots: vec![crate::sessions::attachments::attachments_dir(
                &self.config,
                session_id,
            )],
        };
        let config = self.config.clone();
        let mode = mode.and_then(Mode::parse);
        let loaded =
            tokio::task::spawn_blocking(move || SessionPolicy::load(&config, place, mode)).await;
        let Ok((policy, warnings)) = loaded else { return rules };
        rules.problems.extend(warnings.into_iter().map(|w| error(format!("policy: {w}"))));
        self.policies.insert(session_id, &policy);
        policy.grant_fetches_to(self.egress.grants_for(session_id));
        if permission_mode == Some(PLAN_PERMISSION_MODE) {
            policy.start_planning();
        }
        rules.policy = Some(policy);
        rules
    }

    /// Whether sessions of `backend` are judged by a policy (and so have a mode).
    pub(crate) fn has_policy(&self, backend: nucleic_protocol::Backend) -> bool {
        self.config.policy && nucleic_agents::describe(backend).policy
    }

    /// The mode a new session of `backend` in `project_id` starts in: `requested`, else the
    /// project's default. `None` for a session without a policy; asking for a mode there, or
    /// for an unknown mode, is refused.
    pub(crate) fn start_mode(
        &self,
        backend: nucleic_protocol::Backend,
        project_id: &str,
        requested: Option<&str>,
    ) -> Result<Option<String>, crate::HostError> {
        if !self.has_policy(backend) {
            return match requested {
                None => Ok(None),
                Some(_) => Err(crate::HostError::Invalid(format!(
                    "a {} session has no policy (the simulated agent, or NUCLEIC_POLICY=off), so no mode",
                    backend.as_str()
                ))),
            };
        }
        let mode = match requested {
            Some(name) => parse_mode(name)?,
            None => self.project_mode(project_id)?,
        };
        Ok(Some(mode.as_str().to_owned()))
    }

    /// Switches session `id` to `mode` (`readonly`, `edit`, `full`): a running agent's next tool
    /// call is judged in it at once — both backends put every call the policy could refuse to
    /// the host (Claude through its PreToolUse hook, Codex through its approvals) — and a later
    /// start (resume, re-adoption) keeps it. Recorded as `sessionUpdated { mode, note, by }`.
    pub async fn set_session_mode(
        &self,
        id: &str,
        mode: &str,
        by: &str,
    ) -> Result<nucleic_protocol::SessionUpdated, crate::HostError> {
        let mode = parse_mode(mode)?;
        let row = self.session_row(id).await?;
        if row.read_only || row.project_id.is_none() || !self.has_policy(row.backend) {
            return Err(crate::HostError::Invalid(format!(
                "session {id} has no policy (an imported or simulated session, or NUCLEIC_POLICY=off), so no mode to set"
            )));
        }
        let live = self.policies.get(id);
        if let Some(policy) = &live {
            policy.set_mode(mode);
        }
        let mut note = match &live {
            None => "applies when the agent next starts".to_owned(),
            Some(_) => nucleic_agents::describe(row.backend).live_mode_switch.to_owned(),
        };
        // The worktree's writability is the file system the agent was started with: an idle
        // agent is stopped so the next follow-up resumes it with the new one.
        let was_read_only = is_read_only(row.mode.as_deref());
        if live.is_some() && was_read_only != (mode == Mode::Readonly) {
            let view = if was_read_only { "writable" } else { "read-only" };
            let handle = self.live_handle(id);
            // A turn that just ended may not have said so yet: a moment's grace.
            if let Some(handle) = &handle {
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
                while !is_idle(&handle.state()) && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
            match handle {
                Some(handle) if is_idle(&handle.state()) => {
                    handle.stop(std::time::Duration::from_secs(5), None).await?;
                    // Its end is recorded before the switch is, so a follow-up resumes it.
                    let ended = handle.wait_finished();
                    if tokio::time::timeout(std::time::Duration::from_secs(10), ended).await.is_err() {
                        return Err(crate::HostError::Invalid(format!(
                            "session {id}'s agent did not stop within 10 s for the mode switch"
                        )));
                    }
                    note.push_str(&format!(
                        "; the agent was stopped and resumes at the next follow-up with its \
                         worktree {view}"
                    ));
                }
                _ => note.push_str(&format!(
                    "; its worktree becomes {view} to the agent when it next starts (it is busy now)"
                )),
            }
        }
        let update = nucleic_protocol::SessionUpdated {
            title: None,
            archived: None,
            mode: Some(mode.as_str().to_owned()),
            note: Some(note),
            by: by.to_owned(),
        };
        self.record(id, nucleic_protocol::EventKind::SessionUpdated(update.clone())).await?;
        Ok(update)
    }
}

/// Whether a session's agent waits for a person's next message, with nothing pending.
fn is_idle(state: &nucleic_core::SessionState) -> bool {
    use nucleic_protocol::SessionStatus;
    state.pending_approvals == 0
        && state.finished.is_none()
        && matches!(state.status, SessionStatus::Idle | SessionStatus::AwaitingInput)
}

/// Whether a session in `mode` has a read-only worktree (the `readonly` mode is a property of
/// the file system its agent sees, not only of the policy).
pub(crate) fn is_read_only(mode: Option<&str>) -> bool {
    mode.and_then(Mode::parse) == Some(Mode::Readonly)
}
