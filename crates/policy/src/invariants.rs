//! Hard invariants: what no rule, mode or "always" can allow.

use std::path::{Path, PathBuf};

use crate::command::{Analysis, Invocation, SHELLS, basename};
use crate::context::Context;
use crate::glob;
use crate::paths;
use crate::rule::Behaviour;

/// A broken invariant: its name (`invariant:<name>`) and the message the model sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `Deny` when the invariant is broken; `Ask` when it cannot be verified (a target only
    /// known at run time): a person decides, no rule can allow it.
    pub behaviour: Behaviour,
    /// Short name: `sudo`, `force-push`, `rm-outside-worktree`, `curl-pipe-shell`,
    /// `protected-path`, `write-outside-worktree`.
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
const PRIVILEGE: &[&str] = &["sudo", "doas", "su", "pkexec", "run0"];
/// Programs whose arguments are code that can start programs (`awk 'BEGIN{system(…)}'`).
const INLINE_CODE: &[&str] =
    &["awk", "gawk", "mawk", "perl", "python", "python3", "ruby", "node", "php", "lua"];
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
    None
}

/// True when the text contains a credentials directory as path components (`.ssh`, `.aws`,
/// `.config/gh`), whatever it is relative to: `cd ~ && cat .ssh/id_rsa` is caught too.
fn names_secret_dir(text: &str) -> bool {
    let parts: Vec<&str> = text.split(['/', '=', ':', ' ']).filter(|p| !p.is_empty()).collect();
    SECRET_DIRS.iter().any(|secret| {
        parts
            .windows(secret.len())
            .any(|w| w.iter().zip(secret.iter()).all(|(p, s)| part_matches(p, s)))
    })
}

/// A path component as written (maybe a glob: `.ss?`) against a name; like the shell, a
/// glob only matches a dot-name when it starts with a literal dot.
fn part_matches(part: &str, name: &str) -> bool {
    if part == name {
        return true;
    }
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
fn glob_reaches(pattern: &Path, dir: &Path) -> bool {
    let p: Vec<&str> = pattern.iter().filter_map(|c| c.to_str()).collect();
    let d: Vec<&str> = dir.iter().filter_map(|c| c.to_str()).collect();
    p.len() >= d.len() && p.iter().zip(&d).all(|(p, d)| part_matches(p, d))
}

/// Checks every program of a parsed command line.
pub fn check_command(analysis: &Analysis, ctx: &Context<'_>) -> Option<Violation> {
    if let Some(v) = downloaded_then_run(analysis) {
        return Some(v);
    }
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
    if INLINE_CODE.contains(&name)
        && let Some(p) = invocation.args().find_map(|a| {
            a.split(|c: char| !c.is_ascii_alphanumeric()).find(|t| PRIVILEGE.contains(t))
        })
    {
        return Some(violation(
            "sudo",
            format!("`{name}` code calls `{p}`; agents may never use it."),
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
    for text in words.chain(
        invocation
            .redirects
            .iter()
            .filter(|r| r.kind != crate::shell::RedirectKind::Input)
            .map(|r| r.target.text.as_str()),
    ) {
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
            if text.contains(['*', '?', '['])
                && let Some(dir) =
                    ctx.protected_dirs().into_iter().find(|d| glob_reaches(&lexical, d))
            {
                return Some(violation(
                    "protected-path",
                    format!(
                        "{text:?} can match {}, which agents may never read or write.",
                        dir.display()
                    ),
                ));
            }
        }
    }
    if name == "rm" && is_recursive_rm(invocation) {
        for target in positional(invocation) {
            let outside = match cwd {
                _ if target.dynamic => {
                    return Some(unverifiable(
                        "rm-outside-worktree",
                        format!(
                            "`rm -r` of a path only known at run time ({:?}); a person decides.",
                            target.text
                        ),
                    ));
                }
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
    if let Some(target) = dynamic_write_target(invocation) {
        return Some(unverifiable(
            "write-outside-worktree",
            format!(
                "`{name}` writes a path only known at run time ({target:?}); a person decides."
            ),
        ));
    }
    for target in write_targets(invocation) {
        let Some(cwd) = cwd else {
            return Some(unverifiable(
                "write-outside-worktree",
                format!(
                    "`{name}` writes {target:?} after a `cd` to an unknown directory; a person decides."
                ),
            ));
        };
        let resolved = ctx.resolve_from(&target, cwd);
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

/// Paths the program writes (text, only known at run time): output redirections and the
/// operands of known writers.
fn write_words(invocation: &Invocation) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = invocation
        .redirects
        .iter()
        .filter(|r| r.kind == crate::shell::RedirectKind::Write)
        .map(|r| (r.target.text.clone(), r.target.dynamic))
        .collect();
    let name = invocation.name();
    let operands: Vec<(String, bool)> =
        positional(invocation).into_iter().map(|w| (w.text.clone(), w.dynamic)).collect();
    // `git diff --output=f`, `--log-file=f`, … from any program.
    out.extend(invocation.program.iter().skip(1).filter_map(|w| {
        ["--output=", "--output-file=", "--out-file=", "--outfile=", "--log-file="]
            .iter()
            .find_map(|p| w.text.strip_prefix(p))
            .map(|v| (v.to_owned(), w.dynamic))
    }));
    let option_value = |prefix: &str| {
        invocation
            .program
            .iter()
            .skip(1)
            .find_map(|w| w.text.strip_prefix(prefix).map(|v| (v.to_owned(), w.dynamic)))
    };
    if !WRITERS.contains(&name) {
        return out;
    }
    match name {
        "cp" | "mv" | "ln" | "install" | "rsync" => {
            out.extend(option_value("--target-directory=").or_else(|| operands.last().cloned()));
        }
        "chmod" | "chown" | "chgrp" => out.extend(operands.into_iter().skip(1)),
        "dd" => out.extend(option_value("of=")),
        "sed" => {
            if invocation.args().any(|a| a.starts_with("-i") || a == "--in-place") {
                out.extend(operands.into_iter().skip(1));
            }
        }
        "tar" | "unzip" | "patch" => {}
        _ => out.extend(operands),
    }
    out
}

fn write_targets(invocation: &Invocation) -> Vec<String> {
    write_words(invocation).into_iter().filter(|(_, dynamic)| !dynamic).map(|(t, _)| t).collect()
}

fn dynamic_write_target(invocation: &Invocation) -> Option<String> {
    write_words(invocation).into_iter().find(|(_, dynamic)| *dynamic).map(|(t, _)| t)
}

/// `curl -o x.sh … && sh x.sh`, `wget … && ./install.sh`: a file downloaded earlier in the line
/// is run (or any file, when the download's name is chosen by the server).
fn downloaded_then_run(analysis: &Analysis) -> Option<Violation> {
    let mut outputs: Vec<&str> = Vec::new();
    let mut unknown_name = false;
    let mut downloaded = false;
    for invocation in &analysis.invocations {
        let name = invocation.name();
        let args: Vec<&str> = invocation.args().collect();
        if DOWNLOADERS.contains(&name) {
            downloaded = true;
            outputs.extend(
                invocation
                    .redirects
                    .iter()
                    .filter(|r| r.kind == crate::shell::RedirectKind::Write)
                    .map(|r| basename(&r.target.text)),
            );
            for (i, a) in args.iter().enumerate() {
                let value = args.get(i + 1).map(|v| basename(v));
                match (name, *a) {
                    ("curl", "-o" | "--output") | ("wget", "-O" | "--output-document") => {
                        outputs.extend(value)
                    }
                    ("curl", "-O" | "--remote-name" | "--remote-name-all") => unknown_name = true,
                    _ => {}
                }
            }
            if name == "wget"
                && !args.iter().any(|a| matches!(*a, "-O" | "--output-document" | "-qO-" | "-O-"))
            {
                unknown_name = true;
            }
            continue;
        }
        if !downloaded {
            continue;
        }
        let executed = if SHELLS.contains(&name) || INTERPRETERS.contains(&name) {
            args.iter().find(|a| !a.starts_with('-')).map(|a| basename(a))
        } else {
            invocation.program.first().filter(|w| w.text.contains('/')).map(|w| basename(&w.text))
        };
        if let Some(file) = executed
            && (unknown_name || outputs.contains(&file))
        {
            return Some(violation(
                "curl-pipe-shell",
                format!("Running a downloaded file ({file}) is never allowed for agents."),
            ));
        }
    }
    None
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
