//! Codex's command and file-change approvals go through the same policy.

use std::path::PathBuf;

use nucleic_policy::{Behaviour::*, CodexCommand, Mode};

use crate::support::{WORKTREE, ctx, permissive, policy, resolver};

#[test]
fn command_approvals_look_through_bash_lc() {
    let r = resolver();
    let c = ctx(Mode::Edit, &r);
    let p = policy(&[(Allow, "Bash(ls:*)")]);
    let line = |s: &str| CodexCommand::Line(s.to_owned());
    assert_eq!(
        p.evaluate_codex_command(&line("/bin/bash -lc 'ls -la'"), None, &c).behaviour,
        Allow
    );
    assert_eq!(
        p.evaluate_codex_command(&line("/bin/bash -lc 'sudo true'"), None, &c).by,
        "invariant:sudo"
    );
    assert_eq!(p.evaluate_codex_command(&line("/bin/bash -lc 'make'"), None, &c).behaviour, Ask);
    let argv = CodexCommand::Argv(vec!["git".into(), "push".into(), "--force".into()]);
    assert_eq!(permissive().evaluate_codex_command(&argv, None, &c).by, "invariant:force-push");
    let argv = CodexCommand::Argv(vec!["touch".into(), "it's here".into()]);
    assert_eq!(argv.to_line(), r"touch 'it'\''s here'");
    // The request's cwd counts: `rm -rf x` from `/` is outside the worktree.
    let d = permissive().evaluate_codex_command(&line("rm -rf x"), Some(PathBuf::from("/")), &c);
    assert_eq!(d.by, "invariant:rm-outside-worktree");
}

#[test]
fn file_changes_take_the_strictest_path() {
    let r = resolver();
    let c = ctx(Mode::Edit, &r);
    let p = permissive();
    let inside = PathBuf::from(format!("{WORKTREE}/src/a.rs"));
    assert_eq!(p.evaluate_codex_file_change(std::slice::from_ref(&inside), &c).behaviour, Allow);
    let d = p.evaluate_codex_file_change(&[inside, PathBuf::from("/etc/hosts")], &c);
    assert_eq!((d.behaviour, d.by.as_str()), (Deny, "invariant:write-outside-worktree"));
    assert_eq!(p.evaluate_codex_file_change(&[], &c).behaviour, Ask);
}

#[test]
fn patches_are_judged_by_every_path_they_write_moves_included() {
    let r = resolver();
    let c = ctx(Mode::Full, &r);
    // Allowing the tool itself by a rule does not reach past the invariants.
    let p = policy(&[(Allow, "apply_patch"), (Allow, "Write"), (Allow, "Edit")]);
    let patch = |changes: serde_json::Value| serde_json::json!({ "changes": changes });
    let inside = patch(serde_json::json!([{ "path": "src/a.rs", "kind": { "type": "add" } }]));
    assert_eq!(p.evaluate("apply_patch", &inside, &c).behaviour, Allow);
    for changes in [
        // A rename whose destination is the project's settings.
        serde_json::json!([{ "path": "src/a.rs", "kind": { "type": "update", "move_path": ".claude/settings.json" } }]),
        serde_json::json!([{ "path": "notes.md", "kind": { "type": "update", "movePath": "/home/u/.claude/settings.json" } }]),
        // The older map form.
        serde_json::json!({ "src/a.rs": { "type": "update", "move_path": ".claude/settings.local.json" } }),
        serde_json::json!({ ".claude/settings.json": { "type": "add" } }),
        serde_json::json!([{ "path": "/etc/claude-code/managed-settings.json", "kind": { "type": "add" } }]),
    ] {
        let d = p.evaluate("apply_patch", &patch(changes.clone()), &c);
        assert_eq!((d.behaviour, d.by.as_str()), (Deny, "invariant:policy-files"), "{changes}");
    }
    let out = patch(
        serde_json::json!([{ "path": "a", "kind": { "type": "update", "move_path": "../../../../home/u/.bashrc" } }]),
    );
    assert_eq!(p.evaluate("apply_patch", &out, &c).by, "invariant:write-outside-worktree");
}
