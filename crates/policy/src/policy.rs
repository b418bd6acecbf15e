//! The rule set of a session: rules from every scope, added and removed at run time.

use crate::mode::Mode;
use crate::rule::{Behaviour, Rule, RuleError};
use crate::settings::{self, LoadWarning, Scope, ScopedRule, Sources};

/// Every rule that applies to a session, with the project's default mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub(crate) rules: Vec<ScopedRule>,
    /// The default mode from Nucleic's project file (else the host file), if any.
    pub default_mode: Option<Mode>,
}

impl Policy {
    /// A policy with no rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads every rule file of `sources`. A missing file is no rules; a malformed one is a
    /// warning naming it, and the other files still apply.
    pub fn load(sources: &Sources) -> (Self, Vec<LoadWarning>) {
        let mut warnings = Vec::new();
        let mut policy = Self::new();
        let mut host_mode = None;
        for (scope, path) in sources.files() {
            let file = settings::load_file(&path, scope, &mut warnings);
            match scope {
                Scope::NucleicProject => policy.default_mode = policy.default_mode.or(file.mode),
                Scope::NucleicHost => host_mode = file.mode,
                _ => {}
            }
            policy.rules.extend(file.rules);
        }
        policy.default_mode = policy.default_mode.or(host_mode);
        (policy, warnings)
    }

    /// Adds one rule (e.g. "always" chosen by a person) in `scope`.
    pub fn add_rule(
        &mut self,
        scope: Scope,
        behaviour: Behaviour,
        text: &str,
    ) -> Result<(), RuleError> {
        let rule = Rule::parse(text)?;
        let scoped = ScopedRule { rule, behaviour, scope };
        if !self.rules.contains(&scoped) {
            self.rules.push(scoped);
        }
        Ok(())
    }

    /// Removes the rules written `text` in `scope`; how many were removed.
    pub fn remove_rule(&mut self, scope: Scope, text: &str) -> usize {
        let before = self.rules.len();
        self.rules.retain(|r| !(r.scope == scope && r.rule.text == text.trim()));
        before - self.rules.len()
    }

    /// Every rule, in load order.
    pub fn rules(&self) -> &[ScopedRule] {
        &self.rules
    }

    /// The rules with one behaviour.
    pub(crate) fn with(&self, behaviour: Behaviour) -> impl Iterator<Item = &ScopedRule> {
        self.rules.iter().filter(move |r| r.behaviour == behaviour)
    }
}
