//! Permission rules in Claude Code's syntax: `Tool`, `Tool(specifier)`, `mcp__server__tool`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::glob;
use crate::paths;

/// What a rule or a decision does with a tool call. Ordered by precedence: deny > ask > allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// Runs without asking.
    Allow,
    /// A person decides.
    Ask,
    /// Refused; the model sees the reason.
    Deny,
}

impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        })
    }
}

/// Tools Claude Code has; rules naming others are kept (and reported).
pub const KNOWN_TOOLS: &[&str] = &[
    "Bash",
    "BashOutput",
    "KillShell",
    "KillBash",
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "Task",
    "Agent",
    "TodoWrite",
    "ExitPlanMode",
    "AskUserQuestion",
    "SlashCommand",
    "Skill",
];
/// Tools that edit files: an `Edit(path)` rule covers them all.
pub const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];
/// Tools that read files: a `Read(path)` rule covers them all.
pub const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "LS", "NotebookRead"];

/// A shell command pattern: the part inside `Bash(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandPattern {
    /// `Bash(git status)`: exactly this command.
    Exact(String),
    /// `Bash(npm run test:*)` or `Bash(npm *)`: the prefix alone or followed by a space.
    Prefix(String),
    /// `Bash(git * main)`: `*` matches any run of characters.
    Wildcard(String),
}

impl CommandPattern {
    fn parse(content: &str) -> Self {
        let content = normalize_command(content);
        if let Some(prefix) = content.strip_suffix(":*") {
            return Self::Prefix(prefix.trim_end().to_owned());
        }
        if let Some(prefix) = content.strip_suffix(" *")
            && !prefix.contains('*')
        {
            return Self::Prefix(prefix.to_owned());
        }
        if content.contains('*') {
            return Self::Wildcard(content);
        }
        Self::Exact(content)
    }

    /// True when one simple command (its words joined by single spaces) matches.
    pub fn matches(&self, command: &str) -> bool {
        match self {
            Self::Exact(exact) => command == exact,
            Self::Prefix(prefix) => {
                command == prefix
                    || (command.starts_with(prefix.as_str())
                        && command[prefix.len()..].starts_with(' '))
            }
            Self::Wildcard(pattern) => glob::wildcard(pattern, command),
        }
    }
}

/// Collapses the quoting and spacing of a command written in a rule, as the parser does for
/// commands: `echo  "a b"` → `echo a b`. Unquoted `*` stays a wildcard.
fn normalize_command(content: &str) -> String {
    if content.contains(['\'', '"', '\\']) {
        let script = crate::shell::parse(content);
        if let Some(first) = script.commands.first() {
            return first
                .assignments
                .iter()
                .chain(&first.words)
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    content.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where a path pattern is anchored (Claude Code's gitignore-style forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `//abs/path`: from the filesystem root.
    Root,
    /// `~/path`: from the home directory.
    Home,
    /// `/path`: from the project root.
    Project,
    /// `path`, `./path`: from the session's working directory.
    Cwd,
}

/// A path pattern: the part inside `Read(…)`, `Edit(…)`, `Write(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    /// Where it starts.
    pub anchor: Anchor,
    /// Its components (`**` matches any number of them).
    pub parts: Vec<String>,
    /// No slash inside: matches a file or directory of that name at any depth.
    pub floating: bool,
}

/// Directories a path pattern is anchored to.
#[derive(Debug, Clone, Copy)]
pub struct Anchors<'a> {
    /// The project root (`/path`).
    pub project: &'a Path,
    /// The home directory (`~/path`).
    pub home: &'a Path,
    /// The session's working directory (`path`).
    pub cwd: &'a Path,
}

impl PathPattern {
    fn parse(content: &str) -> Self {
        let (anchor, rest) = if let Some(rest) = content.strip_prefix("//") {
            (Anchor::Root, rest)
        } else if let Some(rest) = content.strip_prefix("~/") {
            (Anchor::Home, rest)
        } else if content == "~" {
            (Anchor::Home, "")
        } else if let Some(rest) = content.strip_prefix('/') {
            (Anchor::Project, rest)
        } else {
            (Anchor::Cwd, content.strip_prefix("./").unwrap_or(content))
        };
        let trimmed = rest.trim_end_matches('/');
        // `name` floats to any depth (gitignore); `./name` stays in the working directory.
        let floating =
            anchor == Anchor::Cwd && !content.starts_with("./") && !trimmed.contains('/');
        let parts =
            trimmed.split('/').filter(|p| !p.is_empty() && *p != ".").map(str::to_owned).collect();
        Self { anchor, parts, floating }
    }

    /// True when `path` (absolute, normalised) or one of its ancestors matches.
    pub fn matches(&self, path: &Path, anchors: Anchors<'_>) -> bool {
        let base: PathBuf = match self.anchor {
            Anchor::Root => PathBuf::from("/"),
            Anchor::Home => anchors.home.to_path_buf(),
            Anchor::Project => anchors.project.to_path_buf(),
            Anchor::Cwd => anchors.cwd.to_path_buf(),
        };
        let base = paths::normalize(&base);
        let Ok(rel) = path.strip_prefix(&base) else { return false };
        let comps: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        let pattern: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        if pattern.is_empty() {
            return true;
        }
        if self.floating {
            return comps.iter().any(|c| glob::component(pattern[0], c));
        }
        (1..=comps.len()).any(|k| glob::components(&pattern, &comps[..k]))
    }
}

/// What a rule's specifier says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleKind {
    /// `Tool`: every use of the tool.
    AnyUse,
    /// `Bash(…)`.
    Command(CommandPattern),
    /// `Read(…)`, `Edit(…)`, `Write(…)` and the other file tools.
    Path(PathPattern),
    /// `WebFetch(domain:host)`; `*.host` matches subdomains.
    Domain(String),
    /// `mcp__server` or `mcp__server__*`: every tool of one MCP server.
    McpServer(String),
    /// Any other specifier: matches a call whose input has a string field equal to it.
    Other(String),
}

/// One parsed permission rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    /// The tool name it names.
    pub tool: String,
    /// Its specifier.
    pub kind: RuleKind,
}

/// A rule that could not be parsed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {rule:?}: {why}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong.
    pub why: String,
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let err = |why: &str| RuleError { rule: text.to_owned(), why: why.to_owned() };
        let trimmed = text.trim();
        let (tool, content) = match trimmed.find('(') {
            Some(open) => {
                let inner = trimmed[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing the closing `)`"))?;
                (&trimmed[..open], Some(inner))
            }
            None => (trimmed, None),
        };
        if tool.is_empty()
            || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(err("the tool name must be ASCII letters, digits, `_` or `-`"));
        }
        let content = content.map(str::trim).filter(|c| !c.is_empty() && *c != "*");
        let kind = match (tool, content) {
            (_, None) if tool.starts_with("mcp__") => mcp_kind(tool),
            (_, None) => RuleKind::AnyUse,
            ("Bash", Some(c)) => RuleKind::Command(CommandPattern::parse(c)),
            ("WebFetch", Some(c)) => match c.strip_prefix("domain:") {
                Some(host) => RuleKind::Domain(host.trim().to_ascii_lowercase()),
                None => RuleKind::Other(c.to_owned()),
            },
            (t, Some(c)) if EDIT_TOOLS.contains(&t) || READ_TOOLS.contains(&t) => {
                RuleKind::Path(PathPattern::parse(c))
            }
            (_, Some(c)) => RuleKind::Other(c.to_owned()),
        };
        let tool = match &kind {
            RuleKind::McpServer(server) => format!("mcp__{server}"),
            _ => tool.to_owned(),
        };
        Ok(Self { text: trimmed.to_owned(), tool, kind })
    }

    /// True when the tool name is one Claude Code has (or an MCP tool).
    pub fn names_known_tool(&self) -> bool {
        self.tool.starts_with("mcp__") || KNOWN_TOOLS.contains(&self.tool.as_str())
    }

    /// True when this rule is about `tool` at all (before looking at the input).
    pub fn applies_to(&self, tool: &str) -> bool {
        match &self.kind {
            RuleKind::McpServer(server) => tool
                .strip_prefix("mcp__")
                .and_then(|t| t.strip_prefix(server.as_str()))
                .is_some_and(|r| r.starts_with("__")),
            RuleKind::Path(_) if self.tool == "Edit" => EDIT_TOOLS.contains(&tool),
            RuleKind::Path(_) if self.tool == "Read" => READ_TOOLS.contains(&tool),
            _ => self.tool == tool,
        }
    }
}

fn mcp_kind(tool: &str) -> RuleKind {
    let rest = tool.trim_start_matches("mcp__");
    match rest.split_once("__") {
        None => RuleKind::McpServer(rest.to_owned()),
        Some((server, "*")) => RuleKind::McpServer(server.to_owned()),
        Some(_) => RuleKind::AnyUse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> RuleKind {
        Rule::parse(text).unwrap().kind
    }

    #[test]
    fn parses_claude_code_forms() {
        assert_eq!(kind("Read"), RuleKind::AnyUse);
        assert_eq!(
            kind("Bash(git status)"),
            RuleKind::Command(CommandPattern::Exact("git status".into()))
        );
        assert_eq!(
            kind("Bash(npm run test:*)"),
            RuleKind::Command(CommandPattern::Prefix("npm run test".into()))
        );
        assert_eq!(kind("Bash(npm *)"), RuleKind::Command(CommandPattern::Prefix("npm".into())));
        assert_eq!(
            kind("Bash(git * main)"),
            RuleKind::Command(CommandPattern::Wildcard("git * main".into()))
        );
        assert_eq!(kind("Bash(*)"), RuleKind::AnyUse);
        assert_eq!(kind("WebFetch(domain:Docs.RS)"), RuleKind::Domain("docs.rs".into()));
        assert_eq!(kind("mcp__github"), RuleKind::McpServer("github".into()));
        assert_eq!(kind("mcp__github__*"), RuleKind::McpServer("github".into()));
        assert_eq!(kind("mcp__github__create_issue"), RuleKind::AnyUse);
        let RuleKind::Path(p) = kind("Edit(//etc/**)") else { panic!() };
        assert_eq!((p.anchor, p.parts), (Anchor::Root, vec!["etc".to_owned(), "**".to_owned()]));
        let RuleKind::Path(p) = kind("Edit(.claude)") else { panic!() };
        assert!(p.floating);
    }

    #[test]
    fn malformed_rules_are_errors() {
        assert!(Rule::parse("Bash(git status").is_err());
        assert!(Rule::parse("").is_err());
        assert!(Rule::parse("Ba sh").is_err());
    }

    #[test]
    fn prefix_respects_word_boundaries() {
        let p = CommandPattern::parse("npm:*");
        assert!(p.matches("npm") && p.matches("npm test"));
        assert!(!p.matches("npmx test"));
    }

    #[test]
    fn quoting_in_rules_is_normalised() {
        assert_eq!(CommandPattern::parse("echo  'a b'"), CommandPattern::Exact("echo a b".into()));
    }

    #[test]
    fn path_patterns_anchor_and_cover_directories() {
        let anchors = Anchors {
            project: Path::new("/repo"),
            home: Path::new("/home/u"),
            cwd: Path::new("/repo/wt"),
        };
        let p = |s: &str| PathPattern::parse(s);
        assert!(p(".claude").matches(Path::new("/repo/wt/.claude/settings.json"), anchors));
        assert!(p("/src/**/*.ts").matches(Path::new("/repo/src/a/b.ts"), anchors));
        assert!(!p("/src/**/*.ts").matches(Path::new("/repo/wt/src/a/b.ts"), anchors));
        assert!(p("//etc/*").matches(Path::new("/etc/passwd"), anchors));
        assert!(p("~/.ssh").matches(Path::new("/home/u/.ssh/id_rsa"), anchors));
        assert!(p("*.env").matches(Path::new("/repo/wt/config/prod.env"), anchors));
        assert!(!p("*.env").matches(Path::new("/elsewhere/prod.env"), anchors));
    }
}
