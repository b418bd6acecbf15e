//! What common developer tools do beyond their operands: options that run code, and writes
//! to the person's config and credential files that no path in the line names.

use crate::command::Invocation;

/// The arguments before `--`.
fn options(invocation: &Invocation) -> Vec<&str> {
    invocation.args().take_while(|a| *a != "--").collect()
}

/// `--name=VALUE`, `--name VALUE` or a GNU abbreviation of `--name` (at least `min` letters).
fn long_given(args: &[&str], name: &str, min: usize) -> bool {
    args.iter().any(|a| {
        let given = a.strip_prefix("--").map(|g| g.split_once('=').map_or(g, |(k, _)| k));
        given.is_some_and(|g| g.len() >= min && name.starts_with(g))
    })
}

/// A short option letter given alone or in a cluster of flags (`-I`, `-xI`).
fn short_given(args: &[&str], letter: char) -> bool {
    args.iter().any(|a| {
        a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(letter)
    })
}

/// The program's subcommand words (its arguments that are not options), in order.
fn words(invocation: &Invocation) -> Vec<&str> {
    invocation.args().filter(|a| !a.starts_with('-')).collect()
}

/// Why the program can run a command the policy does not see through one of its options.
pub fn runs_code(invocation: &Invocation) -> Option<String> {
    const NAMES: &[&str] = &[
        "tar", "gtar", "bsdtar", "sort", "ssh", "scp", "sftp", "rsync", "sqlite3", "make", "gmake",
        "gh", "deno", "vim", "vi", "nvim", "ex", "view", "vimdiff",
    ];
    let name = invocation.name();
    if !NAMES.contains(&name) {
        return None;
    }
    let args = options(invocation);
    let found = match name {
        // tar's filters, checkpoint actions, volume scripts and remote shells are programs.
        "tar" | "gtar" | "bsdtar" => [
            "to-command",
            "use-compress-program",
            "checkpoint-action",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "rmt-command",
        ]
        .iter()
        .find(|o| long_given(&args, o, 3))
        .map(|o| format!("--{o}"))
        .or_else(|| short_given(&args, 'I').then(|| "-I".to_owned()))
        .or_else(|| short_given(&args, 'F').then(|| "-F".to_owned())),
        "sort" => long_given(&args, "compress-program", 3).then(|| "--compress-program".to_owned()),
        // ssh's options that run a local command; `scp -S` / `rsync -e` pick the program.
        "ssh" | "scp" | "sftp" | "rsync" => args
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                let value = match *a {
                    "-o" => args.get(i + 1).copied().unwrap_or(""),
                    _ => a.strip_prefix("-o").unwrap_or(""),
                }
                .to_ascii_lowercase();
                ["proxycommand", "localcommand", "knownhostscommand", "permitlocalcommand", "match"]
                    .iter()
                    .any(|k| value.starts_with(k))
                    .then(|| format!("-o {value}"))
            })
            .or_else(|| {
                let picks = match name {
                    "scp" | "sftp" => short_given(&args, 'S'),
                    "rsync" => {
                        short_given(&args, 'e')
                            || long_given(&args, "rsh", 3)
                            || long_given(&args, "rsync-path", 7)
                    }
                    _ => false,
                };
                picks.then(|| "the remote shell program".to_owned())
            }),
        // Dot-commands run programs, write, read or load files wherever they name.
        "sqlite3" => invocation
            .args()
            .find(|a| {
                a.lines().any(|l| {
                    let l = l.trim_start();
                    [
                        ".shell", ".system", ".output", ".once", ".load", ".import", ".read",
                        ".save", ".backup", ".excel", ".open",
                    ]
                    .iter()
                    .any(|c| l.starts_with(c))
                })
            })
            .map(|_| "a dot-command".to_owned()),
        "make" | "gmake" => args
            .iter()
            .find(|a| {
                a.starts_with("--eval") || a.starts_with("SHELL=") || a.starts_with("MAKESHELL=")
            })
            .map(|a| (*a).to_owned()),
        // A script fetched from the network and run at once.
        "deno" => invocation
            .args()
            .find(|a| {
                a.starts_with("http://")
                    || a.starts_with("https://")
                    || a.starts_with("npm:")
                    || a.starts_with("jsr:")
            })
            .map(|u| format!("{u:?} (a script from the network)")),
        // Editor commands (`-c 'w ~/.bashrc'`, `+'!id'`, `-S script`) are code.
        "vim" | "vi" | "nvim" | "ex" | "view" | "vimdiff" => args
            .iter()
            .find(|a| {
                a.starts_with('+')
                    || matches!(**a, "-c" | "--cmd" | "-S" | "-s" | "-W" | "-w")
                    || a.starts_with("-S") && a.len() > 2
            })
            .map(|a| format!("{a} (editor commands)")),
        "gh" => match words(invocation).as_slice() {
            ["extension" | "extensions" | "ext", "install" | "upgrade" | "exec", ..] => {
                Some("extension install".to_owned())
            }
            _ => None,
        },
        _ => None,
    };
    found.map(|what| format!("`{name}` {what} runs a program the policy does not see"))
}

/// Why the program writes or reveals the person's config or credentials outside the worktree
/// with no path in the line: `npm login`, `gh auth token`, `git lfs install`…
pub fn touches_home_config(invocation: &Invocation) -> Option<(&'static str, String)> {
    const NAMES: &[&str] = &[
        "npm", "pnpm", "yarn", "pip", "pip3", "pipx", "uv", "cargo", "docker", "podman", "helm",
        "gh", "git", "crontab", "at", "batch",
    ];
    let name = invocation.name();
    if !NAMES.contains(&name) {
        return None;
    }
    let args = options(invocation);
    let sub = words(invocation);
    let first = |n: usize| sub.get(n).copied().unwrap_or("");
    let global = args
        .iter()
        .any(|a| matches!(*a, "-g" | "--global" | "--location=global" | "--location=user"));
    let what = match name {
        "npm" | "pnpm" | "yarn" => match first(0) {
            "config" | "c" if matches!(first(1), "set" | "delete" | "edit" | "rm" | "fix") => {
                Some("its config (~/.npmrc)")
            }
            "set" | "login" | "adduser" | "add-user" | "logout" | "token" => {
                Some("its credentials (~/.npmrc)")
            }
            "link" | "ln" if sub.len() == 1 => Some("the global prefix"),
            "install" | "i" | "add" | "uninstall" | "remove" | "rm" | "update" | "up" if global => {
                Some("the global prefix")
            }
            _ => None,
        },
        "pip" | "pip3" | "pipx" | "uv" => match first(0) {
            "config" if matches!(first(1), "set" | "unset" | "edit") => {
                Some("its config (~/.config/pip)")
            }
            "install" if args.contains(&"--user") || name == "pipx" => {
                Some("the user's site-packages")
            }
            _ => None,
        },
        "cargo" => match first(0) {
            "login" | "logout" | "owner" => {
                Some("its registry credentials (~/.cargo/credentials.toml)")
            }
            _ => None,
        },
        "docker" | "podman" | "helm" => match first(0) {
            "login" | "logout" => Some("its registry credentials (~/.docker/config.json)"),
            _ => None,
        },
        "gh" => match (first(0), first(1)) {
            ("auth", "token") => Some("the GitHub token"),
            ("auth", "status") if args.iter().any(|a| a.starts_with("--show-t") || *a == "-t") => {
                Some("the GitHub token")
            }
            ("auth", "login" | "logout" | "refresh" | "setup-git" | "switch") => {
                Some("its credentials (~/.config/gh)")
            }
            _ => None,
        },
        "git" => match crate::git::git_subcommand(invocation) {
            Some(("lfs", rest))
                if rest.first() == Some(&"install")
                    && !rest.iter().any(|a| matches!(*a, "--local" | "--worktree")) =>
            {
                Some("the global git config")
            }
            Some(("lfs", rest)) if rest.first() == Some(&"uninstall") => {
                Some("the global git config")
            }
            Some(("maintenance", rest))
                if matches!(
                    rest.first(),
                    Some(&("start" | "register" | "unregister" | "stop"))
                ) =>
            {
                Some("the global git config and the system scheduler")
            }
            _ => None,
        },
        "crontab" | "at" | "batch" => Some("the person's scheduled jobs"),
        _ => None,
    }?;
    let invariant =
        if what.contains("token") { "protected-path" } else { "write-outside-worktree" };
    let shown = sub.first().map_or_else(|| name.to_owned(), |s| format!("{name} {s}"));
    Some((
        invariant,
        format!(
            "`{shown}` changes or reveals {what}, outside this session's worktree; a person decides."
        ),
    ))
}

/// Paths written by tools whose destination is an option or an operand in a place of its
/// own: `uniq IN OUT`, `gzip FILE`, `openssl -out F`, `git bundle create F`, `cargo
/// --target-dir D`, `npm --prefix D`, `make -C D`, `sort -uoF`.
pub fn written(invocation: &Invocation) -> Vec<(String, bool)> {
    const NAMES: &[&str] = &[
        "uniq",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "lzma",
        "unlzma",
        "zstd",
        "unzstd",
        "lz4",
        "compress",
        "uncompress",
        "openssl",
        "git",
        "cargo",
        "npm",
        "pnpm",
        "yarn",
        "pip",
        "pip3",
        "make",
        "gmake",
        "sort",
        "shuf",
        "history",
        "mktemp",
    ];
    let name = invocation.name();
    if !NAMES.contains(&name) {
        return Vec::new();
    }
    let words = &invocation.program;
    let value_of = |names: &[&str]| -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for (i, w) in words.iter().enumerate().skip(1) {
            for n in names {
                if w.text == *n {
                    out.extend(words.get(i + 1).map(|v| (v.text.clone(), v.dynamic)));
                } else if let Some(v) = w.text.strip_prefix(n).and_then(|v| v.strip_prefix('=')) {
                    out.push((v.to_owned(), w.dynamic));
                } else if n.len() == 2
                    && !n.starts_with("--")
                    && let Some(v) = w.text.strip_prefix(n).filter(|v| !v.is_empty())
                {
                    out.push((v.to_owned(), w.dynamic));
                }
            }
        }
        out
    };
    let operands: Vec<(String, bool)> = words
        .iter()
        .skip(1)
        .filter(|w| !w.text.starts_with('-') || w.text == "-")
        .map(|w| (w.text.clone(), w.dynamic))
        .collect();
    let args = options(invocation);
    match name {
        "uniq" => operands.get(1).cloned().into_iter().collect(),
        // Compressors replace their operands unless they write to stdout or only test/list.
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "lzma" | "unlzma" | "zstd"
        | "unzstd" | "lz4" | "compress" | "uncompress" => {
            let to_stdout = short_given(&args, 'c')
                || short_given(&args, 't')
                || short_given(&args, 'l')
                || args
                    .iter()
                    .any(|a| matches!(*a, "--stdout" | "--to-stdout" | "--test" | "--list"));
            let mut out = value_of(&["-o", "--output"]);
            if !to_stdout {
                out.extend(operands.into_iter().filter(|(t, _)| t != "-"));
            }
            out
        }
        "openssl" => value_of(&["-out", "-keyout", "-signkey"]),
        "git" => match crate::git::git_subcommand(invocation) {
            Some(("bundle", rest)) if rest.first() == Some(&"create") => rest
                .iter()
                .skip(1)
                .find(|a| !a.starts_with('-'))
                .map(|f| ((*f).to_owned(), invocation.dynamic))
                .into_iter()
                .collect(),
            // `git init|clone --separate-git-dir=D` puts the repository at D.
            Some(("init" | "clone", _)) => value_of(&["--separate-git-dir"]),
            // `git clean` deletes what its pathspecs name (`git clean -fdx ..`).
            Some(("clean", rest)) => {
                let mut skip = false;
                let mut out = Vec::new();
                for a in rest {
                    if skip {
                        skip = false;
                    } else if matches!(a, "-e" | "--exclude") {
                        skip = true;
                    } else if !a.starts_with('-') {
                        out.push((a.to_owned(), invocation.dynamic));
                    }
                }
                out
            }
            _ => Vec::new(),
        },
        "cargo" => {
            let mut out = value_of(&["--target-dir", "--artifact-dir", "--out-dir", "--root"]);
            if operands.first().is_some_and(|(s, _)| s == "new" || s == "init") {
                out.extend(operands.get(1).cloned());
            }
            out
        }
        "npm" | "pnpm" | "yarn" => {
            value_of(&["--prefix", "-C", "--dir", "--cwd", "--global-dir", "--cache"])
        }
        "pip" | "pip3" => value_of(&["--target", "-t", "--prefix", "--root", "--src"]),
        "make" | "gmake" => value_of(&["-C", "--directory"]),
        // `history -w FILE` / `-a FILE` write the history there.
        "history" if args.iter().any(|a| a.starts_with('-') && a.contains(['w', 'a'])) => operands,
        "mktemp" => {
            let mut out = value_of(&["-p", "--tmpdir"]);
            out.extend(operands.into_iter().filter(|(t, _)| t.contains('/')));
            out
        }
        // A cluster ending in `o` takes the rest, or the next word, as the output (`-uo F`).
        "sort" | "shuf" => {
            let mut out = Vec::new();
            for (i, w) in words.iter().enumerate().skip(1) {
                let Some(cluster) = w.text.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
                    continue;
                };
                for (at, c) in cluster.char_indices() {
                    if (name == "sort" && "ktST".contains(c))
                        || (name == "shuf" && "in".contains(c))
                    {
                        break; // the rest is that option's value
                    }
                    if c == 'o' {
                        let rest = &cluster[at + 1..];
                        if rest.is_empty() {
                            out.extend(words.get(i + 1).map(|v| (v.text.clone(), v.dynamic)));
                        } else {
                            out.push((rest.to_owned(), w.dynamic));
                        }
                        break;
                    }
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The git working tree and repository directories named by `--work-tree` / `--git-dir`.
pub fn git_dirs(invocation: &Invocation) -> Vec<String> {
    let args: Vec<&str> = invocation.args().collect();
    let end = crate::git::subcommand_index(&args).unwrap_or(args.len());
    let mut out = Vec::new();
    for i in 0..end {
        for opt in ["--work-tree", "--git-dir"] {
            if args[i] == opt {
                out.extend(args.get(i + 1).map(|d| (*d).to_owned()));
            } else if let Some(d) = args[i].strip_prefix(opt).and_then(|d| d.strip_prefix('=')) {
                out.push(d.to_owned());
            }
        }
    }
    out
}
