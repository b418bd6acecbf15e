//! git as it parses itself: global options, the subcommand, force pushes and ways to run code.

use crate::command::Invocation;

/// Global options followed by a value word (`-C dir`, `-c key=value`).
const GLOBAL_VALUES: &[&str] = &[
    "-C",
    "-c",
    "--config-env",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--list-cmds",
    "--attr-source",
];
/// Global options without a value.
const GLOBAL_FLAGS: &[&str] = &[
    "-p",
    "-P",
    "--paginate",
    "--no-pager",
    "--no-replace-objects",
    "--bare",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
    "--html-path",
    "--man-path",
    "--info-path",
    "--version",
    "--help",
    "-v",
    "-h",
    "--exec-path",
];
/// `-c` keys that cannot make git run a program, push differently or read elsewhere.
const HARMLESS_KEYS: &[&str] = &[
    "user.",
    "color.",
    "advice.",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "init.defaultbranch",
    "commit.gpgsign",
    "tag.gpgsign",
    "gc.auto",
    "log.",
    "merge.conflictstyle",
    "pull.rebase",
    "rebase.autosquash",
    "diff.renames",
    "status.",
    "column.ui",
    "i18n.",
    "maintenance.auto",
    "core.abbrev",
    "safe.directory",
    "init.",
];
/// Keys of `git config` (and `-c`) that make later git commands run programs or push more.
const CODE_KEYS: &[&str] = &[
    "core.hookspath",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.fsmonitor",
    "core.askpass",
    "core.gitproxy",
    "core.worktree",
    "alias.",
    "pager.",
    "diff.",
    "merge.",
    "filter.",
    "credential.",
    "include.",
    "includeif.",
    "sequence.editor",
    "gpg.",
    "remote.",
    "url.",
    "protocol.",
    "uploadpack.",
    "receive.",
    "help.autocorrect",
    "difftool.",
    "mergetool.",
    "interactive.difffilter",
    "web.browser",
    "sendemail.",
    "http.",
    "push.",
    "submodule.",
    "core.attributesfile",
    "core.excludesfile",
];

/// Index (into `args`, after `git`) of the subcommand; `None` when a global option is not
/// understood or there is none.
pub fn subcommand_index(args: &[&str]) -> Option<usize> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let option = a.split_once('=').map_or(*a, |(o, _)| o);
        if GLOBAL_VALUES.contains(a) {
            i += 2;
        } else if (a.starts_with("--")
            && a.contains('=')
            && (GLOBAL_VALUES.contains(&option) || option == "--exec-path"))
            || a.starts_with("-C")
            || (a.starts_with("-c") && a.len() > 2)
            || GLOBAL_FLAGS.contains(a)
        {
            i += 1;
        } else if a.starts_with('-') {
            return None;
        } else {
            return Some(i);
        }
    }
    None
}

/// `git <global options> <subcommand> <args…>`.
pub fn git_subcommand(invocation: &Invocation) -> Option<(&str, Vec<&str>)> {
    let args: Vec<&str> = invocation.args().collect();
    let i = subcommand_index(&args)?;
    Some((args[i], args[i + 1..].to_vec()))
}

/// `git push` that rewrites remote history, in any spelling git accepts: `-f` in a cluster,
/// `--force`, `--force-with-lease[=…]`, `--force-if-includes`, `--mirror`, `--prune`, their
/// unique abbreviations (`--forc`, `--mi`), or a `+refspec`. (Deleting one branch, `-d` or
/// `:branch`, is a push like any other: asked in full mode, refused in edit without a rule.)
pub fn is_force_push(invocation: &Invocation) -> bool {
    let Some(("push", args)) = git_subcommand(invocation) else { return false };
    const FORCING: &[&str] = &["force", "force-with-lease", "force-if-includes", "mirror", "prune"];
    let mut after_dashdash = false;
    for a in args {
        if a == "--" {
            after_dashdash = true;
            continue;
        }
        let forcing = if !after_dashdash && let Some(long) = a.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            name.len() >= 2 && FORCING.iter().any(|f| f.starts_with(name))
        } else {
            (!after_dashdash && a.starts_with('-') && a.contains('f'))
                || a.starts_with('+')
                || a.contains(":+")
        };
        if forcing {
            return true;
        }
    }
    false
}

/// Why a git command can run a program the policy does not see, if it can.
pub fn runs_code(invocation: &Invocation) -> Option<String> {
    let args: Vec<&str> = invocation.args().collect();
    let Some(sub_at) = subcommand_index(&args) else {
        return Some(
            "git's options are not understood (an option that runs code, or no subcommand)".into(),
        )
        .filter(|_| {
            !args.iter().all(|a| matches!(*a, "--version" | "--help" | "-v" | "-h" | "--exec-path"))
        });
    };
    let mut i = 0;
    while i < sub_at {
        let a = args[i];
        let value = match a {
            "-c" | "--config-env" => args.get(i + 1).copied().unwrap_or(""),
            _ if a.starts_with("--config-env=") => &a["--config-env=".len()..],
            _ if a.starts_with("-c") && a.len() > 2 => &a[2..],
            _ if a.starts_with("--exec-path=") => {
                return Some(
                    "`git --exec-path=…` runs git's programs from another directory".into(),
                );
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let key = value.split_once('=').map_or(value, |(k, _)| k).to_ascii_lowercase();
        if a.starts_with("--config-env")
            || !HARMLESS_KEYS.iter().any(|h| key == *h || h.ends_with('.') && key.starts_with(h))
        {
            return Some(format!("`git -c {key}` can make git run programs or push differently"));
        }
        i += 2;
    }
    let sub = args[sub_at];
    let rest = &args[sub_at + 1..];
    let has = |names: &[&str]| {
        rest.iter().any(|a| {
            names
                .iter()
                .any(|n| *a == *n || (n.starts_with("--") && a.starts_with(&format!("{n}="))))
        })
    };
    match sub {
        "config" => config_sets_code(rest)
            .map(|key| format!("`git config {key}` makes later git commands run programs")),
        "rebase"
            if has(&["-x", "--exec"])
                || rest.iter().any(|a| a.starts_with("-x") || a.starts_with("--exec")) =>
        {
            Some("`git rebase --exec` runs a command".into())
        }
        "bisect" if rest.first() == Some(&"run") => Some("`git bisect run` runs a command".into()),
        "submodule" if rest.contains(&"foreach") => {
            Some("`git submodule foreach` runs a command".into())
        }
        "help" if rest.iter().any(|a| matches!(*a, "-w" | "--web" | "-i" | "--info")) => {
            Some("`git help --web` starts a browser program".into())
        }
        "apply" | "am" if rest.iter().any(|a| a.starts_with("--unsafe")) => {
            Some(format!("`git {sub} --unsafe-paths` writes outside the repository"))
        }
        "credential" | "credential-store" | "credential-cache" | "web--browse" => {
            Some(format!("`git {sub}` runs credential helpers or a browser"))
        }
        "filter-branch" | "filter-repo" | "difftool" | "mergetool" | "instaweb" | "daemon"
        | "send-email" | "p4" | "svn" | "cvsimport" => {
            Some(format!("`git {sub}` runs other programs"))
        }
        "grep" if rest.iter().any(|a| a.starts_with("-O") || a.starts_with("--open")) => {
            Some("`git grep -O` runs a pager program".into())
        }
        _ if rest.iter().any(|a| {
            a.starts_with("--upload-pack")
                || a.starts_with("--receive-pack")
                || a.starts_with("--exec=")
                || *a == "--exec"
                || a.starts_with("--template")
                || a.starts_with("--config")
                || a.starts_with("ext::")
                || a.starts_with("fd::")
                || a.starts_with("--ext-diff")
                || a.starts_with("--textconv")
        }) =>
        {
            Some(format!("`git {sub}` is given a program to run"))
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "archive"
            if rest.iter().any(|a| {
                *a == "-u"
                    || (a.starts_with("-u") && sub == "clone")
                    || (*a == "-c" && sub == "clone")
            }) =>
        {
            Some(format!("`git {sub}` is given a program or config to run"))
        }
        _ => None,
    }
}

/// The key `git config` would set, when it is one that runs code.
fn config_sets_code(rest: &[&str]) -> Option<String> {
    let reads = rest.iter().any(|a| {
        matches!(
            *a,
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "--list"
                | "-l"
                | "get"
                | "list"
                | "--show-origin"
                | "--show-scope"
                | "--name-only"
        )
    });
    if reads {
        return None;
    }
    let mut words = rest.iter();
    let mut key = None;
    while let Some(a) = words.next() {
        if matches!(
            *a,
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" | "--value"
        ) {
            words.next();
        } else if !a.starts_with('-') && !matches!(*a, "set" | "unset" | "--add") {
            key = Some(*a);
            break;
        }
    }
    let key = key?;
    let key = key.to_ascii_lowercase();
    CODE_KEYS.iter().any(|k| key == *k || (k.ends_with('.') && key.starts_with(k))).then_some(key)
}

/// Files `git config` writes outside the repository: `--global`, `--system`, `--file F`.
pub fn config_write_targets(invocation: &Invocation) -> Vec<String> {
    let Some(("config", rest)) = git_subcommand(invocation) else { return Vec::new() };
    let reads = rest.iter().any(|a| {
        matches!(*a, "--get" | "--get-all" | "--get-regexp" | "--list" | "-l" | "get" | "list")
    });
    if reads || rest.iter().all(|a| a.starts_with('-')) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, a) in rest.iter().enumerate() {
        match *a {
            "--global" => out.push("~/.gitconfig".to_owned()),
            "--system" => out.push("/etc/gitconfig".to_owned()),
            "--file" | "-f" => out.extend(rest.get(i + 1).map(|f| (*f).to_owned())),
            _ if a.starts_with("--file=") => out.push(a["--file=".len()..].to_owned()),
            _ => {}
        }
    }
    out
}

/// The directories of `git -C DIR`.
pub fn chdirs(invocation: &Invocation) -> Vec<String> {
    let args: Vec<&str> = invocation.args().collect();
    let end = subcommand_index(&args).unwrap_or(args.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        if args[i] == "-C" {
            out.extend(args.get(i + 1).map(|d| (*d).to_owned()));
            i += 2;
        } else {
            if let Some(d) = args[i].strip_prefix("-C").filter(|d| !d.is_empty()) {
                out.push(d.to_owned());
            }
            i += 1;
        }
    }
    out
}

/// Directories git creates: `git init DIR`, `git clone URL DIR`, `git worktree add DIR`.
pub fn created_dirs(invocation: &Invocation) -> Vec<String> {
    let Some((sub, rest)) = git_subcommand(invocation) else { return Vec::new() };
    let positional: Vec<&str> = rest.iter().copied().filter(|a| !a.starts_with('-')).collect();
    match sub {
        "init" => positional.first().map(|d| vec![(*d).to_owned()]).unwrap_or_default(),
        "clone" => positional.get(1).map(|d| vec![(*d).to_owned()]).unwrap_or_default(),
        "worktree" if positional.first() == Some(&"add") => {
            // `-b NAME` / `-B NAME` / `--reason TEXT` take a value.
            let mut words = rest.iter().skip_while(|a| **a != "add").skip(1);
            while let Some(a) = words.next() {
                match *a {
                    "-b" | "-B" | "--reason" => {
                        words.next();
                    }
                    _ if a.starts_with('-') => {}
                    _ => return vec![(*a).to_owned()],
                }
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}
