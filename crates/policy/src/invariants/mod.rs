//! Hard invariants: what no rule, mode or "always" can allow.

mod download;
mod protected;
mod writes;

use std::path::{Path, PathBuf};

use crate::code;
use crate::command::{Analysis, Invocation};
use crate::context::Context;
use crate::data::data_positions;
use crate::paths;
use crate::rule::Behaviour;
use crate::shell::RedirectKind;

pub use crate::git::git_subcommand;
pub(crate) use protected::is_policy_file;

/// A broken invariant: its name (`invariant:<name>`) and the message the model sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `Deny` when the invariant is broken; `Ask` when it cannot be verified (a target only
    /// known at run time): a person decides, no rule can allow it.
    pub behaviour: Behaviour,
    /// Short name: `sudo`, `force-push`, `rm-outside-worktree`, `curl-pipe-shell`,
    /// `protected-path`, `write-outside-worktree`, `policy-files`.
    pub name: &'static str,
    /// Why, for the model and the person.
    pub message: String,
}

fn violation(name: &'static str, message: String) -> Violation {
    Violation { behaviour: Behaviour::Deny, name, message }
}

fn unverifiable(name: &'static str, message: String) -> Violation {
    Violation { behaviour: Behaviour::Ask, name, message }
}

/// Programs that run something as another user.
pub(crate) const PRIVILEGE: &[&str] = &[
    "sudo", "doas", "su", "pkexec", "run0", "sudoedit", "sudo-rs", "runuser", "gosu", "su-exec",
    "ksu", "calife", "please", "pls", "setuid",
];
/// Programs that read whole trees: a starting point above a protected directory reads it too.
const TREE_READERS: &[&str] = &[
    "find", "tree", "du", "rg", "ag", "ack", "grep", "egrep", "fgrep", "cp", "tar", "zip", "7z",
    "rsync", "scp", "git", "ls", "chmod", "chown", "bsdtar", "cpio", "fd", "locate", "zstd",
];

/// Checks a file path a tool reads (`write == false`) or writes.
pub fn check_file(text: &str, write: bool, ctx: &Context<'_>) -> Option<Violation> {
    let resolved = ctx.resolve_from(text, &ctx.cwd);
    let lexical = paths::absolute(text, &ctx.cwd, &ctx.home);
    if let Some(v) = protected::protected(&[&lexical, &resolved], text, ctx) {
        return Some(v);
    }
    if write {
        if let Some(path) = [&lexical, &resolved].into_iter().find(|p| is_policy_file(p, ctx)) {
            return Some(protected::policy_file_write(text, path));
        }
        if !ctx.may_write(&resolved) {
            return Some(violation(
                "write-outside-worktree",
                format!(
                    "Writing {} is outside this session's worktree; the host refuses it.",
                    resolved.display()
                ),
            ));
        }
    }
    None
}

/// Checks every program of a parsed command line: the first broken invariant, else the first
/// one that cannot be verified.
pub fn check_command(analysis: &Analysis, ctx: &Context<'_>) -> Option<Violation> {
    if let Some(v) = download::downloaded_then_run(analysis) {
        return Some(v);
    }
    let mut cwd: Option<PathBuf> = Some(ctx.cwd.clone());
    let mut asked: Option<Violation> = None;
    let mut links: Vec<String> = Vec::new();
    for invocation in &analysis.invocations {
        let mut found = Vec::new();
        check_invocation(invocation, analysis, cwd.as_deref(), ctx, &mut found);
        if let Some(link) = through_new_link(invocation, &links) {
            found.push(unverifiable(
                "write-outside-worktree",
                format!("{link:?} is a symbolic link this line makes; where it leads is only known at run time."),
            ));
        }
        links.extend(symlinks_made(invocation));
        for v in found {
            if v.behaviour == Behaviour::Deny {
                return Some(v);
            }
            asked.get_or_insert(v);
        }
        if matches!(invocation.name(), "cd" | "pushd" | "popd") {
            cwd = next_cwd(invocation, cwd.as_deref(), ctx);
        }
    }
    asked
}

/// Symbolic links `ln -s` makes (its last operand, or every operand with `-t`).
fn symlinks_made(invocation: &Invocation) -> Vec<String> {
    let symbolic = invocation.args().take_while(|a| *a != "--").any(|a| {
        a == "--symbolic" || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
    });
    if invocation.name() != "ln" || !symbolic {
        return Vec::new();
    }
    writes::positional(invocation)
        .last()
        .map(|w| w.text.trim_end_matches('/').to_owned())
        .into_iter()
        .collect()
}

/// A word of `invocation` that goes through a link made earlier in the line.
fn through_new_link(invocation: &Invocation, links: &[String]) -> Option<String> {
    if links.is_empty() {
        return None;
    }
    let texts = invocation.program.iter().skip(1).map(|w| w.text.as_str()).chain(
        invocation
            .redirects
            .iter()
            .filter(|r| r.kind != RedirectKind::Input)
            .map(|r| r.target.text.as_str()),
    );
    for text in texts {
        let text = text.strip_prefix("./").unwrap_or(text);
        if let Some(link) = links.iter().find(|l| {
            let l = l.strip_prefix("./").unwrap_or(l);
            text == l || text.starts_with(&format!("{l}/")) || crate::command::basename(l) == text
        }) {
            return Some(link.clone());
        }
    }
    None
}

/// The directory after `cd`; `None` when it cannot be known.
fn next_cwd(invocation: &Invocation, cwd: Option<&Path>, ctx: &Context<'_>) -> Option<PathBuf> {
    let target = invocation.program.iter().skip(1).find(|w| !w.text.starts_with('-'));
    match (invocation.name(), target) {
        ("cd", None) => Some(ctx.home.clone()),
        ("cd" | "pushd", Some(word)) if !word.dynamic && !word.glob && word.text != "-" => {
            cwd.map(|cwd| ctx.resolve_from(&word.text, cwd))
        }
        _ => None,
    }
}

fn check_invocation(
    invocation: &Invocation,
    analysis: &Analysis,
    cwd: Option<&Path>,
    ctx: &Context<'_>,
    found: &mut Vec<Violation>,
) {
    let name = invocation.name();
    // Case-insensitive: on a case-insensitive filesystem `SUDO` runs sudo.
    let privileged = |n: &&str| PRIVILEGE.iter().any(|p| p.eq_ignore_ascii_case(n));
    if let Some(p) = invocation.wrappers.iter().map(String::as_str).chain([name]).find(privileged) {
        found.push(violation(
            "sudo",
            format!("`{p}` runs commands as another user; agents may never use it."),
        ));
        return;
    }
    if let Some(v) = privilege_in_code(invocation) {
        found.push(v);
        return;
    }
    if name == "git" && crate::git::is_force_push(invocation) {
        found.push(violation(
            "force-push",
            "Force-pushing rewrites shared history; agents may never do it.".into(),
        ));
        return;
    }
    if let Some(v) = download::curl_pipe_shell(invocation, analysis) {
        found.push(v);
        return;
    }
    if let Some((name, why)) = crate::tools::touches_home_config(invocation) {
        found.push(unverifiable(name, why));
    }
    if name == "git" {
        for dir in crate::tools::git_dirs(invocation) {
            let inside = cwd.is_some_and(|cwd| {
                let p = ctx.resolve_from(&dir, cwd);
                ctx.may_write(&p) || paths::is_within(&p, &ctx.project_root)
            });
            if !inside {
                found.push(unverifiable(
                    "write-outside-worktree",
                    format!("`git` works on {dir:?}, a repository or tree outside this session's worktree; a person decides."),
                ));
            }
        }
    }
    check_paths(invocation, cwd, ctx, found);
    check_deletes(invocation, cwd, ctx, found);
    check_writes(invocation, cwd, ctx, found);
}

/// `awk 'BEGIN{system("sudo id")}'`, `python3 -c 'os.system("sudo …")'`: inline code that
/// starts programs and names a privilege program.
fn privilege_in_code(invocation: &Invocation) -> Option<Violation> {
    let name = invocation.name();
    if !code::INTERPRETERS.contains(&name) {
        return None;
    }
    let inline = code::inline_code(name, &invocation.program).map(|w| w.text);
    let here = invocation
        .redirects
        .iter()
        .find(|r| r.kind == RedirectKind::Input)
        .map(|r| r.target.text.clone());
    inline.into_iter().chain(here).find_map(|code_text| {
        let code_text = code_text.as_str();
        let word = code_text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .find(|t| PRIVILEGE.contains(t))?;
        code::code_spawns(code_text).then(|| {
            violation("sudo", format!("`{name}` code calls `{word}`; agents may never use it."))
        })
    })
}

/// Every word that may be a path (not data), every wrapper option value and redirection.
fn check_paths(
    invocation: &Invocation,
    cwd: Option<&Path>,
    ctx: &Context<'_>,
    found: &mut Vec<Violation>,
) {
    let name = invocation.name();
    let moved = cwd != Some(ctx.cwd.as_path());
    // Only words with a separator, a dot or a tilde can name a path or a credentials dir
    // (after a `cd`, any word can).
    let interesting = |t: &str| moved || t.contains(['/', '.', '~', ':', '=']);
    let data = if invocation.program.iter().skip(1).any(|w| interesting(&w.text)) {
        data_positions(invocation)
    } else {
        Vec::new()
    };
    let mut read_only: Option<bool> = None;
    let words = invocation
        .program
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, w)| interesting(&w.text))
        .filter(|(i, w)| w.glob || !data.get(*i).copied().unwrap_or(false))
        .map(|(_, w)| w)
        .chain(&invocation.wrapper_args)
        .map(|w| w.text.as_str())
        // `--files-from=~/.netrc`: an option's value is a path as much as an operand is.
        .flat_map(|t| {
            let value = t.strip_prefix('-').and_then(|o| o.split_once('=')).map(|(_, v)| v);
            std::iter::once(t).chain(value.filter(|v| !v.is_empty()))
        })
        .chain(invocation.assignments.iter().map(String::as_str));
    let redirects = invocation
        .redirects
        .iter()
        .filter(|r| r.kind != RedirectKind::Input)
        .map(|r| r.target.text.as_str());
    for text in words.chain(redirects) {
        if protected::names_secret_dir(text) {
            found.push(violation(
                "protected-path",
                format!("{text:?} names a credentials directory agents may never touch."),
            ));
            return;
        }
        if !(looks_like_path(text) || moved) {
            continue;
        }
        let Some(cwd) = cwd else {
            if !text.starts_with('/') && !text.starts_with('~') && looks_like_path(text) {
                found.push(unverifiable(
                    "protected-path",
                    format!("{text:?} is relative to a directory only known at run time; a person decides."),
                ));
            }
            continue;
        };
        let lexical = paths::absolute(text, cwd, &ctx.home);
        let resolved = ctx.resolver.resolve(&lexical);
        let physical = ctx.resolve_from(text, cwd);
        if let Some(v) = protected::protected(&[&lexical, &resolved, &physical], text, ctx) {
            found.push(v);
            return;
        }
        if text.contains(['*', '?', '['])
            && let Some(dir) =
                ctx.protected_dirs().into_iter().find(|d| protected::glob_reaches(&lexical, d))
        {
            found.push(violation(
                "protected-path",
                format!(
                    "{text:?} can match {}, which agents may never read or write.",
                    dir.display()
                ),
            ));
            return;
        }
        if text.contains(['*', '?', '['])
            && let Some(store) =
                ctx.credential_stores().into_iter().find(|s| protected::glob_reaches(&lexical, s))
        {
            found.push(protected::credential_store(text, &store));
            return;
        }
        let tree_reader = TREE_READERS.contains(&name)
            && (name != "ls"
                || invocation.args().any(|a| {
                    a.starts_with('-') && !a.starts_with("--") && a.contains('R')
                        || a == "--recursive"
                }));
        if tree_reader && protected::ancestor_of_protected(&physical, ctx) {
            found.push(unverifiable(
                "protected-path",
                format!("`{name}` reads the tree {text:?}, which holds credentials or the host's data; a person decides."),
            ));
        }
        if [&lexical, &physical].iter().any(|p| is_policy_file(p, ctx))
            && !*read_only.get_or_insert_with(|| crate::mode::is_read_only(invocation))
        {
            found.push(protected::policy_file_mention(name, text));
        }
    }
}

/// `rm -r` and `find -delete` of trees outside the worktree.
fn check_deletes(
    invocation: &Invocation,
    cwd: Option<&Path>,
    ctx: &Context<'_>,
    found: &mut Vec<Violation>,
) {
    let trees = writes::deleted_trees(invocation);
    if invocation.appended_args
        && (invocation.name() == "rm" || writes::WRITERS.contains(&invocation.name()))
    {
        found.push(unverifiable(
            "rm-outside-worktree",
            format!(
                "`{}` deletes or writes paths only known at run time; a person decides.",
                invocation.name()
            ),
        ));
    }
    for target in trees {
        let shown = if target.raw.is_empty() { &target.text } else { &target.raw };
        let what = format!("`{} {shown}`", invocation.name());
        if target.dynamic || dot_glob(&target.text) {
            found.push(unverifiable(
                "rm-outside-worktree",
                format!("{what} deletes a path only known at run time; a person decides."),
            ));
            continue;
        }
        let outside = match cwd {
            None => true,
            Some(cwd) => {
                let resolved = ctx.resolve_from(&target.text, cwd);
                let dot = matches!(target.text.trim_end_matches('/'), "." | "");
                !ctx.may_write(&resolved) || (!dot && is_write_root(&resolved, ctx))
            }
        };
        if outside {
            found.push(violation(
                "rm-outside-worktree",
                format!(
                    "{what} would delete outside this session's worktree; the host refuses it."
                ),
            ));
            return;
        }
    }
}

/// The worktree or an extra write root itself: deleting it is deleting outside it.
fn is_write_root(path: &Path, ctx: &Context<'_>) -> bool {
    std::iter::once(&ctx.worktree)
        .chain(&ctx.extra_write_roots)
        .any(|root| ctx.resolver.resolve(root) == path)
}

/// A glob that can match `..` or follow a link in a middle component (`.*`, `*/..`, `x*/y`).
fn dot_glob(text: &str) -> bool {
    let parts: Vec<&str> = text.split('/').collect();
    parts
        .iter()
        .enumerate()
        .any(|(i, p)| p.contains(['*', '?', '[']) && (p.starts_with('.') || i + 1 < parts.len()))
}

/// Writes outside the worktree, to policy files, or to places only known at run time.
fn check_writes(
    invocation: &Invocation,
    cwd: Option<&Path>,
    ctx: &Context<'_>,
    found: &mut Vec<Violation>,
) {
    let name = invocation.name();
    if name == "git" && !crate::mode::is_read_only(invocation) {
        for dir in crate::git::chdirs(invocation) {
            let outside = cwd.is_none_or(|cwd| !ctx.may_write(&ctx.resolve_from(&dir, cwd)));
            if outside {
                found.push(unverifiable(
                    "write-outside-worktree",
                    format!("`git -C {dir}` changes a repository outside this session's worktree; a person decides."),
                ));
            }
        }
    }
    if let Some(why) = writes::archive_escapes(invocation) {
        found.push(unverifiable("write-outside-worktree", why));
    }
    for (target, dynamic) in writes::write_words(invocation) {
        // A policy file by its name, wherever it is (`~user/.claude/settings.json`).
        let named = paths::absolute(&target, cwd.unwrap_or(&ctx.cwd), &ctx.home);
        if is_policy_file(&named, ctx) {
            found.push(protected::policy_file_write(&target, &named));
            return;
        }
        if dynamic {
            found.push(unverifiable(
                "write-outside-worktree",
                format!(
                    "`{name}` writes a path only known at run time ({target:?}); a person decides."
                ),
            ));
            continue;
        }
        let Some(cwd) = cwd else {
            found.push(unverifiable(
                "write-outside-worktree",
                format!("`{name}` writes {target:?} after a `cd` to an unknown directory; a person decides."),
            ));
            continue;
        };
        let lexical = paths::absolute(&target, cwd, &ctx.home);
        let resolved = ctx.resolve_from(&target, cwd);
        if let Some(path) = [&lexical, &resolved].into_iter().find(|p| is_policy_file(p, ctx)) {
            found.push(protected::policy_file_write(&target, path));
            return;
        }
        if !ctx.may_write(&resolved) {
            found.push(violation(
                "write-outside-worktree",
                format!(
                    "`{name}` would write {}, outside this session's worktree; the host refuses it.",
                    resolved.display()
                ),
            ));
            return;
        }
    }
}

fn looks_like_path(text: &str) -> bool {
    text.contains('/') || text.starts_with('~') || text.starts_with('.')
}
