//! `Policy::evaluate`: one decision for one tool call — invariants, rules, then the mode.

use serde::Serialize;
use serde_json::Value;

use crate::command::{self, Analysis, Invocation};
use crate::context::Context;
use crate::invariants::{self, Violation};
use crate::mode::{self, Mode};
use crate::policy::Policy;
use crate::risk::{self, Risk};
use crate::rule::{Anchors, Behaviour, EDIT_TOOLS, READ_TOOLS, RuleKind};
use crate::settings::ScopedRule;
use crate::shell::RedirectKind;

/// The policy's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// allow, ask or deny.
    pub behaviour: Behaviour,
    /// What decided: `policy:<rule>`, `invariant:<name>`, `mode:<mode>`, `builtin:read-only`,
    /// `parser:<why>`.
    pub by: String,
    /// Why, in words the model (on deny) and the person (on ask) see.
    pub reason: String,
    /// How much harm the call could do.
    pub risk: Risk,
    /// What makes it risky.
    pub risk_reasons: Vec<String>,
}

/// What a tool call touches.
enum Target {
    Shell(Analysis),
    File { path: String, write: bool },
    Url(String),
    Search,
    Mcp,
    Internal,
    Interaction,
    Unknown,
    Malformed(String),
}

/// Tools that only manage the agent's own state.
const INTERNAL: &[&str] =
    &["Task", "Agent", "TodoWrite", "BashOutput", "KillShell", "KillBash", "SlashCommand", "Skill"];
/// Tools that need a person by nature.
const INTERACTION: &[&str] = &["AskUserQuestion", "ExitPlanMode"];

fn target(tool: &str, input: &Value) -> Target {
    let field = |names: &[&str]| {
        names.iter().find_map(|n| input.get(n).and_then(Value::as_str)).map(str::to_owned)
    };
    match tool {
        "Bash" => match field(&["command"]) {
            Some(line) => Target::Shell(command::analyze(&line)),
            None => Target::Malformed("Bash input has no `command` string".into()),
        },
        t if EDIT_TOOLS.contains(&t) => match field(&["file_path", "notebook_path", "path"]) {
            Some(path) => Target::File { path, write: true },
            None => Target::Malformed(format!("{t} input has no `file_path`")),
        },
        "Glob" => {
            let path = glob_base(field(&["pattern"]).as_deref())
                .or_else(|| field(&["path"]))
                .unwrap_or_else(|| ".".into());
            Target::File { path, write: false }
        }
        t if READ_TOOLS.contains(&t) => Target::File {
            path: field(&["file_path", "notebook_path", "path"]).unwrap_or_else(|| ".".into()),
            write: false,
        },
        "WebFetch" => match field(&["url"]) {
            Some(url) => Target::Url(url),
            None => Target::Malformed("WebFetch input has no `url`".into()),
        },
        "WebSearch" => Target::Search,
        t if t.starts_with("mcp__") => Target::Mcp,
        t if INTERNAL.contains(&t) => Target::Internal,
        t if INTERACTION.contains(&t) => Target::Interaction,
        _ => Target::Unknown,
    }
}

/// The directory an absolute, `~` or `..` Glob pattern starts from: its literal prefix
/// (`/etc/**` → `/etc`); `None` for a pattern relative to the Glob's `path`.
fn glob_base(pattern: Option<&str>) -> Option<String> {
    let pattern =
        pattern.filter(|p| p.starts_with('/') || p.starts_with('~') || p.starts_with(".."))?;
    let literal = &pattern[..pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len())];
    Some(match literal.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => literal[..i].to_owned(),
        None => literal.to_owned(),
    })
}

impl Policy {
    /// Decides one tool call: Claude Code's tool name and JSON input.
    pub fn evaluate(&self, tool: &str, input: &Value, ctx: &Context<'_>) -> Decision {
        // Codex's patch tool writes files: judged path by path, as its own approvals are.
        if tool == crate::codex::PATCH_TOOL && input.get("changes").is_some() {
            return self.evaluate_codex_patch(input, ctx);
        }
        let target = target(tool, input);
        let violation = violation(tool, input, &target, ctx);
        let (mut behaviour, mut by, mut reason) =
            self.decide(tool, input, &target, violation.as_ref(), ctx);
        let assessment = risk::classify(tool, input, analysis_of(&target), violation.as_ref(), ctx);
        if assessment.risk == Risk::Critical && behaviour == Behaviour::Allow {
            // Critical calls always reach a person, whatever allowed them.
            behaviour = Behaviour::Ask;
            by = "risk:critical".into();
            reason = format!("Critical risk: {}.", assessment.reasons.join(", "));
        }
        Decision { behaviour, by, reason, risk: assessment.risk, risk_reasons: assessment.reasons }
    }

    fn decide(
        &self,
        tool: &str,
        input: &Value,
        target: &Target,
        violation: Option<&Violation>,
        ctx: &Context<'_>,
    ) -> (Behaviour, String, String) {
        let mode = ctx.mode;
        if let Some(v) = violation.filter(|v| v.behaviour == Behaviour::Deny) {
            return (Behaviour::Deny, format!("invariant:{}", v.name), v.message.clone());
        }
        if let Target::Malformed(why) = target {
            return (Behaviour::Deny, "parser:malformed-input".into(), why.clone());
        }
        let matcher = Matcher { policy: self, tool, input, target, ctx };
        if let Some(rule) = matcher.first(Behaviour::Deny) {
            return (
                Behaviour::Deny,
                by_rule(rule),
                format!("Denied by the rule {} ({}).", rule.rule.text, rule.scope),
            );
        }
        if let Some(why) = mode_refuses(mode, target, &matcher) {
            return (Behaviour::Deny, format!("mode:{}", mode.as_str()), why);
        }
        if let Some(v) = violation {
            return (Behaviour::Ask, format!("invariant:{}", v.name), v.message.clone());
        }
        if let Target::Shell(analysis) = target
            && let Some(why) = analysis.opaque.first()
        {
            return (
                Behaviour::Ask,
                "parser:not-understood".into(),
                format!("The command is not fully understood ({why}); a person decides."),
            );
        }
        if let Some(rule) = matcher.first(Behaviour::Ask) {
            return (
                Behaviour::Ask,
                by_rule(rule),
                format!("The rule {} ({}) asks.", rule.rule.text, rule.scope),
            );
        }
        if let Some(by) = matcher.allowed() {
            return (Behaviour::Allow, by, "Allowed.".into());
        }
        let reason = match target {
            Target::Interaction => "This tool needs a person's answer.".to_owned(),
            Target::Shell(analysis) => not_allowed_reason(analysis, &matcher),
            _ => format!("No rule allows {tool} here."),
        };
        (Behaviour::Ask, format!("mode:{}", mode.as_str()), reason)
    }
}

/// Names the first program no rule allows.
fn not_allowed_reason(analysis: &Analysis, matcher: &Matcher<'_>) -> String {
    let first = analysis.invocations.iter().find(|i| {
        !builtin_allowed(i, matcher.ctx)
            && !matcher.policy.with(Behaviour::Allow).any(|r| matcher.command_rule(r, i, false))
    });
    match first {
        Some(i) if i.program.is_empty() => {
            format!("No rule allows the assignment `{}`.", i.written)
        }
        Some(i) => {
            let shown: String = i.written.chars().take(80).collect();
            // A substitution's text is not in `written`: say a word was left open.
            let open = if i.program.iter().any(|w| w.dynamic) {
                " (a word of it is only known at run time)"
            } else {
                ""
            };
            format!("No rule allows `{shown}`{open}; a person decides.")
        }
        None => "No rule allows this command.".to_owned(),
    }
}

fn by_rule(rule: &ScopedRule) -> String {
    format!("policy:{}", rule.rule.text)
}

fn analysis_of(target: &Target) -> Option<&Analysis> {
    match target {
        Target::Shell(analysis) => Some(analysis),
        _ => None,
    }
}

fn violation(tool: &str, input: &Value, target: &Target, ctx: &Context<'_>) -> Option<Violation> {
    match target {
        Target::Shell(analysis) => invariants::check_command(analysis, ctx),
        Target::File { path, write } => invariants::check_file(path, *write, ctx).or_else(|| {
            // Glob's pattern can name a directory by itself.
            let pattern =
                input.get("pattern").and_then(Value::as_str).filter(|_| tool == "Glob")?;
            invariants::check_file(pattern, false, ctx)
        }),
        _ => None,
    }
}

/// What the mode forbids outright (the seed's matrix), whatever allow rules say.
fn mode_refuses(mode: Mode, target: &Target, matcher: &Matcher<'_>) -> Option<String> {
    match (mode, target) {
        (Mode::Readonly, Target::File { write: true, .. }) => Some("Read-only mode: no file is written.".into()),
        (Mode::Readonly, Target::Shell(analysis)) => {
            let writes = analysis.invocations.iter().any(|i| i.redirects.iter().any(|r| r.kind == RedirectKind::Write && !r.target.text.starts_with("/dev/")));
            let unknown = !analysis.opaque.is_empty() || analysis.invocations.iter().any(|i| !read_only_program(i));
            (writes || unknown).then(|| "Read-only mode: only commands known to read are run.".into())
        }
        (Mode::Readonly, Target::Url(_) | Target::Search | Target::Mcp | Target::Unknown) => {
            Some("Read-only mode: no network, MCP or unknown tools.".into())
        }
        (Mode::Edit, Target::Shell(analysis)) => analysis.invocations.iter().find_map(|i| {
            let restricted = mode::is_dependency_install(i) || mode::is_push(i);
            (restricted && !matcher.explicitly_named(i))
                .then(|| format!("Edit mode: `{}` (installing dependencies or pushing) needs full mode or a rule naming it.", i.name()))
        }),
        _ => None,
    }
}

/// A read-only program with nothing dynamic (or a shell whose script is analysed on its own,
/// or a command of redirections only). Its output redirections are edits, judged on their own.
fn read_only_program(invocation: &Invocation) -> bool {
    invocation.runs_script
        || (invocation.program.is_empty() && invocation.assignments.is_empty())
        || (mode::is_read_only(invocation) && !invocation.dynamic)
}

/// Allowed in every mode without a rule: a read-only program, fully understood, with no
/// assignment or wrapper in front, whose path arguments all stay in the worktree or the
/// project (`cat ~/.netrc`, `ls /etc`, `cd .. && cat x` need a rule). Data arguments (a
/// pattern, text to print) are not paths.
fn builtin_allowed(invocation: &Invocation, ctx: &Context<'_>) -> bool {
    if !read_only_program(invocation) {
        return false;
    }
    if invocation.runs_script || invocation.program.is_empty() {
        return true;
    }
    if !invocation.assignments.is_empty() || !invocation.wrappers.is_empty() {
        return false;
    }
    let data = crate::data::data_positions(invocation);
    invocation.program.iter().enumerate().skip(1).all(|(i, word)| {
        if data.get(i).copied().unwrap_or(false) && !word.glob {
            return true;
        }
        let arg = word.text.as_str();
        let value = match arg.strip_prefix('-') {
            Some(option) => {
                option.split_once('=').map_or(option.get(1..).unwrap_or(""), |(_, v)| v)
            }
            None => arg,
        };
        !(value.contains('/') || value.starts_with('~') || value.starts_with(".."))
            || reads_inside(value, ctx)
    })
}

/// True when a path read by a tool or a command is in the worktree or the project.
fn reads_inside(text: &str, ctx: &Context<'_>) -> bool {
    let resolved = ctx.resolve_from(text, &ctx.cwd);
    [&ctx.worktree, &ctx.project_root]
        .iter()
        .any(|root| crate::paths::is_within(&resolved, &ctx.resolver.resolve(root)))
}

struct Matcher<'a> {
    policy: &'a Policy,
    tool: &'a str,
    input: &'a Value,
    target: &'a Target,
    ctx: &'a Context<'a>,
}

impl Matcher<'_> {
    fn anchors(&self) -> Anchors<'_> {
        Anchors { project: &self.ctx.project_root, home: &self.ctx.home, cwd: &self.ctx.cwd }
    }

    /// The first rule with `behaviour` that matches the call (any part of a command line).
    fn first(&self, behaviour: Behaviour) -> Option<&ScopedRule> {
        self.policy.with(behaviour).find(|r| match self.target {
            Target::Shell(analysis) => {
                analysis.invocations.iter().any(|i| self.command_rule(r, i, true))
                    || self
                        .redirect_edits(analysis)
                        .any(|path| self.path_rule(r, "Edit", &path, true))
            }
            _ => self.single(r, true),
        })
    }

    /// `Some(by)` when every part of the call is allowed by a rule or is a known read.
    fn allowed(&self) -> Option<String> {
        let mut by: Vec<String> = Vec::new();
        let mut note = |s: String| {
            if !by.contains(&s) {
                by.push(s);
            }
        };
        match self.target {
            Target::Shell(analysis) => {
                for invocation in &analysis.invocations {
                    if let Some(rule) = self
                        .policy
                        .with(Behaviour::Allow)
                        .find(|r| self.command_rule(r, invocation, false))
                    {
                        note(by_rule(rule));
                    } else if builtin_allowed(invocation, self.ctx) {
                        note("builtin:read-only".into());
                    } else {
                        return None;
                    }
                }
                // Output redirections are edits: allowed in the worktree outside read-only mode
                // (invariants already refused any outside it).
                if self.redirect_edits(analysis).next().is_some() && self.ctx.mode != Mode::Readonly
                {
                    note("mode:edit".into());
                }
            }
            Target::File { path, write: false } => {
                match self.policy.with(Behaviour::Allow).find(|r| self.single(r, false)) {
                    Some(rule) => note(by_rule(rule)),
                    None if reads_inside(path, self.ctx) => note("builtin:read".into()),
                    None => return None,
                }
            }
            Target::File { write: true, .. } => {
                match self.policy.with(Behaviour::Allow).find(|r| self.single(r, false)) {
                    Some(rule) => note(by_rule(rule)),
                    None if self.ctx.mode != Mode::Readonly => {
                        note(format!("mode:{}", self.ctx.mode.as_str()))
                    }
                    None => return None,
                }
            }
            Target::Internal => note("builtin:internal".into()),
            Target::Interaction | Target::Malformed(_) => return None,
            Target::Url(_) | Target::Search | Target::Mcp | Target::Unknown => {
                note(by_rule(self.policy.with(Behaviour::Allow).find(|r| self.single(r, false))?));
            }
        }
        (!by.is_empty()).then(|| by.join(" + "))
    }

    /// True when an allow or ask rule other than a bare `Bash` names this program.
    fn explicitly_named(&self, invocation: &Invocation) -> bool {
        self.policy.rules.iter().any(|r| {
            r.behaviour != Behaviour::Deny
                && matches!(r.rule.kind, RuleKind::Command(_))
                && self.command_rule(r, invocation, false)
        })
    }

    /// Write redirections of a command line, as absolute paths.
    fn redirect_edits<'s>(&'s self, analysis: &'s Analysis) -> impl Iterator<Item = String> + 's {
        analysis
            .invocations
            .iter()
            .flat_map(|i| i.redirects.iter())
            .filter(|r| r.kind == RedirectKind::Write && !r.target.text.starts_with("/dev/"))
            .map(move |r| {
                self.ctx.resolve_from(&r.target.text, &self.ctx.cwd).to_string_lossy().into_owned()
            })
    }

    /// A `Bash` rule against one program. `wide` (deny/ask) also tries the innermost program
    /// with every wrapper removed; allow only tries the line as written or without harmless
    /// wrappers.
    fn command_rule(&self, rule: &ScopedRule, invocation: &Invocation, wide: bool) -> bool {
        if rule.rule.tool != "Bash" {
            return false;
        }
        match &rule.rule.kind {
            RuleKind::AnyUse => true,
            RuleKind::Command(pattern) => {
                let program = invocation
                    .program
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                pattern.matches(&invocation.written)
                    || invocation.plain.as_deref().is_some_and(|p| pattern.matches(p))
                    || (wide && pattern.matches(&program))
            }
            _ => false,
        }
    }

    fn path_rule(&self, rule: &ScopedRule, tool: &str, path: &str, wide: bool) -> bool {
        if !rule.rule.applies_to(tool) {
            return false;
        }
        match &rule.rule.kind {
            RuleKind::AnyUse => true,
            RuleKind::Path(pattern) => {
                let lexical = crate::paths::absolute(path, &self.ctx.cwd, &self.ctx.home);
                let resolved = self.ctx.resolver.resolve(&lexical);
                pattern.matches(&resolved, self.anchors())
                    || (wide && pattern.matches(&lexical, self.anchors()))
            }
            _ => false,
        }
    }

    /// A rule against a call that is not a command line.
    fn single(&self, rule: &ScopedRule, wide: bool) -> bool {
        match self.target {
            Target::File { path, .. } => self.path_rule(rule, self.tool, path, wide),
            _ if !rule.rule.applies_to(self.tool) => false,
            Target::Url(url) => match &rule.rule.kind {
                RuleKind::AnyUse => true,
                RuleKind::Domain(domain) => {
                    host_of(url).is_some_and(|h| crate::glob::wildcard(domain, &h))
                }
                _ => false,
            },
            _ => match &rule.rule.kind {
                RuleKind::AnyUse | RuleKind::McpServer(_) => true,
                RuleKind::Other(spec) => any_string_equals(self.input, spec),
                _ => false,
            },
        }
    }
}

/// The lower-cased host of a URL (`https://user@Docs.rs:443/x` → `docs.rs`).
pub(crate) fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn any_string_equals(input: &Value, spec: &str) -> bool {
    match input {
        Value::String(s) => s == spec,
        Value::Object(map) => map.values().any(|v| any_string_equals(v, spec)),
        Value::Array(list) => list.iter().any(|v| any_string_equals(v, spec)),
        _ => false,
    }
}
