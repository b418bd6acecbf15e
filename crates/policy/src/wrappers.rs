//! Programs that run another program from their arguments: their options, as each parses them.

use crate::shell::Word;

/// How a wrapper's words split into its own options and the wrapped command.
pub(crate) enum Stripped {
    /// The wrapped command, and the values of the wrapper's options (paths are checked).
    Wrapped { rest: Vec<Word>, values: Vec<Word> },
    /// The wrapper runs nothing (`command -v x`, `env` alone).
    Nothing { values: Vec<Word> },
    /// An option the policy does not understand, or one that changes what runs.
    Opaque(String),
}

/// One wrapper's option syntax.
struct Spec {
    /// Options without a value.
    flags: &'static [&'static str],
    /// Options followed by a value (`-n 5`, `-n5`, `--adjustment=5`).
    values: &'static [&'static str],
    /// Options the policy refuses to look past (they change the directory, write a file…).
    refused: &'static [&'static str],
    /// Positional words before the command (`timeout DURATION`, `chroot DIR`).
    positionals: usize,
}

/// Wrappers whose options are parsed here; `env`'s assignments are handled by the caller.
pub(crate) const WRAPPERS: &[&str] = &[
    "env", "time", "nohup", "nice", "timeout", "stdbuf", "command", "builtin", "exec", "sudo",
    "doas", "pkexec", "run0", "setsid", "xargs", "ionice", "su", "taskset", "busybox", "sudo-rs",
    "runuser", "gosu", "su-exec", "sudoedit",
];

/// Programs that run other programs in ways not looked through: a line using one is asked.
pub(crate) const RUNS_OTHERS: &[&str] = &[
    "parallel",
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "lldb",
    "script",
    "flock",
    "systemd-run",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "fakechroot",
    "torsocks",
    "torify",
    "proxychains",
    "proxychains4",
    "chrt",
    "prlimit",
    "unbuffer",
    "expect",
    "tmux",
    "screen",
    "dtach",
    "entr",
    "rlwrap",
    "catchsegv",
    "faketime",
    "numactl",
    "cpulimit",
    "at",
    "batch",
    "unshare",
    "nsenter",
    "chroot",
    "setpriv",
    "capsh",
    "sg",
    "newgrp",
    "machinectl",
    "dbus-launch",
    "xvfb-run",
    "direnv",
    "trap",
    "enable",
    "bind",
    "complete",
    "fc",
    "hash",
    "coproc",
    "nix-shell",
    "doas-keepenv",
    "ssh-agent",
    "flatpak-spawn",
    "alias",
];

fn spec(name: &str) -> Spec {
    let s = |flags, values, refused, positionals| Spec { flags, values, refused, positionals };
    match name {
        "env" => s(
            &["-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"],
            &["-u", "--unset"],
            &["-C", "--chdir", "-S", "--split-string", "-P"],
            0,
        ),
        "time" => s(
            &["-p", "-v", "--verbose", "-q", "--quiet", "--portability"],
            &["-f", "--format"],
            &["-o", "--output", "-a", "--append"],
            0,
        ),
        "nohup" | "builtin" | "busybox" => s(&[], &[], &[], 0),
        "nice" => s(&[], &["-n", "--adjustment"], &[], 0),
        "timeout" => s(
            &["--preserve-status", "--foreground", "-v", "--verbose"],
            &["-s", "--signal", "-k", "--kill-after"],
            &[],
            1,
        ),
        "stdbuf" => s(&[], &["-i", "-o", "-e", "--input", "--output", "--error"], &[], 0),
        "command" => s(&["-p", "-v", "-V"], &[], &[], 0),
        "exec" => s(&["-c", "-l"], &["-a"], &[], 0),
        "setsid" => s(&["-c", "--ctty", "-f", "--fork", "-w", "--wait"], &[], &[], 0),
        "xargs" => s(
            &[
                "-0",
                "--null",
                "-r",
                "--no-run-if-empty",
                "-t",
                "--verbose",
                "-p",
                "--interactive",
                "-x",
                "--exit",
                "-o",
                "--open-tty",
            ],
            &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-L",
                "-l",
                "-d",
                "-E",
                "-e",
                "-s",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-lines",
                "--replace",
                "--eof",
                "--max-chars",
                "--process-slot-var",
            ],
            &[],
            0,
        ),
        "ionice" => {
            s(&["-t", "--ignore"], &["-c", "--class", "-n", "--classdata"], &["-p", "-P", "-u"], 0)
        }
        "taskset" => s(&["-a", "--all-tasks", "-c", "--cpu-list"], &[], &["-p", "--pid"], 1),
        // Privilege programs are refused by their name whatever their options.
        _ => s(
            &[],
            &[
                "-u",
                "-g",
                "-C",
                "-h",
                "-p",
                "-D",
                "-r",
                "-t",
                "-T",
                "-U",
                "-c",
                "--command",
                "-s",
                "--shell",
                "-G",
                "--user",
            ],
            &[],
            0,
        ),
    }
}

/// Splits a wrapper's arguments (`args`, after its name) into its options and the command.
pub(crate) fn strip(name: &str, args: &[Word], assignments: &mut Vec<Word>) -> Stripped {
    let spec = spec(name);
    let privileged = crate::invariants::PRIVILEGE.contains(&name);
    let mut values = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let t = word.text.as_str();
        if word.dynamic && t.starts_with('-') {
            return Stripped::Opaque(format!("`{name}` has an option only known at run time"));
        }
        if t == "--" {
            i += 1;
            break;
        }
        if name == "env" && is_assignment_text(t) {
            assignments.push(word.clone());
            i += 1;
            continue;
        }
        if !t.starts_with('-') || t == "-" && name != "env" {
            break;
        }
        if name == "nice" && t[1..].chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let (option, joined) = match t.split_once('=') {
            Some((o, v)) if t.starts_with("--") => (o, Some(v)),
            _ => (t, None),
        };
        if spec
            .refused
            .iter()
            .any(|r| option == *r || (!r.starts_with("--") && option.starts_with(r)))
        {
            return Stripped::Opaque(format!(
                "`{name} {option}` changes how or where the command runs"
            ));
        }
        if spec.flags.contains(&option) {
            i += 1;
        } else if spec.values.contains(&option) {
            if let Some(v) = joined {
                values.push(Word { text: v.to_owned(), ..word.clone() });
                i += 1;
            } else {
                values.extend(args.get(i + 1).cloned());
                i += 2;
            }
        } else if let Some(short) =
            spec.values.iter().find(|v| !v.starts_with("--") && option.starts_with(**v))
        {
            values.push(Word { text: option[short.len()..].to_owned(), ..word.clone() });
            i += 1;
        } else if privileged {
            i += 1;
        } else {
            return Stripped::Opaque(format!("`{name}` option `{option}` is not understood"));
        }
    }
    for _ in 0..spec.positionals {
        values.extend(args.get(i).cloned());
        i += 1;
    }
    if name == "command" && args.iter().any(|w| matches!(w.text.as_str(), "-v" | "-V")) {
        return Stripped::Nothing { values };
    }
    match args.get(i..) {
        Some(rest) if !rest.is_empty() => Stripped::Wrapped { rest: rest.to_vec(), values },
        _ => Stripped::Nothing { values },
    }
}

/// `NAME=value` (a valid shell name before `=`).
pub(crate) fn is_assignment_text(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}
