//! Modes (readonly / edit / full) and the command families they treat differently.

use serde::{Deserialize, Serialize};

use crate::command::Invocation;

/// A named preset over rules (the seed's permission matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Reads only: writes, unknown commands, network and MCP are denied.
    Readonly,
    /// Edits in the worktree; unknown commands are asked; installs and pushes are denied
    /// unless a rule names them.
    #[default]
    Edit,
    /// Like edit, but installs and pushes are asked instead of denied. Nothing more is allowed
    /// without asking than in edit.
    Full,
}

impl Mode {
    /// `readonly`, `edit` or `full`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "readonly" => Some(Self::Readonly),
            "edit" => Some(Self::Edit),
            "full" => Some(Self::Full),
            _ => None,
        }
    }

    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Readonly => "readonly",
            Self::Edit => "edit",
            Self::Full => "full",
        }
    }
}

/// Commands that only read (with the argument checks in [`is_read_only`]).
const READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "which",
    "type",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "diff",
    "cmp",
    "cut",
    "tr",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "date",
    "whoami",
    "id",
    "uname",
    "test",
    "[",
    "[[",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "jq",
    "nl",
    "column",
    "hostname",
    "seq",
    "sleep",
    "cd",
    "pushd",
    "popd",
    "sha256sum",
    "md5sum",
    "less",
    "more",
    "find",
];
/// Read-only git subcommands.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "describe",
    "shortlog",
    "cat-file",
    "ls-tree",
    "merge-base",
    "grep",
    "reflog",
    "rev-list",
    "whatchanged",
];

/// True when the program only reads (its redirections are judged separately).
pub fn is_read_only(invocation: &Invocation) -> bool {
    let name = invocation.name();
    let args: Vec<&str> = invocation.args().collect();
    if name == "git" {
        return git_read_only(&args);
    }
    if !READ_ONLY.contains(&name) {
        return false;
    }
    match name {
        "find" => !args.iter().any(|a| {
            matches!(
                *a,
                "-delete"
                    | "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "rg" => !args.iter().any(|a| a.starts_with("--pre") || a.starts_with("--hostname-bin")),
        "less" | "more" => !args.iter().any(|a| a.starts_with('+') || a.starts_with("--lesskey")),
        "printf" => !args.iter().any(|a| a.starts_with("-v")),
        "date" => !args.iter().any(|a| a.starts_with("-s") || a.starts_with("--set")),
        "hostname" => args.iter().all(|a| a.starts_with('-')),
        "tree" => !args.iter().any(|a| a.starts_with("-o")),
        _ => true,
    }
}

/// `git <global options> <read-only subcommand>` without options that run programs or write.
fn git_read_only(args: &[&str]) -> bool {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match *a {
            "--no-pager" | "-P" | "--no-optional-locks" => i += 1,
            "-C" => i += 2,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else { return false };
    let rest = &args[i + 1..];
    // Options that write a file or run a program, and their unique abbreviations.
    const RISKY_LONG: &[&str] = &[
        "output",
        "output-directory",
        "open-files-in-pager",
        "ext-diff",
        "textconv",
        "exec",
        "upload-pack",
    ];
    let runs_or_writes = |a: &&str| match a.strip_prefix("--") {
        Some(long) => {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            name.len() >= 2 && RISKY_LONG.iter().any(|r| r.starts_with(name))
        }
        None => a.starts_with("-O") || *a == "-o",
    };
    if rest.iter().any(runs_or_writes) {
        return false;
    }
    match *sub {
        "branch" | "tag" => rest.iter().all(|a| {
            matches!(*a, "-a" | "-v" | "-vv" | "-r" | "--list" | "-l" | "--show-current" | "--all")
        }),
        "remote" => rest.iter().all(|a| *a == "-v"),
        "stash" => rest.first() == Some(&"list") || rest.first() == Some(&"show"),
        "config" => {
            rest.first().is_some_and(|a| matches!(*a, "--get" | "--list" | "-l" | "--get-all"))
                && !rest.iter().any(|a| {
                    matches!(*a, "--global" | "--system" | "--file" | "-f" | "--add" | "--unset")
                })
                && rest.len() <= 2
        }
        s => GIT_READ_ONLY.contains(&s),
    }
}

/// True when the program installs a dependency.
pub fn is_dependency_install(invocation: &Invocation) -> bool {
    let name = invocation.name();
    let args: Vec<&str> = invocation.args().filter(|a| !a.starts_with('-')).collect();
    let first = args.first().copied().unwrap_or("");
    match name {
        "npm" | "pnpm" => {
            matches!(first, "install" | "i" | "add" | "ci" | "update" | "up")
                || (first == "exec" || name == "npx")
        }
        "npx" | "bunx" | "pipx" => true,
        "yarn" | "bun" => {
            matches!(first, "add" | "install" | "global") || (name == "yarn" && args.is_empty())
        }
        "pip" | "pip3" | "gem" | "brew" | "apt" | "apt-get" | "dnf" | "yum" | "apk" | "pacman"
        | "conda" | "mamba" => {
            matches!(first, "install" | "add" | "-S")
        }
        "python" | "python3" => {
            let all: Vec<&str> = invocation.args().collect();
            all.windows(3).any(|w| w[0] == "-m" && w[1] == "pip" && w[2] == "install")
        }
        "uv" => {
            first == "add" || (first == "pip" && args.get(1) == Some(&"install")) || first == "tool"
        }
        "poetry" | "cargo" | "go" | "composer" | "bundle" | "dotnet" => {
            matches!(first, "add" | "install" | "get" | "require")
        }
        _ => false,
    }
}

/// True when the program publishes to a remote (`git push`).
pub fn is_push(invocation: &Invocation) -> bool {
    invocation.name() == "git"
        && crate::invariants::git_subcommand(invocation).is_some_and(|(sub, _)| sub == "push")
}
