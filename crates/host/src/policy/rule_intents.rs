//! Rules and modes as clients see them: the rules that apply to a session or project by scope
//! (Claude Code's files shown, Nucleic's editable through `host::rules`, as `nucleic rules`
//! does), adding and removing Nucleic's, and the project's default mode.

use std::path::PathBuf;

use nucleic_policy::{Behaviour, Mode, Scope};
use nucleic_protocol::{RuleBehaviour, RuleEntry, RuleList, RuleScope, RuleSource, RulesTarget};

use crate::context::Context;
use crate::error::HostError;
use crate::policy::rules::{RuleFile, add_rule, list_rules, read_mode, remove_rule, write_mode};
use crate::policy::session::{SessionPlace, parse_mode, sources};

/// What a request's target resolves to.
struct Resolved {
    session_id: Option<String>,
    project_id: Option<String>,
    place: Option<SessionPlace>,
}

impl Context {
    /// The mode new sessions of `project_id` start in: the project's rule file's `mode`, else
    /// the host's, else `edit`. A malformed file is refused naming it.
    pub fn project_mode(&self, project_id: &str) -> Result<Mode, HostError> {
        for file in [RuleFile::Project(project_id.to_owned()), RuleFile::Host] {
            if let Some(mode) = read_mode(&self.config.rule_file(&file))? {
                return Ok(mode);
            }
        }
        Ok(Mode::default())
    }

    /// Sets the project's default mode in its rule file (`None`: back to the host's default);
    /// the mode new sessions then start in.
    pub async fn set_project_mode(
        &self,
        project_id: &str,
        mode: Option<&str>,
    ) -> Result<Mode, HostError> {
        self.project(project_id).await?;
        let mode = mode.map(parse_mode).transpose()?;
        let path = self.config.rule_file(&RuleFile::Project(project_id.to_owned()));
        blocking(move || write_mode(&path, mode)).await?;
        self.project_mode(project_id)
    }

    async fn resolve(&self, target: &RulesTarget) -> Result<Resolved, HostError> {
        if let Some(id) = &target.session_id {
            let row = self.session_row(id).await?;
            let project_id = row.project_id.clone();
            let place = match &project_id {
                Some(p) => {
                    let project = self.project(p).await?;
                    Some(SessionPlace {
                        project_root: PathBuf::from(&project.root),
                        project_id: Some(project.id),
                        worktree: PathBuf::from(&row.cwd),
                        read_roots: vec![crate::sessions::attachments::attachments_dir(
                            &self.config,
                            id,
                        )],
                    })
                }
                None => None,
            };
            return Ok(Resolved { session_id: Some(id.clone()), project_id, place });
        }
        if let Some(p) = &target.project_id {
            let project = self.project(p).await?;
            let root = PathBuf::from(&project.root);
            let place = SessionPlace {
                project_root: root.clone(),
                project_id: Some(project.id),
                worktree: root,
                read_roots: Vec::new(),
            };
            return Ok(Resolved {
                session_id: None,
                project_id: Some(p.clone()),
                place: Some(place),
            });
        }
        Ok(Resolved { session_id: None, project_id: None, place: None })
    }

    /// Every rule that applies to `target`, by scope, with the files that could not be read.
    pub async fn list_rules(&self, target: &RulesTarget) -> Result<RuleList, HostError> {
        let resolved = self.resolve(target).await?;
        let files: Vec<(Scope, PathBuf)> = match &resolved.place {
            Some(place) => sources(&self.config, place).files(),
            None => vec![(Scope::NucleicHost, self.config.rule_file(&RuleFile::Host))],
        };
        let mut list = RuleList {
            rules: Vec::new(),
            problems: Vec::new(),
            session_mode: None,
            project_mode: None,
        };
        if let Some(id) = &resolved.session_id {
            list.session_mode = self.session_row(id).await?.mode;
            if let Some(policy) = self.policies.get(id) {
                list.session_mode = Some(policy.mode().as_str().to_owned());
                for (behaviour, rule) in policy.session_rules() {
                    list.rules.push(RuleEntry {
                        source: RuleSource::Session,
                        behaviour: wire_behaviour(behaviour),
                        rule,
                        path: None,
                        removable: true,
                    });
                }
            }
        }
        if let Some(p) = &resolved.project_id {
            match self.project_mode(p) {
                Ok(mode) => list.project_mode = Some(mode.as_str().to_owned()),
                Err(e) => list.problems.push(e.to_string()),
            }
        }
        let read = blocking(move || {
            Ok(files.into_iter().map(|(scope, path)| (scope, list_rules(&path), path)).collect())
        });
        let read: Vec<_> = read.await?;
        for (scope, rules, path) in read {
            let source = source_of(scope);
            let removable = matches!(source, RuleSource::NucleicProject | RuleSource::NucleicHost);
            match rules {
                Ok(rules) => list.rules.extend(rules.into_iter().map(|r| RuleEntry {
                    source,
                    behaviour: wire_behaviour(r.behaviour),
                    rule: r.rule,
                    path: Some(path.display().to_string()),
                    removable,
                })),
                Err(e) => list.problems.push(e.to_string()),
            }
        }
        Ok(list)
    }

    /// The Nucleic rule file of `scope` for `target` (`None` for the session's own rules).
    async fn rule_file_for(
        &self,
        target: &RulesTarget,
        scope: RuleScope,
    ) -> Result<(Option<PathBuf>, Option<String>), HostError> {
        let resolved = self.resolve(target).await?;
        match scope {
            RuleScope::Session => {
                let id = resolved.session_id.ok_or_else(|| {
                    HostError::Invalid("a session rule needs a session (sessionID)".into())
                })?;
                Ok((None, Some(id)))
            }
            RuleScope::Project => {
                let project = resolved.project_id.ok_or_else(|| {
                    HostError::Invalid(
                        "a project rule needs a project (projectID or a session of one)".into(),
                    )
                })?;
                Ok((Some(self.config.rule_file(&RuleFile::Project(project))), None))
            }
            RuleScope::Host => Ok((Some(self.config.rule_file(&RuleFile::Host)), None)),
        }
    }

    /// Adds `rule` with `behaviour` in `scope` (a running session's own rules, the project's
    /// or the host's rule file); a rule that does not parse is refused with the parser's
    /// message. Answers whether it was new.
    pub async fn add_rule(
        &self,
        target: &RulesTarget,
        scope: RuleScope,
        behaviour: RuleBehaviour,
        rule: &str,
    ) -> Result<bool, HostError> {
        let behaviour = policy_behaviour(behaviour);
        match self.rule_file_for(target, scope).await? {
            (Some(path), _) => {
                let rule = rule.to_owned();
                blocking(move || add_rule(&path, behaviour, &rule)).await
            }
            (None, Some(id)) => {
                let policy = self.running_policy(&id)?;
                policy.add_session_rule(behaviour, rule).map_err(HostError::Invalid)
            }
            (None, None) => Err(HostError::Invalid("no place for the rule".into())),
        }
    }

    /// Removes `rule` (as listed) from `scope`; refused when it is not there.
    pub async fn remove_rule(
        &self,
        target: &RulesTarget,
        scope: RuleScope,
        rule: &str,
    ) -> Result<usize, HostError> {
        let (removed, place) = match self.rule_file_for(target, scope).await? {
            (Some(path), _) => {
                let (rule, shown) = (rule.to_owned(), path.display().to_string());
                (blocking(move || remove_rule(&path, &rule)).await?, shown)
            }
            (None, Some(id)) => {
                let policy = self.running_policy(&id)?;
                (policy.remove_session_rule(rule), format!("session {id}"))
            }
            (None, None) => (0, String::new()),
        };
        if removed == 0 {
            return Err(HostError::NotFound(format!("rule {rule:?} in {place}")));
        }
        Ok(removed)
    }

    fn running_policy(
        &self,
        id: &str,
    ) -> Result<std::sync::Arc<crate::policy::session::SessionPolicy>, HostError> {
        self.policies.get(id).ok_or_else(|| {
            HostError::Invalid(format!(
                "session {id} has no running agent with a policy: its own rules live only while it runs"
            ))
        })
    }
}

fn source_of(scope: Scope) -> RuleSource {
    match scope {
        Scope::Session => RuleSource::Session,
        Scope::LocalSettings => RuleSource::LocalSettings,
        Scope::ProjectSettings => RuleSource::ProjectSettings,
        Scope::UserSettings => RuleSource::UserSettings,
        Scope::NucleicProject => RuleSource::NucleicProject,
        Scope::NucleicHost => RuleSource::NucleicHost,
        Scope::ManagedSettings => RuleSource::PolicySettings,
    }
}

fn wire_behaviour(b: Behaviour) -> RuleBehaviour {
    match b {
        Behaviour::Allow => RuleBehaviour::Allow,
        Behaviour::Ask => RuleBehaviour::Ask,
        Behaviour::Deny => RuleBehaviour::Deny,
    }
}

fn policy_behaviour(b: RuleBehaviour) -> Behaviour {
    match b {
        RuleBehaviour::Allow => Behaviour::Allow,
        RuleBehaviour::Ask => Behaviour::Ask,
        RuleBehaviour::Deny => Behaviour::Deny,
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, HostError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| HostError::Task(e.to_string()))?
}
