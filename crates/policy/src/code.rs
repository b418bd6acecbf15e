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
        Some(_) if !stdin => ShellRun::File,
        _ => ShellRun::Stdin,
    }
}

/// The inline program of an interpreter (`python3 -c CODE`, `perl -e CODE`, `awk 'PROGRAM'`),
/// if it has one.
pub fn inline_code<'w>(name: &str, words: &'w [Word]) -> Option<&'w Word> {
    let args = &words[1..];
    if is_awk(name) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            match w.text.as_str() {
                "-f" | "--file" => return None,
                "-v" | "-F" | "--assign" | "--field-separator" => i += 2,
                "--" => return args.get(i + 1),
                t if t.starts_with('-') && t.len() > 1 => i += 1,
                _ => return Some(w),
            }
        }
        return None;
    }
    let flags: &[&str] = match name {
        "python" | "python2" | "python3" | "pypy" | "pypy3" => &["-c"],
        "perl" | "perl5" => &["-e", "-E"],
        "ruby" | "node" | "nodejs" | "bun" | "deno" | "Rscript" | "julia" | "lua" | "luajit"
        | "elixir" => &["-e", "--eval", "-p", "--print", "eval"],
        "php" => &["-r"],
        _ => &[],
    };
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if flags.contains(&t) {
            return iter.next();
        }
        // Clusters ending in the code flag: `perl -ne CODE`, `python3 -Bc CODE`.
        if t.starts_with('-')
            && !t.starts_with("--")
            && flags.iter().any(|f| f.len() == 2 && t.ends_with(&f[1..]))
        {
            return iter.next();
        }
        if !t.starts_with('-') {
            return None;
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
