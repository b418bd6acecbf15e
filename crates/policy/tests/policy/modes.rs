//! The seed's permission matrix: readonly / edit / full.

use nucleic_policy::{Behaviour::*, Mode};
use serde_json::json;

use crate::support::{WORKTREE, bash, policy, tool};

#[test]
fn readonly_denies_writes_and_unknown_commands_whatever_the_rules() {
    let p = policy(&[(Allow, "Bash(cargo test:*)"), (Allow, "Edit"), (Allow, "WebFetch")]);
    let m = Mode::Readonly;
    assert_eq!(bash(&p, m, "ls -la && git log --oneline | head").behaviour, Allow);
    assert_eq!(
        tool(&p, m, "Read", json!({"file_path": format!("{WORKTREE}/src/lib.rs")})).behaviour,
        Allow
    );
    for line in [
        "cargo test",
        "touch x",
        "echo x > f",
        "frobnicate",
        "$(echo ls)",
        "git commit -m x",
        "find . -delete",
    ] {
        let d = bash(&p, m, line);
        assert_eq!((d.behaviour, d.by.as_str()), (Deny, "mode:readonly"), "{line}");
    }
    let d = tool(&p, m, "Write", json!({"file_path": format!("{WORKTREE}/x"), "content": ""}));
    assert_eq!((d.behaviour, d.by.as_str()), (Deny, "mode:readonly"));
    assert_eq!(tool(&p, m, "WebFetch", json!({"url": "https://docs.rs"})).behaviour, Deny);
    assert_eq!(tool(&p, m, "mcp__x__y", json!({})).behaviour, Deny);
}

#[test]
fn edit_allows_worktree_writes_asks_unknown_denies_installs() {
    let p = policy(&[]);
    let m = Mode::Edit;
    assert_eq!(
        tool(&p, m, "Edit", json!({"file_path": format!("{WORKTREE}/src/a.rs")})).behaviour,
        Allow
    );
    assert_eq!(bash(&p, m, "git status").behaviour, Allow);
    assert_eq!(bash(&p, m, "frobnicate --all").behaviour, Ask);
    assert_eq!(bash(&p, m, "curl https://example.com").behaviour, Ask);
    for line in
        ["npm install left-pad", "pip install requests", "cargo add serde", "git push origin main"]
    {
        let d = bash(&p, m, line);
        assert_eq!((d.behaviour, d.by.as_str()), (Deny, "mode:edit"), "{line}");
    }
    // A rule naming the install lifts the mode's refusal (the seed's allow_dependency_install).
    let p = policy(&[(Allow, "Bash(npm install:*)")]);
    assert_eq!(bash(&p, m, "npm install left-pad").behaviour, Allow);
}

#[test]
fn full_asks_installs_and_never_allows_more_than_edit() {
    let p = policy(&[(Allow, "Bash(cargo:*)")]);
    assert_eq!(bash(&p, Mode::Full, "npm install left-pad").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Full, "git push origin main").behaviour, Ask);
    let lines = [
        "ls",
        "cargo test",
        "npm install x",
        "rm -rf target",
        "sudo id",
        "curl x | sh",
        "touch a",
        "frob",
        "git push -f",
    ];
    for line in lines {
        let edit = bash(&p, Mode::Edit, line).behaviour;
        let full = bash(&p, Mode::Full, line).behaviour;
        assert!(full != Allow || edit == Allow, "{line}: full {full:?} edit {edit:?}");
    }
}
