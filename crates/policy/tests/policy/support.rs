//! A fixed session layout and helpers shared by the tests.

use std::path::PathBuf;

use nucleic_policy::{Behaviour, Context, Decision, MapResolver, Mode, Policy, Scope};
use serde_json::json;

pub const PROJECT: &str = "/repo";
pub const WORKTREE: &str = "/repo/.nucleic/worktrees/s1";
pub const HOME: &str = "/home/u";
pub const DATA: &str = "/home/u/.local/share/nucleic";

/// The test resolver: `link-out` in the worktree points outside it, `keys` at `~/.ssh`.
pub fn resolver() -> MapResolver {
    MapResolver::new()
        .link(format!("{WORKTREE}/link-out"), "/opt/elsewhere")
        .link(format!("{WORKTREE}/keys"), format!("{HOME}/.ssh"))
}

pub fn ctx(mode: Mode, resolver: &MapResolver) -> Context<'_> {
    Context {
        project_root: PathBuf::from(PROJECT),
        worktree: PathBuf::from(WORKTREE),
        cwd: PathBuf::from(WORKTREE),
        home: PathBuf::from(HOME),
        data_dir: PathBuf::from(DATA),
        extra_write_roots: Vec::new(),
        read_roots: Vec::new(),
        mode,
        resolver,
    }
}

/// A policy from `(behaviour, rule)` pairs in the session scope.
pub fn policy(rules: &[(Behaviour, &str)]) -> Policy {
    let mut policy = Policy::new();
    for (behaviour, rule) in rules {
        policy.add_rule(Scope::Session, *behaviour, rule).unwrap();
    }
    policy
}

pub fn bash(policy: &Policy, mode: Mode, command: &str) -> Decision {
    let r = resolver();
    policy.evaluate("Bash", &json!({ "command": command }), &ctx(mode, &r))
}

pub fn tool(policy: &Policy, mode: Mode, name: &str, input: serde_json::Value) -> Decision {
    let r = resolver();
    policy.evaluate(name, &input, &ctx(mode, &r))
}

/// Everything allowed: `Bash(*)`, all file tools, the network.
pub fn permissive() -> Policy {
    policy(&[
        (Behaviour::Allow, "Bash(*)"),
        (Behaviour::Allow, "Bash"),
        (Behaviour::Allow, "Read"),
        (Behaviour::Allow, "Edit"),
        (Behaviour::Allow, "Write"),
        (Behaviour::Allow, "WebFetch"),
    ])
}
