//! Hard invariants: what no rule, mode or "always" can allow.

use std::path::{Path, PathBuf};

use crate::command::{Analysis, Invocation, SHELLS};
use crate::context::Context;
use crate::paths;

/// A broken invariant: its name (`invariant:<name>`) and the message the model sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Short name: `sudo`, `force-push`, `rm-outside-worktree`, `curl-pipe-shell`,
    /// `protected-path`, `write-outside-worktree`.
    pub name: &'static str,
    /// Why, for the model and the person.
    pub message: String,
}

fn violation(name: &'static str, message: String) -> Violation {
    Violation { name, message }
}

/// Programs that run something as another user.
const PRIVILEGE: &[&str] = &["sudo", "doas", "su", "pkexec", "run0"];
/// Programs that download.
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "aria2c", "http", "https", "xh"];
/// Programs that run a script they are given.
const INTERPRETERS: &[&str] =
    &["python", "python3", "perl", "ruby", "node", "php", "source", ".", "eval"];
/// Programs that write or delete the paths they are given.
const WRITERS: &[&str] = &[
    "touch", "mkdir", "rmdir", "rm", "tee", "truncate", "chmod", "chown", "chgrp", "ln", "cp",
    "mv", "install", "unlink", "shred", "rsync", "dd", "sed", "patch", "tar", "unzip",
];
/// Directory names that hold credentials wherever they sit.
const SECRET_DIRS: &[&[&str]] = &[&[".ssh"], &[".aws"], &[".config", "gh"], &[".gnupg"]];

/// Checks a file path a tool reads (`write == false`) or writes.
pub fn check_file(text: &str, write: bool, ctx: &Context<'_>) -> Option<Violation> {
    let resolved = ctx.resolve_from(text, &ctx.cwd);
    let lexical = paths::absolute(text, &ctx.cwd, &ctx.home);
    if let Some(v) = protected(&[&lexical, &resolved], text, ctx) {
        return Some(v);
    }
    if write && !ctx.may_write(&resolved) {
        return Some(violation(
            "write-outside-worktree",
            format!(
                "Writing {} is outside this session's worktree; the host refuses it.",
                resolved.display()
            ),
        ));
    }
    None
}

fn protected(candidates: &[&Path], text: &str, ctx: &Context<'_>) -> Option<Violation> {
    let dirs = ctx.protected_dirs();
    let hit = candidates.iter().find_map(|p| dirs.iter().find(|d| paths::is_within(p, d)));
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
    None
}

/// True when the text contains a credentials directory as path components (`.ssh`, `.aws`,
/// `.config/gh`), whatever it is relative to: `cd ~ && cat .ssh/id_rsa` is caught too.
fn names_secret_dir(text: &str) -> bool {
    let parts: Vec<&str> = text.split(['/', '=', ':', ' ']).filter(|p| !p.is_empty()).collect();
    SECRET_DIRS.iter().any(|secret| parts.windows(secret.len()).any(|w| w == *secret))
}

/// Checks every program of a parsed command line.
pub fn check_command(analysis: &Analysis, ctx: &Context<'_>) -> Option<Violation> {
    let mut cwd: Option<PathBuf> = Some(ctx.cwd.clone());
    for invocation in &analysis.invocations {
        if let Some(v) = check_invocation(invocation, analysis, cwd.as_deref(), ctx) {
            return Some(v);
        }
        if matches!(invocation.name(), "cd" | "pushd" | "popd") {
            cwd = next_cwd(invocation, cwd.as_deref(), ctx);
        }
    }
    None
}

/// The directory after `cd`; `None` when it cannot be known.
fn next_cwd(invocation: &Invocation, cwd: Option<&Path>, ctx: &Context<'_>) -> Option<PathBuf> {
    let target = invocation.program.iter().skip(1).find(|w| !w.text.starts_with('-'));
    match (invocation.name(), target) {
        ("cd", None) => Some(ctx.home.clone()),
        ("cd" | "pushd", Some(word)) if !word.dynamic && word.text != "-" => {
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
) -> Option<Violation> {
    let name = invocation.name();
    if let Some(p) =
        invocation.wrappers.iter().map(String::as_str).chain([name]).find(|n| PRIVILEGE.contains(n))
    {
        return Some(violation(
            "sudo",
            format!("`{p}` runs commands as another user; agents may never use it."),
        ));
    }
    if name == "git" && is_force_push(invocation) {
        return Some(violation(
            "force-push",
            "Force-pushing rewrites shared history; agents may never do it.".into(),
        ));
    }
    if let Some(v) = curl_pipe_shell(invocation, analysis) {
        return Some(v);
    }
    // Every word that may be a path, and every redirection target.
    let words = invocation
        .program
        .iter()
        .skip(1)
        .map(|w| w.text.as_str())
        .chain(invocation.assignments.iter().map(String::as_str));
    for text in words.chain(invocation.redirects.iter().map(|r| r.target.text.as_str())) {
        if names_secret_dir(text) {
            return Some(violation(
                "protected-path",
                format!("{text:?} names a credentials directory agents may never touch."),
            ));
        }
        if looks_like_path(text)
            && let Some(cwd) = cwd
        {
            let lexical = paths::absolute(text, cwd, &ctx.home);
            let resolved = ctx.resolver.resolve(&lexical);
            if let Some(v) = protected(&[&lexical, &resolved], text, ctx) {
                return Some(v);
            }
        }
    }
    if name == "rm" && is_recursive_rm(invocation) {
        for target in positional(invocation) {
            let outside = match cwd {
                _ if target.dynamic => continue, // never auto-allowed: the line is dynamic
                None => true,
                Some(cwd) => !ctx.may_write(&ctx.resolve_from(&target.text, cwd)),
            };
            if outside {
                return Some(violation(
                    "rm-outside-worktree",
                    format!(
                        "`rm -r {}` would delete outside this session's worktree; the host refuses it.",
                        target.text
                    ),
                ));
            }
        }
    }
    for target in write_targets(invocation) {
        let Some(cwd) = cwd else { continue };
        let resolved = ctx.resolve_from(target, cwd);
        if !ctx.may_write(&resolved) {
            return Some(violation(
                "write-outside-worktree",
                format!(
                    "`{name}` would write {}, outside this session's worktree; the host refuses it.",
                    resolved.display()
                ),
            ));
        }
    }
    None
}

fn looks_like_path(text: &str) -> bool {
    text.contains('/') || text.starts_with('~') || text.starts_with('.')
}

/// `git <global options> <subcommand> <args…>`.
pub fn git_subcommand(invocation: &Invocation) -> Option<(&str, Vec<&str>)> {
    let args: Vec<&str> = invocation.args().collect();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if matches!(*a, "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path") {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let sub = args.get(i)?;
    Some((sub, args[i + 1..].to_vec()))
}

fn is_force_push(invocation: &Invocation) -> bool {
    let Some(("push", args)) = git_subcommand(invocation) else { return false };
    args.iter().any(|a| {
        matches!(*a, "--force" | "--force-if-includes" | "--mirror")
            || a.starts_with("--force-with-lease")
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
            || a.starts_with('+')
            || a.contains(":+")
    })
}

fn is_recursive_rm(invocation: &Invocation) -> bool {
    invocation.args().take_while(|a| *a != "--").any(|a| {
        a == "--recursive"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('r') || a.contains('R')))
    })
}

/// Arguments that are not options (everything after `--`).
fn positional(invocation: &Invocation) -> Vec<&crate::shell::Word> {
    let mut out = Vec::new();
    let mut options_done = false;
    for word in invocation.program.iter().skip(1) {
        if !options_done && word.text == "--" {
            options_done = true;
        } else if options_done || !word.text.starts_with('-') || word.text == "-" {
            out.push(word);
        }
    }
    out
}

/// Paths the program writes: output redirections and the operands of known writers.
fn write_targets(invocation: &Invocation) -> Vec<&str> {
    let mut out: Vec<&str> = invocation
        .redirects
        .iter()
        .filter(|r| r.kind == crate::shell::RedirectKind::Write && !r.target.dynamic)
        .map(|r| r.target.text.as_str())
        .collect();
    let name = invocation.name();
    if !WRITERS.contains(&name) {
        return out;
    }
    let operands: Vec<&str> = positional(invocation)
        .into_iter()
        .filter(|w| !w.dynamic)
        .map(|w| w.text.as_str())
        .collect();
    match name {
        "cp" | "mv" | "ln" | "install" | "rsync" => {
            let target = invocation.args().find_map(|a| a.strip_prefix("--target-directory="));
            out.extend(target.or(operands.last().copied()));
        }
        "chmod" | "chown" | "chgrp" => out.extend(operands.iter().skip(1)),
        "dd" => out.extend(invocation.args().filter_map(|a| a.strip_prefix("of="))),
        "sed" => {
            if invocation.args().any(|a| a.starts_with("-i") || a == "--in-place") {
                out.extend(operands.iter().skip(1));
            }
        }
        "tar" | "unzip" | "patch" => {}
        _ => out.extend(operands),
    }
    out
}

/// `curl … | sh`, `bash <(curl …)`, `sh -c "$(curl …)"`.
fn curl_pipe_shell(invocation: &Invocation, analysis: &Analysis) -> Option<Violation> {
    let name = invocation.name();
    if !(SHELLS.contains(&name) || INTERPRETERS.contains(&name)) {
        return None;
    }
    let downloaded = |i: &Invocation| DOWNLOADERS.contains(&i.name());
    let fed_by_pipe = invocation.stage > 0
        && reads_program_from_stdin(invocation)
        && analysis.invocations.iter().any(|other| {
            other.pipeline == invocation.pipeline
                && other.stage < invocation.stage
                && downloaded(other)
        });
    let fed_by_substitution = invocation
        .substitutions
        .iter()
        .filter_map(|&i| analysis.invocations.get(i))
        .any(downloaded);
    (fed_by_pipe || fed_by_substitution).then(|| {
        violation(
            "curl-pipe-shell",
            format!("Running downloaded code (`… | {name}`) is never allowed for agents."),
        )
    })
}

fn reads_program_from_stdin(invocation: &Invocation) -> bool {
    let args: Vec<&str> = invocation.args().collect();
    if args.iter().any(|a| matches!(*a, "-c" | "-e" | "-m" | "-E" | "--eval")) {
        return false;
    }
    args.iter().all(|a| a.starts_with('-')) || args.iter().any(|a| *a == "-" || *a == "/dev/stdin")
}
