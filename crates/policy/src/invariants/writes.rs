//! What a program writes or deletes: redirections, writers' operands, `rm -r`, `find -delete`.

use crate::command::Invocation;
use crate::shell::{RedirectKind, Word};

/// Programs that write or delete the paths they are given.
pub(crate) const WRITERS: &[&str] = &[
    "touch", "mkdir", "rmdir", "rm", "tee", "truncate", "chmod", "chown", "chgrp", "ln", "cp",
    "mv", "install", "unlink", "shred", "rsync", "dd", "sed", "patch", "tar", "unzip", "sort",
    "mkfifo", "mknod", "split", "csplit", "shuf",
];

/// Arguments that are not options (everything after `--`).
pub(super) fn positional(invocation: &Invocation) -> Vec<&Word> {
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

/// `rm -r`, `-R`, `--recursive` and its abbreviations (`--rec`), in clusters (`-rf`, `-fR`).
pub(super) fn is_recursive_rm(invocation: &Invocation) -> bool {
    invocation.args().take_while(|a| *a != "--").any(|a| match a.strip_prefix("--") {
        Some(long) => !long.is_empty() && "recursive".starts_with(long),
        None => a.starts_with('-') && (a.contains('r') || a.contains('R')),
    })
}

/// Trees deleted as a whole: `rm -r` operands and `find PATHS … -delete` starting points.
pub(super) fn deleted_trees(invocation: &Invocation) -> Vec<&Word> {
    match invocation.name() {
        "rm" if is_recursive_rm(invocation) => positional(invocation),
        "find" if invocation.args().any(|a| a == "-delete") || find_execs_writer(invocation) => {
            invocation
                .program
                .iter()
                .skip(1)
                .take_while(|w| {
                    !w.text.starts_with('-') && !matches!(w.text.as_str(), "(" | "!" | ",")
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn find_execs_writer(invocation: &Invocation) -> bool {
    let words: Vec<&str> = invocation.args().collect();
    words.windows(2).any(|w| {
        matches!(w[0], "-exec" | "-execdir" | "-ok" | "-okdir")
            && WRITERS.contains(&crate::command::basename(w[1]))
    })
}

/// Paths the program writes, with whether each is only known at run time: output
/// redirections and the operands of known writers.
pub(super) fn write_words(invocation: &Invocation) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = invocation
        .redirects
        .iter()
        .filter(|r| r.kind == RedirectKind::Write)
        .map(|r| (r.target.text.clone(), r.target.dynamic))
        .collect();
    let name = invocation.name();
    let operands: Vec<(String, bool)> =
        positional(invocation).into_iter().map(|w| (w.text.clone(), w.dynamic)).collect();
    // `git diff --output=f`, `--log-file=f`, … from any program, and their abbreviations
    // (`--outp=f`).
    out.extend(invocation.program.iter().skip(1).filter_map(|w| {
        let (name, value) = w.text.strip_prefix("--")?.split_once('=')?;
        let abbreviates = name.len() >= 3
            && ["output", "output-file", "log-file"].iter().any(|o| o.starts_with(name));
        abbreviates.then(|| (value.to_owned(), w.dynamic))
    }));
    out.extend(invocation.program.iter().skip(1).filter_map(|w| {
        [
            "--output=",
            "--output-file=",
            "--out-file=",
            "--outfile=",
            "--log-file=",
            "--output-directory=",
        ]
        .iter()
        .find_map(|p| w.text.strip_prefix(p))
        .map(|v| (v.to_owned(), w.dynamic))
    }));
    let option_value = |names: &[&str]| {
        let words = &invocation.program;
        words.iter().enumerate().skip(1).find_map(|(i, w)| {
            names.iter().find_map(|n| {
                if w.text == *n {
                    words.get(i + 1).map(|v| (v.text.clone(), v.dynamic))
                } else if n.starts_with("--") {
                    // GNU getopt takes any unique abbreviation (`--target=` for
                    // `--target-directory=`).
                    let (given, value) = w.text.split_once('=')?;
                    (given.len() >= 5 && n.starts_with(given))
                        .then(|| (value.to_owned(), w.dynamic))
                } else {
                    w.text
                        .strip_prefix(n)
                        .filter(|v| !v.is_empty() && n.len() == 2)
                        .map(|v| (v.to_owned(), w.dynamic))
                }
            })
        })
    };
    if crate::invariants::download::DOWNLOADERS.contains(&name) {
        let (names, _) = crate::invariants::download::download_outputs(invocation);
        out.extend(names.into_iter().map(|n| (n, invocation.dynamic)));
    }
    if name == "git" {
        out.extend(
            crate::git::created_dirs(invocation).into_iter().map(|t| (t, invocation.dynamic)),
        );
        out.extend(
            crate::git::config_write_targets(invocation)
                .into_iter()
                .map(|t| (t, invocation.dynamic)),
        );
        if let Some(("archive" | "format-patch" | "bundle", _)) =
            crate::git::git_subcommand(invocation)
        {
            out.extend(option_value(&["-o", "--output", "--output-directory"]));
        }
    }
    if name == "find" {
        let words = &invocation.program;
        for (i, w) in words.iter().enumerate() {
            if matches!(w.text.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
                out.extend(words.get(i + 1).map(|v| (v.text.clone(), v.dynamic)));
            }
        }
    }
    out.extend(crate::tools::written(invocation));
    if !WRITERS.contains(&name) {
        return out;
    }
    match name {
        // A hard link makes its source writable through the new name: both ends are written.
        "ln" if !invocation.args().take_while(|a| *a != "--").any(|a| {
            a == "--symbolic" || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
        }) =>
        {
            out.extend(operands);
            out.extend(option_value(&["--target-directory", "-t"]));
        }
        "cp" | "ln" | "install" | "rsync" => {
            out.extend(
                option_value(&["--target-directory", "-t"]).or_else(|| operands.last().cloned()),
            );
        }
        // `mv` removes its sources as it writes its destination.
        "mv" => {
            out.extend(operands);
            out.extend(option_value(&["--target-directory", "-t"]));
        }
        "chmod" | "chown" | "chgrp" => out.extend(operands.into_iter().skip(1)),
        "dd" => out.extend(
            invocation
                .program
                .iter()
                .skip(1)
                .find_map(|w| w.text.strip_prefix("of=").map(|v| (v.to_owned(), w.dynamic))),
        ),
        "sed" => {
            if invocation.args().any(|a| a.starts_with("-i") || a == "--in-place") {
                out.extend(operands.into_iter().skip(1));
            }
        }
        "sort" | "shuf" => out.extend(option_value(&["-o", "--output"])),
        "tar" => out.extend(option_value(&["-C", "--directory"])),
        "unzip" => out.extend(option_value(&["-d"])),
        // `split [OPTION]… FILE PREFIX`: the prefix is the last operand.
        "split" if operands.len() >= 2 => out.extend(operands.last().cloned()),
        "csplit" => out.extend(option_value(&["-f", "--prefix"])),
        "patch" => out.extend(option_value(&["-o", "--output", "-d", "--directory"])),
        _ => out.extend(operands),
    }
    out
}

/// Archives told to keep absolute or `..` member names write wherever their members say.
pub(super) fn archive_escapes(invocation: &Invocation) -> Option<String> {
    let name = invocation.name();
    let mut args = invocation.args().take_while(|a| *a != "--");
    let escapes = match name {
        "tar" | "bsdtar" => args.any(|a| {
            a.starts_with("--absolute")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('P'))
                || (!a.starts_with('-')
                    && a.contains('P')
                    && a.chars().all(|c| c.is_ascii_alphabetic()))
        }),
        "unzip" => args.any(|a| a.starts_with('-') && a.contains(':')),
        "cpio" => true,
        _ => false,
    };
    escapes.then(|| format!("`{name}` keeps absolute or `..` member names; where it writes is only known at run time."))
}
