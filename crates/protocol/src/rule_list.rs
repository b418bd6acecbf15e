//! Rules as clients see them: which session or project a listing is for, and each rule that
//! applies with its behaviour and where it lives (`listRules`, `addRule`, `removeRule`).

use serde::{Deserialize, Serialize};

/// Whose rules: a session's (and its project's), else a project's, else the host's alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RulesTarget {
    #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

/// What a rule does to a matching call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum RuleBehaviour {
    Allow,
    Ask,
    Deny,
}

/// Where a listed rule lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum RuleSource {
    /// "Always" for this session (in memory).
    Session,
    /// Nucleic's rule file of the project.
    NucleicProject,
    /// Nucleic's rule file of the host.
    NucleicHost,
    /// Claude Code's `.claude/settings.local.json` of the project.
    LocalSettings,
    /// Claude Code's `.claude/settings.json` of the project.
    ProjectSettings,
    /// Claude Code's `~/.claude/settings.json` of the agents' home.
    UserSettings,
    /// Claude Code's managed settings.
    PolicySettings,
}

/// One rule that applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RuleEntry {
    pub source: RuleSource,
    pub behaviour: RuleBehaviour,
    pub rule: String,
    /// The file it is in (none for session rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Nucleic's rules can be removed here; Claude Code's files are shown read-only.
    pub removable: bool,
}

/// The answer to `listRules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RuleList {
    pub rules: Vec<RuleEntry>,
    /// Files that could not be read (each named, with why); their rules do not apply.
    pub problems: Vec<String>,
    /// The session's current mode, when a session was asked about.
    #[serde(rename = "sessionMode", default, skip_serializing_if = "Option::is_none")]
    pub session_mode: Option<String>,
    /// The mode new sessions of the project start in (the project's, else the host's, else
    /// `edit`), when a project (or a session's) was asked about.
    #[serde(rename = "projectMode", default, skip_serializing_if = "Option::is_none")]
    pub project_mode: Option<String>,
}
