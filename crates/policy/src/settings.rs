//! Loading rules from the files Claude Code reads and from Nucleic's own rule files.
//!
//! Claude Code: `<project>/.claude/settings.json`, `<project>/.claude/settings.local.json`,
//! `~/.claude/settings.json`, each `{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}`.
//! Nucleic's per-project and per-host files use the same shape plus an optional
//! `"mode": "readonly" | "edit" | "full"` (the default mode of new sessions).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::mode::Mode;
use crate::rule::{Behaviour, Rule, RuleError};

/// Where a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// In memory, for one session ("always" for this session).
    Session,
    /// `<project>/.claude/settings.local.json`.
    LocalSettings,
    /// `<project>/.claude/settings.json`.
    ProjectSettings,
    /// `~/.claude/settings.json`.
    UserSettings,
    /// Nucleic's rules for one project (kept by the host, outside the repository).
    NucleicProject,
    /// Nucleic's rules for every project of this host.
    NucleicHost,
    /// Claude Code's managed (organisation) settings, `/etc/claude-code/managed-settings.json`.
    ManagedSettings,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Session => "session",
            Self::LocalSettings => "localSettings",
            Self::ProjectSettings => "projectSettings",
            Self::UserSettings => "userSettings",
            Self::NucleicProject => "nucleicProject",
            Self::NucleicHost => "nucleicHost",
            Self::ManagedSettings => "policySettings",
        })
    }
}

/// A rule with its behaviour and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedRule {
    /// The rule.
    pub rule: Rule,
    /// allow, ask or deny.
    pub behaviour: Behaviour,
    /// Where it comes from.
    pub scope: Scope,
}

/// Something wrong in a rule source; the other sources still apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadWarning {
    /// The file exists but could not be read.
    #[error("{path}: cannot read: {error}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: String,
    },
    /// The file is not valid JSON or not the expected shape; none of its rules apply.
    #[error("{path}: malformed settings, its rules are ignored: {error}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: String,
    },
    /// One rule could not be parsed; the file's other rules apply.
    #[error("{path}: {error}")]
    BadRule {
        /// The file.
        path: PathBuf,
        /// The rule's error.
        error: RuleError,
    },
    /// A rule names a tool Claude Code does not have; it is kept.
    #[error("{path}: rule {rule:?} names an unknown tool (kept)")]
    UnknownTool {
        /// The file.
        path: PathBuf,
        /// The rule as written.
        rule: String,
    },
}

/// The files to load rules from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The project's main checkout (its `.claude/` is read; not the agent's worktree, which the
    /// agent can edit).
    pub project_root: PathBuf,
    /// The person's home (its `.claude/settings.json` is read).
    pub user_home: PathBuf,
    /// Nucleic's per-project rule file, if any.
    pub nucleic_project: Option<PathBuf>,
    /// Nucleic's per-host rule file, if any.
    pub nucleic_host: Option<PathBuf>,
    /// Claude Code's managed settings file, if any ([`MANAGED_SETTINGS`] on Linux).
    pub claude_managed: Option<PathBuf>,
}

/// Where Claude Code reads managed settings on Linux.
pub const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

impl Sources {
    /// The files Claude Code reads for a project and a home (managed settings included), and no
    /// Nucleic rule file.
    pub fn claude(project_root: impl Into<PathBuf>, user_home: impl Into<PathBuf>) -> Self {
        Self {
            project_root: project_root.into(),
            user_home: user_home.into(),
            nucleic_project: None,
            nucleic_host: None,
            claude_managed: Some(PathBuf::from(MANAGED_SETTINGS)),
        }
    }
}

impl Sources {
    /// Every file with its scope, in the order they are read.
    pub fn files(&self) -> Vec<(Scope, PathBuf)> {
        let claude = self.project_root.join(".claude");
        let mut files = vec![
            (Scope::LocalSettings, claude.join("settings.local.json")),
            (Scope::ProjectSettings, claude.join("settings.json")),
            (Scope::UserSettings, self.user_home.join(".claude").join("settings.json")),
        ];
        if let Some(path) = &self.nucleic_project {
            files.push((Scope::NucleicProject, path.clone()));
        }
        if let Some(path) = &self.nucleic_host {
            files.push((Scope::NucleicHost, path.clone()));
        }
        if let Some(path) = &self.claude_managed {
            files.push((Scope::ManagedSettings, path.clone()));
        }
        files
    }
}

/// What one rule file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleFile {
    /// Its rules.
    pub rules: Vec<ScopedRule>,
    /// Its default mode (Nucleic files only).
    pub mode: Option<Mode>,
}

/// Reads one rule file. A missing file is empty; anything else wrong is a warning.
pub fn load_file(path: &Path, scope: Scope, warnings: &mut Vec<LoadWarning>) -> RuleFile {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return RuleFile::default(),
        Err(e) => {
            warnings.push(LoadWarning::Unreadable { path: path.to_owned(), error: e.to_string() });
            return RuleFile::default();
        }
    };
    match parse_file(&text, path, scope, warnings) {
        Ok(file) => file,
        Err(error) => {
            warnings.push(LoadWarning::Malformed { path: path.to_owned(), error });
            RuleFile::default()
        }
    }
}

/// Parses a rule file's text; `Err` when its shape is wrong (then none of it applies).
pub fn parse_file(
    text: &str,
    path: &Path,
    scope: Scope,
    warnings: &mut Vec<LoadWarning>,
) -> Result<RuleFile, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Object(root) = value else { return Err("the top level is not an object".into()) };
    let mut file = RuleFile::default();
    if let Some(mode) = root.get("mode") {
        let name = mode.as_str().ok_or("`mode` is not a string")?;
        file.mode = Some(Mode::parse(name).ok_or_else(|| format!("unknown mode {name:?}"))?);
    }
    let Some(permissions) = root.get("permissions") else { return Ok(file) };
    let Value::Object(permissions) = permissions else {
        return Err("`permissions` is not an object".into());
    };
    for (key, behaviour) in
        [("deny", Behaviour::Deny), ("ask", Behaviour::Ask), ("allow", Behaviour::Allow)]
    {
        let Some(list) = permissions.get(key) else { continue };
        let Value::Array(list) = list else {
            return Err(format!("`permissions.{key}` is not a list"));
        };
        let mut parsed = Vec::with_capacity(list.len());
        for entry in list {
            let Value::String(text) = entry else {
                return Err(format!("`permissions.{key}` holds a non-string entry"));
            };
            parsed.push(text);
        }
        for text in parsed {
            match Rule::parse(text) {
                Ok(rule) => {
                    if !rule.names_known_tool() {
                        warnings.push(LoadWarning::UnknownTool {
                            path: path.to_owned(),
                            rule: rule.text.clone(),
                        });
                    }
                    file.rules.push(ScopedRule { rule, behaviour, scope });
                }
                Err(error) => warnings.push(LoadWarning::BadRule { path: path.to_owned(), error }),
            }
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Result<RuleFile, String>, Vec<LoadWarning>) {
        let mut warnings = Vec::new();
        let file = parse_file(
            text,
            Path::new("/p/.claude/settings.json"),
            Scope::ProjectSettings,
            &mut warnings,
        );
        (file, warnings)
    }

    #[test]
    fn reads_the_seed_example() {
        let (file, warnings) = parse(
            r#"{"permissions":{"allow":["Bash(npm:*)","Edit(.claude)","Read"],"deny":["Bash(rm -rf:*)"],
               "ask":["Write(/etc/*)"],"defaultMode":"acceptEdits"},"model":"x"}"#,
        );
        let file = file.unwrap();
        assert!(warnings.is_empty());
        assert_eq!(file.rules.len(), 5);
        assert_eq!(file.rules[0].behaviour, Behaviour::Deny);
    }

    #[test]
    fn unknown_tools_are_kept_and_reported_bad_rules_skipped() {
        let (file, warnings) = parse(r#"{"permissions":{"allow":["Frobnicate","Bash(x","Read"]}}"#);
        assert_eq!(file.unwrap().rules.len(), 2);
        assert!(
            matches!(&warnings[0], LoadWarning::UnknownTool { rule, .. } if rule == "Frobnicate")
        );
        assert!(matches!(&warnings[1], LoadWarning::BadRule { .. }));
    }

    #[test]
    fn wrong_shapes_are_errors() {
        assert!(parse("{").0.is_err());
        assert!(parse(r#"{"permissions":{"allow":"Bash"}}"#).0.is_err());
        assert!(parse(r#"{"permissions":{"allow":[1]}}"#).0.is_err());
        assert!(parse(r#"{"mode":"turbo"}"#).0.is_err());
        assert_eq!(parse(r#"{"mode":"full"}"#).0.unwrap().mode, Some(Mode::Full));
    }
}
