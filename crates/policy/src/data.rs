//! Which arguments a program treats as data (a message, a pattern, text to print), not paths.
//!
//! A word in a data position is not a read of the path it names (`git commit -m '~/.ssh'`,
//! `grep -rn '.ssh/' docs`, `echo ~/.ssh/config`), unless it has an unquoted glob or expansion,
//! which the shell expands against the filesystem. When a program's options are not all known
//! the position of its pattern is not known either, and every word counts as a path.

use crate::command::Invocation;

/// For each word of `invocation.program` (index 0 is the name): true when it is data.
pub fn data_positions(invocation: &Invocation) -> Vec<bool> {
    let args: Vec<&str> = invocation.args().collect();
    let mut data = vec![false; args.len()];
    match invocation.name() {
        "echo" | "printf" | "true" | "false" | ":" => data.fill(true),
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => pattern_first(
            &args,
            &mut data,
            &["-e", "--regexp"],
            &["-f", "--file"],
            match invocation.name() {
                "rg" => RG_VALUES,
                _ => GREP_VALUES,
            },
        ),
        "sed" => {
            pattern_first(&args, &mut data, &["-e", "--expression"], &["-f", "--file"], SED_VALUES);
            for (i, a) in args.iter().enumerate() {
                if data[i] && !sed_script_is_data(a) {
                    data[i] = false;
                }
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            pattern_first(&args, &mut data, &["-e", "--source"], &["-f", "--file"], AWK_VALUES)
        }
        "jq" => pattern_first(&args, &mut data, &[], &["-f", "--from-file"], JQ_VALUES),
        "git" => git_data(&args, &mut data),
        _ => {}
    }
    let mut out = vec![false];
    out.extend(data);
    out
}

const GREP_VALUES: &[&str] = &[
    "-A",
    "-B",
    "-C",
    "-m",
    "-d",
    "-D",
    "--max-count",
    "--include",
    "--exclude",
    "--exclude-dir",
    "--label",
    "--color",
    "--colour",
    "--context",
    "--after-context",
    "--before-context",
    "--binary-files",
    "--devices",
    "--directories",
];
const RG_VALUES: &[&str] = &[
    "-A",
    "-B",
    "-C",
    "-m",
    "-g",
    "-t",
    "-T",
    "-M",
    "-j",
    "-r",
    "-E",
    "-d",
    "--glob",
    "--iglob",
    "--type",
    "--type-not",
    "--max-columns",
    "--threads",
    "--replace",
    "--encoding",
    "--max-depth",
    "--max-count",
    "--sort",
    "--sortr",
    "--color",
    "--colors",
    "--context",
    "--after-context",
    "--before-context",
    "--type-add",
    "--max-filesize",
    "--context-separator",
    "--field-match-separator",
    "--path-separator",
];
/// Long options of grep, rg, sed, awk and jq that take no value.
const LONG_FLAGS: &[&str] = &[
    "--recursive",
    "--line-number",
    "--ignore-case",
    "--word-regexp",
    "--line-regexp",
    "--count",
    "--files-with-matches",
    "--files-without-match",
    "--invert-match",
    "--fixed-strings",
    "--extended-regexp",
    "--perl-regexp",
    "--basic-regexp",
    "--only-matching",
    "--quiet",
    "--silent",
    "--no-messages",
    "--with-filename",
    "--no-filename",
    "--null",
    "--text",
    "--hidden",
    "--no-ignore",
    "--follow",
    "--smart-case",
    "--case-sensitive",
    "--json",
    "--vimgrep",
    "--heading",
    "--no-heading",
    "--files",
    "--pretty",
    "--multiline",
    "--stats",
    "--unrestricted",
    "--no-line-number",
    "--column",
    "--byte-offset",
    "--trim",
    "--sort-files",
    "--dereference-recursive",
    "--initial-tab",
    "--null-data",
    "--quiet",
    "--regexp-extended",
    "--posix",
    "--separate",
    "--sandbox",
    "--unbuffered",
    "--debug",
    "--raw-output",
    "--compact-output",
    "--null-input",
    "--slurp",
    "--exit-status",
    "--join-output",
    "--ascii-output",
    "--sort-keys",
    "--color-output",
    "--monochrome-output",
    "--tab",
    "--raw-input",
    "--seq",
    "--stream",
];
const SED_VALUES: &[&str] = &["-l", "--line-length"];
const AWK_VALUES: &[&str] = &["-v", "-F", "--assign", "--field-separator"];
const JQ_VALUES: &[&str] = &["--indent", "--arg", "--argjson", "--slurpfile", "--rawfile", "-L"];

/// The first positional argument is a pattern or script (data) unless `-e`-style options give
/// it; their values are data; `-f`-style values stay paths. Unknown options: nothing is data.
fn pattern_first(
    args: &[&str],
    data: &mut [bool],
    pattern_options: &[&str],
    file_options: &[&str],
    value_options: &[&str],
) {
    let mut i = 0;
    let mut pattern_given = false;
    let mut marks = vec![false; args.len()];
    while let Some(a) = args.get(i) {
        if *a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || *a == "-" {
            break;
        }
        let (option, joined) = match a.split_once('=') {
            Some((o, v)) if a.starts_with("--") => (o, Some(v)),
            _ => (*a, None),
        };
        let takes_two = matches!(option, "--arg" | "--argjson" | "--slurpfile" | "--rawfile");
        if pattern_options.contains(&option) || file_options.contains(&option) {
            pattern_given = true;
            if pattern_options.contains(&option) && joined.is_none() {
                if let Some(m) = marks.get_mut(i + 1) {
                    *m = true;
                }
            } else if pattern_options.contains(&option) {
                marks[i] = true;
            }
            i += if joined.is_some() { 1 } else { 2 };
        } else if value_options.contains(&option) {
            if takes_two {
                // `--arg NAME VALUE`: the value is data, `--rawfile NAME FILE` a path.
                if matches!(option, "--arg" | "--argjson")
                    && let Some(m) = marks.get_mut(i + 2)
                {
                    *m = true;
                }
                i += 3;
            } else {
                i += if joined.is_some() { 1 } else { 2 };
            }
        } else if let Some(short) = pattern_options
            .iter()
            .chain(file_options)
            .find(|o| o.len() == 2 && option.starts_with(**o) && option.len() > 2)
        {
            pattern_given = true;
            marks[i] = pattern_options.contains(short);
            i += 1;
        } else if (!option.starts_with("--")
            && value_options
                .iter()
                .any(|v| v.len() == 2 && option.len() > 2 && option.starts_with(v)))
            || option[1..].chars().all(|c| c.is_ascii_digit())
            || (option.starts_with("-i") && !option.starts_with("--"))
            || LONG_FLAGS.contains(&option)
        {
            i += 1;
        } else if !option.starts_with("--") && option[1..].chars().all(|c| c.is_ascii_alphabetic())
        {
            // A cluster of flags; one ending in a value option takes the next word.
            let last = &option[option.len() - 1..];
            let takes_value = value_options.iter().any(|v| v.len() == 2 && &v[1..] == last);
            let gives_pattern =
                pattern_options.iter().chain(file_options).any(|v| v.len() == 2 && &v[1..] == last);
            if gives_pattern {
                pattern_given = true;
                if pattern_options.iter().any(|v| v.len() == 2 && &v[1..] == last)
                    && let Some(m) = marks.get_mut(i + 1)
                {
                    *m = true;
                }
            }
            i += if takes_value || gives_pattern { 2 } else { 1 };
        } else {
            return;
        }
    }
    if !pattern_given && let Some(m) = marks.get_mut(i) {
        *m = true;
    }
    for (d, m) in data.iter_mut().zip(marks) {
        *d |= m;
    }
}

/// Why a sed command is not understood: a script that reads, writes or runs (`r`, `w`, `e`,
/// `s///e`), or options that hide where the script is.
pub fn sed_not_understood(invocation: &Invocation) -> Option<String> {
    let args: Vec<&str> = invocation.args().collect();
    let mut marks = vec![false; args.len()];
    pattern_first(&args, &mut marks, &["-e", "--expression"], &["-f", "--file"], SED_VALUES);
    let scripts: Vec<&str> =
        args.iter().zip(&marks).filter(|(_, m)| **m).map(|(a, _)| *a).collect();
    let from_file = args.iter().any(|a| matches!(*a, "-f" | "--file") || a.starts_with("--file="));
    if scripts.is_empty() && !from_file {
        return Some("`sed`'s options are not understood, so neither is its script".into());
    }
    scripts
        .iter()
        .find(|s| !sed_script_is_data(s))
        .map(|s| format!("the `sed` script `{s}` reads, writes or runs something"))
}

/// A sed script with no command that reads, writes or runs (`r`, `R`, `w`, `W`, `e`, `s///w`,
/// `s///e`) is data.
fn sed_script_is_data(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Skip blanks, separators and addresses.
        while i < chars.len() && (chars[i].is_ascii_digit() || " \t\n;,$!{}~".contains(chars[i])) {
            i += 1;
        }
        if i < chars.len() && chars[i] == '/' {
            i += 1;
            while i < chars.len() && chars[i] != '/' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        let Some(&command) = chars.get(i) else { return true };
        i += 1;
        match command {
            'r' | 'R' | 'w' | 'W' | 'e' | 'F' | 'v' | 'z' => {
                return command == 'z' || command == 'F';
            }
            's' | 'y' => {
                let Some(&delimiter) = chars.get(i) else { return false };
                let mut parts = 0;
                i += 1;
                while i < chars.len() && parts < 2 {
                    if chars[i] == '\\' {
                        i += 1;
                    } else if chars[i] == delimiter {
                        parts += 1;
                    }
                    i += 1;
                }
                while i < chars.len() && !";\n}".contains(chars[i]) {
                    if matches!(chars[i], 'w' | 'e' | 'W') {
                        return false;
                    }
                    i += 1;
                }
            }
            'a' | 'i' | 'c' | 'b' | 't' | 'T' | ':' | 'l' | 'q' | 'Q' => {
                // Text or a label to the end of the command.
                while i < chars.len() && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' => {}
            _ => return false,
        }
    }
    true
}

/// git's messages (`-m`, `--message`), log searches (`--grep`, `-S`, `-G`, `--author`),
/// formats and `git grep`'s pattern.
fn git_data(args: &[&str], data: &mut [bool]) {
    let Some(sub_at) = crate::git::subcommand_index(args) else { return };
    let sub = args[sub_at];
    let rest = &args[sub_at + 1..];
    let offset = sub_at + 1;
    const VALUE_DATA: &[&str] = &[
        "-m",
        "--message",
        "--grep",
        "-S",
        "-G",
        "--author",
        "--committer",
        "--format",
        "--pretty",
        "--since",
        "--until",
        "--after",
        "--before",
        "--date",
        "--trailer",
        "--invert-grep",
        "--notes",
    ];
    if sub == "grep" {
        pattern_first(
            rest,
            &mut data[offset..],
            &["-e"],
            &["-f"],
            &["-A", "-B", "-C", "-m", "--max-depth", "--threads", "--color"],
        );
        return;
    }
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        if *a == "--" {
            break;
        }
        let (option, joined) = match a.split_once('=') {
            Some((o, v)) if a.starts_with("--") => (o, Some(v)),
            _ => (*a, None),
        };
        if VALUE_DATA.contains(&option) {
            if joined.is_some() {
                data[offset + i] = true;
            } else if let Some(d) = data.get_mut(offset + i + 1) {
                *d = true;
                i += 1;
            }
        } else if ["-m", "-S", "-G"].iter().any(|o| option.starts_with(o) && option.len() > 2)
            || (option.starts_with('-')
                && !option.starts_with("--")
                && option.ends_with('m')
                && matches!(sub, "commit" | "tag" | "merge" | "stash")
                && option.len() > 2)
        {
            if option.ends_with('m') && option.len() > 2 && !option.starts_with("-m") {
                // `-am MSG`: the message is the next word.
                if let Some(d) = data.get_mut(offset + i + 1) {
                    *d = true;
                    i += 1;
                }
            } else {
                data[offset + i] = true;
            }
        }
        i += 1;
    }
}
