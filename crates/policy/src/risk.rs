//! The risk classifier: low / medium / high / critical, with reasons, from the parsed call.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::{Analysis, Invocation};
use crate::context::Context;
use crate::invariants::{Violation, git_subcommand};
use crate::mode;
use crate::paths;
use crate::rule::{Behaviour, EDIT_TOOLS, READ_TOOLS};
use crate::shell::RedirectKind;

/// How much harm a tool call could do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads, builds, tests.
    Low,
    /// Writes in the worktree, network reads, unknown commands.
    Medium,
    /// Deletes trees, discards work, installs dependencies, publishes.
    High,
    /// Breaks a hard invariant or could take the machine down.
    Critical,
}

/// A risk class and what led to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// The class.
    pub risk: Risk,
    /// Reasons, most serious first.
    pub reasons: Vec<String>,
}

struct Acc {
    reasons: Vec<(Risk, String)>,
}

impl Acc {
    fn add(&mut self, risk: Risk, reason: impl Into<String>) {
        let reason = reason.into();
        if !self.reasons.iter().any(|(_, r)| *r == reason) {
            self.reasons.push((risk, reason));
        }
    }

    fn finish(mut self) -> Assessment {
        self.reasons.sort_by_key(|r| std::cmp::Reverse(r.0));
        let risk = self.reasons.first().map_or(Risk::Low, |(r, _)| *r);
        Assessment { risk, reasons: self.reasons.into_iter().map(|(_, r)| r).collect() }
    }
}

const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "telnet", "ftp", "http", "xh", "ping",
    "dig", "nslookup", "aria2c",
];
const SYSTEM: &[&str] = &[
    "systemctl",
    "service",
    "crontab",
    "launchctl",
    "mount",
    "umount",
    "iptables",
    "useradd",
    "usermod",
    "passwd",
    "sysctl",
];
const MACHINE_DOWN: &[&str] =
    &["shutdown", "reboot", "halt", "poweroff", "mkfs", "fdisk", "parted", "wipefs"];
const PROCESS: &[&str] = &["kill", "pkill", "killall"];
const BUILD: &[&str] = &[
    "cargo",
    "make",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "pytest",
    "go",
    "tsc",
    "eslint",
    "prettier",
    "ruff",
    "mypy",
    "black",
    "jest",
    "vitest",
    "gradle",
    "mvn",
    "cmake",
    "ninja",
    "rustfmt",
    "clippy-driver",
    "deno",
    "tox",
    "just",
];
const WRITERS: &[&str] = &[
    "touch", "mkdir", "cp", "mv", "tee", "ln", "install", "truncate", "patch", "tar", "unzip",
    "sed", "dd",
];

/// Classifies one tool call.
pub fn classify(
    tool: &str,
    input: &Value,
    analysis: Option<&Analysis>,
    violation: Option<&Violation>,
    ctx: &Context<'_>,
) -> Assessment {
    let mut acc = Acc { reasons: Vec::new() };
    match violation {
        Some(v) if v.behaviour == Behaviour::Deny => {
            acc.add(Risk::Critical, format!("breaks the `{}` invariant", v.name))
        }
        Some(v) => {
            acc.add(Risk::High, format!("cannot be checked against the `{}` invariant", v.name))
        }
        None => {}
    }
    let path = ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str));
    match tool {
        "Bash" => match analysis {
            Some(analysis) => shell(analysis, ctx, &mut acc),
            None => acc.add(Risk::Medium, "malformed command"),
        },
        t if EDIT_TOOLS.contains(&t) => {
            acc.add(Risk::Medium, "writes a file");
            if let Some(p) = path {
                file_write(p, ctx, &mut acc);
            }
        }
        t if READ_TOOLS.contains(&t) => {
            let outside = path.is_some_and(|p| {
                let resolved = ctx.resolve_from(p, &ctx.cwd);
                !paths::is_within(&resolved, &ctx.worktree) && !ctx.in_read_root(&resolved)
            });
            if outside {
                acc.add(Risk::Medium, "reads outside the worktree");
            }
        }
        "WebFetch" | "WebSearch" => acc.add(Risk::Medium, "network"),
        t if t.starts_with("mcp__") => acc.add(Risk::Medium, "MCP tool with unknown effects"),
        _ => {}
    }
    acc.finish()
}

fn file_write(path: &str, ctx: &Context<'_>, acc: &mut Acc) {
    let resolved = ctx.resolve_from(path, &ctx.cwd);
    let rel = resolved.strip_prefix(&ctx.worktree).unwrap_or(&resolved);
    let rel = rel.to_string_lossy();
    if rel.starts_with(".github/") || rel.starts_with(".gitlab-ci") || rel.starts_with(".git/") {
        acc.add(Risk::High, "changes CI or git configuration");
    } else if matches!(
        rel.as_ref(),
        "Cargo.toml"
            | "package.json"
            | "pyproject.toml"
            | "go.mod"
            | "requirements.txt"
            | "Gemfile"
    ) || rel.ends_with("/Cargo.toml")
        || rel.ends_with("/package.json")
    {
        acc.add(Risk::Medium, "changes dependencies or the build");
    } else if !rel.starts_with("src/") && !rel.contains("/src/") {
        acc.add(Risk::Medium, "writes outside src/");
    }
}

fn shell(analysis: &Analysis, ctx: &Context<'_>, acc: &mut Acc) {
    if let Some(why) = analysis.opaque.first() {
        acc.add(Risk::Medium, format!("not fully understood: {why}"));
    }
    for invocation in &analysis.invocations {
        program(invocation, ctx, acc);
        let writes = invocation
            .redirects
            .iter()
            .filter(|r| r.kind == RedirectKind::Write && !r.target.text.starts_with("/dev/"))
            .count();
        if writes > 0 {
            acc.add(Risk::Medium, "writes files");
        }
    }
}

fn program(invocation: &Invocation, _ctx: &Context<'_>, acc: &mut Acc) {
    let name = invocation.name();
    let args: Vec<&str> = invocation.args().collect();
    if invocation.program.is_empty() {
        return;
    }
    if MACHINE_DOWN.contains(&name) || name.starts_with("mkfs") {
        acc.add(Risk::Critical, "could take the machine down");
        return;
    }
    if mode::is_dependency_install(invocation) {
        acc.add(Risk::High, "installs a dependency");
        return;
    }
    let sub = args.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
    if (matches!(name, "npm" | "pnpm" | "yarn" | "cargo" | "gem" | "twine" | "poetry")
        && matches!(sub, "publish" | "push" | "upload"))
        || (name == "rsync" && args.iter().any(|a| !a.starts_with('-') && a.contains(':')))
    {
        acc.add(Risk::High, "publishes or sends files to a remote");
        return;
    }
    if args.len() == 1 && matches!(args[0], "--version" | "-V" | "--help" | "-h") {
        return;
    }
    if SYSTEM.contains(&name) {
        acc.add(Risk::High, "changes the system");
        return;
    }
    if name == "git" {
        git(invocation, acc);
        return;
    }
    if name == "rm" || name == "rmdir" || name == "unlink" || name == "shred" {
        let targets = args.iter().filter(|a| !a.starts_with('-')).count();
        let recursive = args.iter().any(|a| {
            *a == "--recursive"
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && (a.contains('r') || a.contains('R')))
        });
        let globbed = invocation.program.iter().skip(1).any(|w| w.glob || w.dynamic);
        if recursive || globbed {
            acc.add(Risk::High, "deletes a directory tree or a pattern of files");
        } else {
            acc.add(
                Risk::Medium,
                format!("deletes {targets} file{}", if targets == 1 { "" } else { "s" }),
            );
        }
        return;
    }
    if name == "find" && args.iter().any(|a| matches!(*a, "-delete" | "-exec" | "-execdir")) {
        acc.add(Risk::High, "find deletes or runs commands on many files");
        return;
    }
    if NETWORK.contains(&name) {
        let sends = args.iter().any(|a| {
            matches!(
                *a,
                "-d" | "--data"
                    | "--data-binary"
                    | "--data-raw"
                    | "-F"
                    | "--form"
                    | "-T"
                    | "--upload-file"
                    | "--post-data"
                    | "--post-file"
            ) || a.starts_with("--data")
        }) || args
            .windows(2)
            .any(|w| matches!(w[0], "-X" | "--request") && !w[1].eq_ignore_ascii_case("GET"));
        if sends || matches!(name, "ssh" | "scp" | "sftp" | "nc" | "ncat" | "telnet" | "ftp") {
            acc.add(Risk::High, "sends data over the network");
        } else {
            acc.add(Risk::Medium, "network");
        }
        return;
    }
    if PROCESS.contains(&name) {
        acc.add(Risk::Medium, "stops processes");
        return;
    }
    if name == "chmod" || name == "chown" || name == "chgrp" {
        let recursive = args.iter().any(|a| *a == "-R" || *a == "--recursive");
        acc.add(if recursive { Risk::High } else { Risk::Medium }, "changes permissions");
        return;
    }
    if name == "docker" || name == "podman" || name == "kubectl" {
        let sub = args.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
        if matches!(sub, "ps" | "images" | "logs" | "inspect" | "version" | "get" | "describe") {
            return;
        }
        acc.add(
            if matches!(sub, "rm" | "rmi" | "delete" | "apply" | "push" | "system") {
                Risk::High
            } else {
                Risk::Medium
            },
            "manages containers or clusters",
        );
        return;
    }
    if mode::is_read_only(invocation) {
        return;
    }
    if WRITERS.contains(&name) {
        if name != "sed" || args.iter().any(|a| a.starts_with("-i")) {
            acc.add(Risk::Medium, "writes files");
        }
        return;
    }
    if BUILD.contains(&name) {
        return;
    }
    if matches!(name, "python" | "python3" | "node" | "ruby" | "perl" | "php" | "deno") {
        acc.add(Risk::Medium, "runs a script");
        return;
    }
    if matches!(name, "sh" | "bash" | "zsh" | "dash" | "eval" | "xargs" | "env" | "watch" | "exec")
    {
        return; // what they run is classified on its own
    }
    if matches!(
        name,
        "sort"
            | "uniq"
            | "awk"
            | "xxd"
            | "od"
            | "hexdump"
            | "strings"
            | "yes"
            | "export"
            | "set"
            | "unset"
            | "source"
            | "."
            | "rustc"
            | "rustup"
            | "man"
            | "history"
            | "ps"
            | "top"
            | "env"
            | "lsof"
            | "free"
            | "uptime"
            | "ss"
            | "netstat"
            | "npx"
            | "printenv"
    ) {
        return;
    }
    acc.add(Risk::Medium, format!("runs `{name}`, which the classifier does not know"));
}

fn git(invocation: &Invocation, acc: &mut Acc) {
    let Some((sub, args)) = git_subcommand(invocation) else { return };
    let has = |flag: &str| args.contains(&flag);
    match sub {
        "push" => acc.add(Risk::High, "publishes to a remote"),
        "reset" if has("--hard") => acc.add(Risk::High, "discards uncommitted work"),
        "clean" if args.iter().any(|a| a.starts_with('-') && a.contains('f')) => {
            acc.add(Risk::High, "deletes untracked files")
        }
        "checkout" | "restore" if has("--") || has(".") => {
            acc.add(Risk::High, "discards uncommitted work")
        }
        "branch" if has("-D") || has("--delete") || has("-d") => {
            acc.add(Risk::High, "deletes a branch")
        }
        "stash" if args.first().is_some_and(|a| matches!(*a, "drop" | "clear")) => {
            acc.add(Risk::High, "discards stashed work")
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "submodule" => acc.add(Risk::Medium, "network"),
        "rebase" | "merge" | "cherry-pick" | "revert" | "am" | "filter-branch" => {
            acc.add(Risk::Medium, "rewrites or merges history")
        }
        "config"
            if !args
                .first()
                .is_some_and(|a| a.starts_with("--get") || *a == "--list" || *a == "-l") =>
        {
            acc.add(Risk::Medium, "changes git configuration")
        }
        "remote"
            if args.first().is_some_and(|a| matches!(*a, "add" | "set-url" | "remove" | "rm")) =>
        {
            acc.add(Risk::Medium, "changes remotes")
        }
        "tag" if args.contains(&"-d") => acc.add(Risk::Medium, "deletes a tag"),
        _ => {}
    }
}
