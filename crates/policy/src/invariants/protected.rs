//! The `protected-path` and `policy-files` invariants: credentials and the policy's own files.

use std::path::{Component, Path};

use super::{Violation, unverifiable, violation};
use crate::context::Context;
use crate::glob;
use crate::paths;

/// Directory names that hold credentials wherever they sit.
const SECRET_DIRS: &[&[&str]] = &[&[".ssh"], &[".aws"], &[".config", "gh"], &[".gnupg"]];
/// Claude Code's managed settings directory (every file in it is policy).
const MANAGED_DIR: &str = "/etc/claude-code";

/// A path (lexical and resolved) inside a protected directory, or naming a credentials dir.
pub(super) fn protected(candidates: &[&Path], text: &str, ctx: &Context<'_>) -> Option<Violation> {
    let dirs = ctx.protected_dirs();
    let hit = candidates
        .iter()
        .find_map(|p| dirs.iter().find(|d| paths::is_within(p, d) && !ctx.exposed_in(p, d)));
    if let Some(dir) = hit {
        return Some(violation(
            "protected-path",
            format!("{text:?} is inside {}, which agents may never read or write.", dir.display()),
        ));
    }
    if names_secret_dir(text) {
        return Some(violation(
            "protected-path",
            format!("{text:?} names a credentials directory agents may never touch."),
        ));
    }
    let stores = ctx.credential_stores();
    if let Some(store) =
        candidates.iter().find_map(|p| stores.iter().find(|s| paths::is_within(p, s)))
    {
        return Some(credential_store(text, store));
    }
    // Another user's (`/root/.netrc`, `~user/.kube`): by name, outside the worktree and project
    // (a project may keep its own `.npmrc`).
    let outside =
        |p: &&&Path| !paths::is_within(p, &ctx.worktree) && !paths::is_within(p, &ctx.project_root);
    if let Some(name) = candidates.iter().filter(outside).find_map(|p| names_credential_store(p)) {
        return Some(credential_store(text, Path::new(name)));
    }
    None
}

/// The credential store a path names by its components, wherever it sits.
fn names_credential_store(path: &Path) -> Option<&'static str> {
    let parts: Vec<&str> = path.iter().filter_map(|c| c.to_str()).collect();
    crate::context::CREDENTIAL_STORES_IN_HOME.iter().copied().find(|store| {
        let store_parts: Vec<&str> = store.split('/').collect();
        parts.windows(store_parts.len()).any(|w| w == store_parts.as_slice())
    })
}

/// Reading or writing a credential store outside the protected directories: a person decides,
/// whatever the rules say.
pub(super) fn credential_store(text: &str, store: &Path) -> Violation {
    unverifiable(
        "protected-path",
        format!("{text:?} reaches {}, which holds credentials; a person decides.", store.display()),
    )
}

/// True when the text contains a credentials directory as path components (`.ssh`, `.aws`,
/// `.config/gh`), whatever it is relative to: `cd ~ && cat .ssh/id_rsa` is caught too.
pub(super) fn names_secret_dir(text: &str) -> bool {
    let parts: Vec<&str> = text.split(['/', '=', ':', ' ']).filter(|p| !p.is_empty()).collect();
    SECRET_DIRS.iter().any(|secret| {
        parts
            .windows(secret.len())
            .any(|w| w.iter().zip(secret.iter()).all(|(p, s)| part_matches(p, s)))
    })
}

/// A path component as written (maybe a glob: `.ss?`) against a name; like the shell, a
/// glob only matches a dot-name when it starts with a literal dot.
pub(super) fn part_matches(part: &str, name: &str) -> bool {
    // Case-insensitive: a macOS home (`~/.SSH` is `~/.ssh` there).
    if part.eq_ignore_ascii_case(name) {
        return true;
    }
    let lower;
    let part = if part.bytes().any(|b| b.is_ascii_uppercase()) {
        lower = part.to_ascii_lowercase();
        lower.as_str()
    } else {
        part
    };
    part.contains(['*', '?', '['])
        && (!name.starts_with('.') || part.starts_with('.'))
        && glob::component(&brackets_as_any(part), name)
}

/// `.s[s]h` → `.s?h`: a bracket expression matches one character (over-approximated).
fn brackets_as_any(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut in_bracket = false;
    for c in part.chars() {
        match c {
            '[' if !in_bracket => {
                in_bracket = true;
                out.push('?');
            }
            ']' if in_bracket => in_bracket = false,
            _ if in_bracket => {}
            _ => out.push(c),
        }
    }
    out
}

/// True when a glob path (absolute, normalised) can name `dir` or something inside it.
pub(super) fn glob_reaches(pattern: &Path, dir: &Path) -> bool {
    let p: Vec<&str> = pattern.iter().filter_map(|c| c.to_str()).collect();
    let d: Vec<&str> = dir.iter().filter_map(|c| c.to_str()).collect();
    p.len() >= d.len() && p.iter().zip(&d).all(|(p, d)| part_matches(p, d))
}

/// True when `path` (absolute) is a strict ancestor of a protected directory: a program that
/// reads trees reads the credentials too (`grep -r x ~`, `cp -r ~ loot`, `find / …`).
pub(super) fn ancestor_of_protected(path: &Path, ctx: &Context<'_>) -> bool {
    ctx.protected_dirs().iter().any(|d| d != path && paths::is_within(d, path))
}

/// True when `path` is a file the policy reads its rules from (or the `.claude` directory
/// that holds them): Claude Code's `.claude/settings*.json` anywhere, `~/.claude.json`, the
/// managed settings, Nucleic's `.nucleic/rules.json` and the rule files in the data dir.
pub(crate) fn is_policy_file(path: &Path, ctx: &Context<'_>) -> bool {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    let Some(last) = parts.last() else { return false };
    let parent = parts.len().checked_sub(2).and_then(|i| parts.get(i)).copied().unwrap_or("");
    let settings_name = |n: &str| {
        part_matches(n, "settings.json")
            || part_matches(n, "settings.local.json")
            || (n.starts_with("settings") && n.ends_with(".json"))
            || (n.starts_with("settings") && n.contains(['*', '?', '[']))
    };
    (part_matches(parent, ".claude") && settings_name(last))
        || part_matches(last, ".claude")
        || (path.starts_with(&ctx.home)
            && part_matches(last, ".claude.json")
            && parts.len() == ctx.home.components().count())
        || path.starts_with(MANAGED_DIR)
        || (part_matches(parent, ".nucleic") && part_matches(last, "rules.json"))
        || (path.starts_with(&ctx.data_dir) && *last == "rules.json")
}

/// Writing a policy file: denied whatever the rules say.
pub(super) fn policy_file_write(shown: &str, path: &Path) -> Violation {
    violation(
        "policy-files",
        format!(
            "{shown:?} ({}) holds permission rules the host or Claude Code reads; agents may never change it.",
            path.display()
        ),
    )
}

/// A program the policy does not know to only read names a policy file: asked.
pub(super) fn policy_file_mention(program: &str, shown: &str) -> Violation {
    unverifiable(
        "policy-files",
        format!("`{program}` names {shown:?}, a file holding permission rules; a person decides."),
    )
}
