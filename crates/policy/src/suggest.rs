//! Rules to offer when a person answers "always": the narrowest rule that allows the call.

use serde_json::Value;

use crate::command;
use crate::context::Context;
use crate::paths;
use crate::policy::Policy;
use crate::rule::{EDIT_TOOLS, READ_TOOLS};

impl Policy {
    /// Rules that would allow this call next time, narrowest first: one exact `Bash(…)` per
    /// simple command no rule allows yet, `Edit(/path)` / `Read(/path)` anchored at the project
    /// root, `WebFetch(domain:host)`, the MCP tool's name. Empty when nothing may be suggested:
    /// a call an invariant refuses, or a line with parts only known at run time.
    pub fn suggest_rules(&self, tool: &str, input: &Value, ctx: &Context<'_>) -> Vec<String> {
        let decision = self.evaluate(tool, input, ctx);
        if decision.by.starts_with("invariant:") || decision.by.starts_with("parser:") {
            return Vec::new();
        }
        let text = |key: &str| input.get(key).and_then(Value::as_str);
        match tool {
            "Bash" => {
                let Some(line) = text("command") else { return Vec::new() };
                let analysis = command::analyze(line);
                if !analysis.opaque.is_empty() || analysis.invocations.iter().any(|i| i.dynamic) {
                    return Vec::new();
                }
                let mut rules: Vec<String> = Vec::new();
                for invocation in
                    analysis.invocations.iter().filter(|i| !i.program.is_empty() && !i.runs_script)
                {
                    let one = serde_json::json!({ "command": invocation.plain.as_deref().unwrap_or(&invocation.written) });
                    if self.evaluate("Bash", &one, ctx).behaviour == crate::rule::Behaviour::Allow {
                        continue;
                    }
                    let rule = format!(
                        "Bash({})",
                        invocation.plain.as_deref().unwrap_or(&invocation.written)
                    );
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
                rules
            }
            t if EDIT_TOOLS.contains(&t) || READ_TOOLS.contains(&t) => {
                let Some(path) =
                    ["file_path", "notebook_path", "path"].iter().find_map(|k| text(k))
                else {
                    return Vec::new();
                };
                let family = if EDIT_TOOLS.contains(&t) { "Edit" } else { "Read" };
                let absolute = paths::absolute(path, &ctx.cwd, &ctx.home);
                // Relative to the working directory (each session's worktree), else to the
                // project root, else absolute.
                let shown = if let Ok(rel) = absolute.strip_prefix(&ctx.cwd) {
                    format!("./{}", rel.display())
                } else if let Ok(rel) = absolute.strip_prefix(&ctx.project_root) {
                    format!("/{}", rel.display())
                } else {
                    format!("/{}", absolute.display())
                };
                vec![format!("{family}({shown})")]
            }
            "WebFetch" => text("url")
                .and_then(crate::evaluate::host_of)
                .map(|host| vec![format!("WebFetch(domain:{host})")])
                .unwrap_or_default(),
            _ => vec![tool.to_owned()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Behaviour, MapResolver, Mode, Scope};
    use serde_json::json;
    use std::path::PathBuf;

    fn ctx(resolver: &MapResolver) -> Context<'_> {
        Context {
            project_root: PathBuf::from("/repo"),
            worktree: PathBuf::from("/repo/wt"),
            cwd: PathBuf::from("/repo/wt"),
            home: PathBuf::from("/home/u"),
            data_dir: PathBuf::from("/data"),
            extra_write_roots: Vec::new(),
            read_roots: Vec::new(),
            mode: Mode::Edit,
            resolver,
        }
    }

    #[test]
    fn suggestions_allow_the_call_next_time_and_nothing_for_invariants() {
        let r = MapResolver::new();
        let c = ctx(&r);
        let mut p = Policy::new();
        p.add_rule(Scope::Session, Behaviour::Allow, "Bash(git status)").unwrap();
        let input = json!({"command": "git status && make test && ls"});
        let rules = p.suggest_rules("Bash", &input, &c);
        assert_eq!(rules, ["Bash(make test)"]);
        for rule in &rules {
            p.add_rule(Scope::Session, Behaviour::Allow, rule).unwrap();
        }
        assert_eq!(p.evaluate("Bash", &input, &c).behaviour, Behaviour::Allow);
        assert!(p.suggest_rules("Bash", &json!({"command": "sudo make"}), &c).is_empty());
        assert!(p.suggest_rules("Bash", &json!({"command": "make $TARGET"}), &c).is_empty());
        assert_eq!(
            p.suggest_rules("WebFetch", &json!({"url": "https://Docs.rs/x"}), &c),
            ["WebFetch(domain:docs.rs)"]
        );
        assert_eq!(
            p.suggest_rules("Read", &json!({"file_path": "/repo/wt/src/a.rs"}), &c),
            ["Read(./src/a.rs)"]
        );
        assert_eq!(
            p.suggest_rules("Read", &json!({"file_path": "/repo/x.md"}), &c),
            ["Read(/x.md)"]
        );
        assert_eq!(
            p.suggest_rules("Read", &json!({"file_path": "/etc/hosts"}), &c),
            ["Read(//etc/hosts)"]
        );
        let edit = json!({"file_path": "/repo/wt/Makefile", "old_string": "a", "new_string": "b"});
        assert_eq!(p.suggest_rules("Edit", &edit, &c), ["Edit(./Makefile)"]);
        p.add_rule(Scope::Session, Behaviour::Deny, "Edit(./Makefile)").unwrap();
        assert_eq!(p.evaluate("Edit", &edit, &c).behaviour, Behaviour::Deny);
        let nested =
            json!({"file_path": "/repo/wt/sub/Makefile", "old_string": "a", "new_string": "b"});
        assert_eq!(p.evaluate("Edit", &nested, &c).behaviour, Behaviour::Allow);
        assert_eq!(p.suggest_rules("mcp__gh__x", &json!({}), &c), ["mcp__gh__x"]);
    }
}
