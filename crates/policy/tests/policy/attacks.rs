//! Issue 25's corpora: attack lines are never allowed unasked (readonly, edit, narrow rules),
//! what `Bash(*)` still allows is a class the kernel sandbox stops, and ordinary developer
//! lines are rarely refused, each ask saying why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nucleic_policy::{Behaviour, Mode, Policy};
use serde::Deserialize;
use serde_json::Value;

use crate::support::{DATA, HOME, PROJECT, WORKTREE, ctx, permissive, policy, resolver, tool};

#[derive(Deserialize)]
struct Attack {
    class: String,
    tool: String,
    input: Value,
    /// Set when `Bash(*)` still allows the line: what stops it (the kernel confinement).
    #[serde(default)]
    sandbox: Option<String>,
    /// A wide rule of the line's own program (`Bash(npm:*)`) it is also tried under.
    #[serde(default)]
    rule: Option<String>,
}

#[derive(Deserialize)]
struct Ordinary {
    tool: String,
    input: Value,
}

fn lines<T: for<'de> Deserialize<'de>>(text: &str, file: &str) -> Vec<T> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{file} line {}: {e}", i + 1))
        })
        .collect()
}

fn attacks() -> Vec<Attack> {
    lines(include_str!("../attacks.jsonl"), "attacks.jsonl")
}

fn shown(input: &Value) -> String {
    input.get("command").and_then(Value::as_str).map_or_else(|| input.to_string(), str::to_owned)
}

/// The narrow rules of the issue, each alone.
const NARROW: [&str; 6] =
    ["Bash(cat:*)", "Bash(git:*)", "Bash(find:*)", "Bash(rm:*)", "Bash(python3:*)", "Bash(echo:*)"];

#[test]
fn attack_lines_are_never_allowed_unasked() {
    let attacks = attacks();
    assert!(attacks.len() >= 300, "only {} attack lines", attacks.len());
    let mut settings: Vec<(String, Policy, Mode)> = vec![
        ("readonly, no rules".into(), Policy::new(), Mode::Readonly),
        ("edit, no rules".into(), Policy::new(), Mode::Edit),
        ("full, no rules".into(), Policy::new(), Mode::Full),
    ];
    for rule in NARROW {
        settings.push((
            format!("readonly + {rule}"),
            policy(&[(Behaviour::Allow, rule)]),
            Mode::Readonly,
        ));
        settings.push((format!("edit + {rule}"), policy(&[(Behaviour::Allow, rule)]), Mode::Edit));
        settings.push((format!("full + {rule}"), policy(&[(Behaviour::Allow, rule)]), Mode::Full));
    }
    let mut allowed = Vec::new();
    let mut by_the_rule = Vec::new();
    let mut table = String::from(
        "| setting | attack lines | allowed (sandbox leftovers the rule names) | asked | denied |\n|---|---|---|---|---|\n",
    );
    for (name, policy, mode) in &settings {
        let mut counts: BTreeMap<Behaviour, usize> = BTreeMap::new();
        for attack in &attacks {
            let d = tool(policy, *mode, &attack.tool, attack.input.clone());
            *counts.entry(d.behaviour).or_default() += 1;
            let line = format!("{name}: [{}] {:?} by {}", attack.class, shown(&attack.input), d.by);
            match (d.behaviour, &attack.sandbox) {
                // A leftover the rule itself names (`cat ~/.netrc` under `Bash(cat:*)`): the
                // person allowed that program; the sandbox stops what it does.
                (Behaviour::Allow, Some(_))
                    if NARROW.iter().any(|r| d.by == format!("policy:{r}")) =>
                {
                    by_the_rule.push(line)
                }
                (Behaviour::Allow, _) => allowed.push(line),
                _ => {}
            }
        }
        let n = |b| counts.get(&b).copied().unwrap_or(0);
        table.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            attacks.len(),
            n(Behaviour::Allow),
            n(Behaviour::Ask),
            n(Behaviour::Deny)
        ));
    }
    // Lines that break an invariant through a program its own wide rule allows.
    let mut own_rule = 0;
    for attack in &attacks {
        let Some(rule) = &attack.rule else { continue };
        let p = policy(&[(Behaviour::Allow, rule.as_str())]);
        for mode in [Mode::Readonly, Mode::Edit, Mode::Full] {
            own_rule += 1;
            let d = tool(&p, mode, &attack.tool, attack.input.clone());
            if d.behaviour == Behaviour::Allow {
                allowed.push(format!(
                    "{} + {rule}: [{}] {:?} by {}",
                    mode.as_str(),
                    attack.class,
                    shown(&attack.input),
                    d.by
                ));
            }
        }
    }
    table.push_str(&format!(
        "| readonly, edit and full + each line's own program rule | {own_rule} decisions | 0 expected | | |\n"
    ));
    println!(
        "{table}sandbox leftovers allowed by the narrow rule naming their program ({}):\n{}",
        by_the_rule.len(),
        by_the_rule.join("\n")
    );
    assert!(
        allowed.is_empty(),
        "{} attack lines allowed unasked:\n{}",
        allowed.len(),
        allowed.join("\n")
    );
}

#[test]
fn under_bash_star_only_what_the_sandbox_stops_is_allowed() {
    let attacks = attacks();
    let policy = permissive();
    let mut by_class: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut stale = Vec::new();
    for attack in &attacks {
        let d = tool(&policy, Mode::Edit, &attack.tool, attack.input.clone());
        let line = shown(&attack.input);
        match (d.behaviour, &attack.sandbox) {
            (Behaviour::Allow, Some(sandbox)) => by_class
                .entry(sandbox.clone())
                .or_default()
                .push(format!("[{}] {line:?}", attack.class)),
            (Behaviour::Allow, None) => {
                unexplained.push(format!("[{}] {line:?} by {}", attack.class, d.by))
            }
            (_, Some(_)) => stale.push(line),
            (_, None) => {}
        }
    }
    let total: usize = by_class.values().map(Vec::len).sum();
    println!(
        "Bash(*): {total} of {} attack lines allowed; each is stopped by the sandbox:",
        attacks.len()
    );
    for (class, lines) in &by_class {
        println!("  {class} ({}):\n    {}", lines.len(), lines.join("\n    "));
    }
    assert!(
        unexplained.is_empty(),
        "allowed under Bash(*) with no sandbox class:\n{}",
        unexplained.join("\n")
    );
    assert!(
        stale.is_empty(),
        "marked as a sandbox leftover but no longer allowed:\n{}",
        stale.join("\n")
    );
}

#[test]
fn ordinary_lines_are_rarely_denied_and_every_ask_says_why() {
    let ordinary: Vec<Ordinary> = lines(include_str!("../ordinary.jsonl"), "ordinary.jsonl");
    assert!(ordinary.len() >= 60, "only {} ordinary lines", ordinary.len());
    let p = Policy::new();
    let mut denied = Vec::new();
    let mut unexplained = Vec::new();
    let mut counts: BTreeMap<Behaviour, usize> = BTreeMap::new();
    let mut asks = Vec::new();
    for case in &ordinary {
        let d = tool(&p, Mode::Edit, &case.tool, case.input.clone());
        *counts.entry(d.behaviour).or_default() += 1;
        let line = shown(&case.input);
        match d.behaviour {
            Behaviour::Deny => denied.push(format!("{line:?}: {} ({})", d.reason, d.by)),
            Behaviour::Ask => {
                // A reason names what it could not pin down or allow, in backticks or quotes.
                if !(d.reason.contains('`') || d.reason.contains('"')) {
                    unexplained.push(format!("{line:?}: {}", d.reason));
                }
                asks.push(format!("{line:?} → {} — {}", d.by, d.reason));
            }
            Behaviour::Allow => {}
        }
    }
    let n = |b| counts.get(&b).copied().unwrap_or(0);
    println!(
        "ordinary lines in edit without rules: {} — allowed {}, asked {}, denied {}\nasks:\n{}\ndenied:\n{}",
        ordinary.len(),
        n(Behaviour::Allow),
        n(Behaviour::Ask),
        n(Behaviour::Deny),
        asks.join("\n"),
        denied.join("\n")
    );
    assert!(denied.len() <= 2, "{} ordinary lines denied:\n{}", denied.len(), denied.join("\n"));
    assert!(unexplained.is_empty(), "asks without a specific reason:\n{}", unexplained.join("\n"));

    // With the rules a project would have, what is still asked is what the parser or an
    // invariant could not pin down, said in the reason.
    let rules = policy(
        &[
            "Bash(git add:*)",
            "Bash(git commit:*)",
            "Bash(git tag:*)",
            "Bash(cargo:*)",
            "Bash(npm test)",
            "Bash(npm run:*)",
            "Bash(make:*)",
            "Bash(pytest:*)",
            "Bash(python3:*)",
            "Bash(go test:*)",
            "Bash(awk:*)",
            "Bash(sed:*)",
            "Bash(mkdir:*)",
            "Bash(touch:*)",
            "Bash(npx tsc:*)",
        ]
        .map(|r| (Behaviour::Allow, r)),
    );
    let mut still = Vec::new();
    let mut refused = Vec::new();
    for case in &ordinary {
        let d = tool(&rules, Mode::Edit, &case.tool, case.input.clone());
        match d.behaviour {
            Behaviour::Allow => {}
            Behaviour::Ask => {
                still.push(format!("{:?} → {} — {}", shown(&case.input), d.by, d.reason))
            }
            Behaviour::Deny => {
                refused.push(format!("{:?} → {} — {}", shown(&case.input), d.by, d.reason))
            }
        }
    }
    println!(
        "with project rules: {} of {} asked, {} denied\n{}\n{}",
        still.len(),
        ordinary.len(),
        refused.len(),
        still.join("\n"),
        refused.join("\n")
    );
    assert!(refused.len() <= 2, "{}", refused.join("\n"));
    assert!(still.len() <= 6, "too many ordinary lines still asked:\n{}", still.join("\n"));
}

#[test]
fn codex_patches_to_policy_files_are_denied_whatever_the_rules() {
    let r = resolver();
    let c = ctx(Mode::Full, &r);
    for path in [
        format!("{WORKTREE}/.claude/settings.json"),
        format!("{WORKTREE}/.claude/settings.local.json"),
        format!("{HOME}/.claude/settings.json"),
        "/etc/claude-code/managed-settings.json".to_owned(),
    ] {
        let d = permissive().evaluate_codex_file_change(&[PathBuf::from(&path)], &c);
        assert_eq!(
            (d.behaviour, d.by.as_str()),
            (Behaviour::Deny, "invariant:policy-files"),
            "{path}"
        );
    }
}

#[test]
fn policy_files_are_denied_through_every_file_tool_whatever_the_rules() {
    let everything = policy(&[
        (Behaviour::Allow, "Bash(*)"),
        (Behaviour::Allow, "Write"),
        (Behaviour::Allow, "Edit"),
        (Behaviour::Allow, "MultiEdit"),
        (Behaviour::Allow, "NotebookEdit"),
        (Behaviour::Allow, "apply_patch"),
    ]);
    let files = [
        format!("{WORKTREE}/.claude/settings.json"),
        format!("{WORKTREE}/.claude/settings.local.json"),
        format!("{PROJECT}/.claude/settings.json"),
        format!("{HOME}/.claude/settings.json"),
        format!("{HOME}/.claude/settings.local.json"),
        "/etc/claude-code/managed-settings.json".to_owned(),
        format!("{WORKTREE}/.nucleic/rules.json"),
        format!("{DATA}/rules.json"),
    ];
    for mode in [Mode::Edit, Mode::Full] {
        for file in &files {
            let inputs = [
                ("Write", serde_json::json!({ "file_path": file, "content": "{}" })),
                (
                    "Edit",
                    serde_json::json!({ "file_path": file, "old_string": "deny", "new_string": "allow" }),
                ),
                ("MultiEdit", serde_json::json!({ "file_path": file, "edits": [] })),
                ("NotebookEdit", serde_json::json!({ "notebook_path": file, "new_source": "x" })),
                (
                    "apply_patch",
                    serde_json::json!({ "changes": [{ "path": file, "kind": { "type": "add" } }] }),
                ),
                ("Bash", serde_json::json!({ "command": format!("echo '{{}}' > {file}") })),
                ("Bash", serde_json::json!({ "command": format!("cp evil.json {file}") })),
                ("Bash", serde_json::json!({ "command": format!("sed -i s/deny/allow/ {file}") })),
            ];
            for (name, input) in inputs {
                let d = tool(&everything, mode, name, input.clone());
                // The data dir's rules are also inside a protected directory: denied as such.
                let by_name = d.by == "invariant:policy-files"
                    || (file.starts_with(DATA) && d.by == "invariant:protected-path");
                assert!(
                    d.behaviour == Behaviour::Deny && by_name,
                    "{mode:?} {name} {input}: {d:?}"
                );
            }
        }
    }
}
