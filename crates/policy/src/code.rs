//! Programs whose arguments or input are code: shells' `-c` scripts, interpreters' inline code.

use crate::shell::Word;

/// Shells whose `-c` argument is a script.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "tcsh", "csh", "rbash",
    "posh", "oksh", "loksh", "pdksh", "elvish", "nu", "xonsh", "pwsh",
];
/// Interpreters: they run a program given inline (`-c`, `-e`), on stdin or in a file.
pub const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "perl",
    "perl5",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "R",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "busybox-awk",
    "jshell",
    "groovy",
    "scala",
    "osascript",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "ocaml",
    "ghci",
    "runghc",
    "swift",
    "elixir",
    "erl",
    "gnuplot",
    "octave",
    "sqlite3",
];

/// What a shell's arguments say it runs.
pub enum ShellRun {
    /// `-c SCRIPT`: the script (`$0`, `$1`… follow it).
    Inline(Word),
    /// A script file (run like any program).
    File,
    /// The program comes from stdin (`-s`, no file).
    Stdin,
    /// Options not understood.
    Opaque(String),
}

/// Reads a shell's options as bash parses them (`-lc`, `+x`, `-o opt`, `--`, `-c --`).
pub fn shell_run(name: &str, words: &[Word]) -> ShellRun {
    let mut inline = false;
    let mut stdin = false;
    let mut iter = words.iter().skip(1).peekable();
    while let Some(word) = iter.peek() {
        let t = word.text.as_str();
        if word.dynamic && (t.starts_with('-') || t.starts_with('+') || t.is_empty()) {
            return ShellRun::Opaque(format!("`{name}` has an option only known at run time"));
        }
        if t == "--" || t == "-" {
            iter.next();
            break;
        }
        if t.starts_with("--") {
            const LONG: &[&str] = &[
                "--login",
                "--norc",
                "--noprofile",
                "--posix",
                "--restricted",
                "--verbose",
                "--noediting",
                "--debugger",
                "--dump-strings",
                "--pretty-print",
                "--version",
                "--help",
            ];
            match t {
                "--rcfile" | "--init-file" => {
                    iter.next();
                }
                "--command" => inline = true,
                _ if LONG.contains(&t) => {}
                _ => return ShellRun::Opaque(format!("`{name}` option `{t}` is not understood")),
            }
            iter.next();
            continue;
        }
        let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) else { break };
        if flags.is_empty() {
            break;
        }
        iter.next();
        for flag in flags.chars() {
            match flag {
                'c' => inline = true,
                's' => stdin = true,
                'o' | 'O' => {
                    iter.next();
                }
                'l' | 'i' | 'e' | 'x' | 'u' | 'v' | 'n' | 'a' | 'f' | 'h' | 'k' | 'm' | 'p'
                | 't' | 'B' | 'C' | 'E' | 'H' | 'P' | 'T' | 'r' | 'b' => {}
                _ => {
                    return ShellRun::Opaque(format!("`{name}` option `{t}` is not understood"));
                }
            }
        }
    }
    if inline {
        return match iter.next() {
            Some(script) => ShellRun::Inline(script.clone()),
            None => ShellRun::Opaque(format!("`{name} -c` without a script")),
        };
    }
    match iter.next() {
        Some(file) if !stdin && !is_stdin_file(&file.text) => ShellRun::File,
        _ => ShellRun::Stdin,
    }
}

/// `/dev/stdin` and its aliases: a "script file" that is the program's input.
pub fn is_stdin_file(path: &str) -> bool {
    matches!(path, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "/dev/tty")
}

/// The inline program of an interpreter (`python3 -c CODE`, `python3 -BcCODE`, `perl -ne CODE`,
/// `awk 'PROGRAM'`), if it has one, read as each interpreter parses its options.
pub fn inline_code(name: &str, words: &[Word]) -> Option<Word> {
    let args = words.get(1..)?;
    if is_awk(name) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            match w.text.as_str() {
                "-f" | "--file" => return None,
                "-v" | "-F" | "--assign" | "--field-separator" => i += 2,
                "--" => return args.get(i + 1).cloned(),
                t if t.starts_with('-') && t.len() > 1 => i += 1,
                _ => return Some(w.clone()),
            }
        }
        return None;
    }
    // (letters whose value is the code, letters taking a value, letters that end the options,
    //  long options whose value is the code, long options taking a value)
    let (code, values, stop, long_code, long_values): (&str, &str, &str, &[&str], &[&str]) =
        match name {
            "python" | "python2" | "python3" | "pypy" | "pypy3" => {
                ("c", "WXQ", "m", &[], &["--check-hash-based-pycs"])
            }
            "perl" | "perl5" => ("eE", "IMmCdDx0l", "", &[], &[]),
            "ruby" => (
                "e",
                "IrCEFKTxW0l",
                "",
                &[],
                &[
                    "--encoding",
                    "--external-encoding",
                    "--internal-encoding",
                    "--enable",
                    "--disable",
                ],
            ),
            "node" | "nodejs" | "bun" | "deno" => (
                "ep",
                "rC",
                "",
                &["--eval", "--print"],
                &[
                    "--require",
                    "--import",
                    "--loader",
                    "--experimental-loader",
                    "--conditions",
                    "--input-type",
                ],
            ),
            "php" => ("rRBE", "dcz", "f", &[], &[]),
            "lua" | "luajit" => ("e", "l", "", &[], &[]),
            "Rscript" | "julia" | "elixir" => ("e", "", "", &["--eval"], &[]),
            _ => ("", "", "", &[], &[]),
        };
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t == "--" || t == "-" || !t.starts_with('-') {
            return None;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (option, joined) = long.split_once('=').map_or((long, None), |(o, v)| (o, Some(v)));
            let option = format!("--{option}");
            if long_code.contains(&option.as_str()) {
                return match joined {
                    Some(v) => Some(Word { text: v.to_owned(), ..w.clone() }),
                    None => args.get(i).cloned(),
                };
            }
            if long_values.contains(&option.as_str()) && joined.is_none() {
                i += 1;
            }
            continue;
        }
        for (at, letter) in t.char_indices().skip(1) {
            let rest = &t[at + letter.len_utf8()..];
            if code.contains(letter) {
                return if rest.is_empty() {
                    args.get(i).cloned()
                } else {
                    Some(Word { text: rest.to_owned(), ..w.clone() })
                };
            }
            if stop.contains(letter) {
                return None;
            }
            if values.contains(letter) {
                if rest.is_empty() {
                    i += 1;
                }
                break;
            }
        }
    }
    None
}

fn is_awk(name: &str) -> bool {
    matches!(name, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk")
}

/// Why inline code is not understood, if it is not: code that can start programs, open
/// files or build code at run time is not analysed (a person decides). Plain awk programs
/// without `system`, pipes, `getline` or output redirection, and Python without imports,
/// `open`, `exec`/`eval` or dunder access, are understood.
pub fn code_not_understood(name: &str, code: &Word) -> Option<String> {
    if code.dynamic {
        return Some(format!("`{name}` runs code only known at run time"));
    }
    let text = code.text.as_str();
    let tokens: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect();
    if is_awk(name) {
        let spawns = tokens.iter().any(|t| matches!(*t, "system" | "getline" | "close" | "fflush"))
            || text.contains('|')
            || text.contains('>')
            || text.contains('@');
        return spawns
            .then(|| format!("`{name}` code that runs programs or writes files is not analysed"));
    }
    if matches!(name, "python" | "python2" | "python3" | "pypy" | "pypy3") {
        const RISKY: &[&str] = &[
            "import",
            "open",
            "exec",
            "eval",
            "compile",
            "getattr",
            "setattr",
            "delattr",
            "globals",
            "locals",
            "vars",
            "breakpoint",
            "help",
            "input",
            "memoryview",
            "__import__",
        ];
        let risky = tokens.iter().any(|t| RISKY.contains(t) || t.starts_with("__"));
        return risky
            .then(|| format!("inline `{name}` code with imports or file access is not analysed"));
    }
    Some(format!("inline `{name}` code is not analysed"))
}

/// True when inline code can start programs (then privilege words in it are calls).
pub fn code_spawns(code: &str) -> bool {
    const SPAWN: &[&str] = &[
        "system",
        "exec",
        "popen",
        "spawn",
        "subprocess",
        "child_process",
        "execSync",
        "spawnSync",
        "shell_exec",
        "passthru",
        "proc_open",
        "qx",
        "Popen",
        "call",
        "run",
        "check_output",
        "os",
        "pty",
        "Open3",
        "IO",
        "Kernel",
        "getline",
    ];
    code.contains('`')
        || code.contains('|')
        || code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|t| SPAWN.contains(&t))
}
