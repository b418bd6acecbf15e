//! From parsed simple commands to the programs a line runs: wrappers stripped, `bash -c` recursed.

use crate::shell::{self, Origin, Redirect, Script, SimpleCommand, Word};

/// Environment variables whose assignment in front of a command does not change what runs.
const SAFE_ASSIGNMENTS: &[&str] = &[
    "CI",
    "COLUMNS",
    "FORCE_COLOR",
    "LANG",
    "LC_ALL",
    "NO_COLOR",
    "NODE_ENV",
    "PAGER",
    "GIT_PAGER",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "TERM",
    "TZ",
    "CARGO_TERM_COLOR",
    "PYTHONUNBUFFERED",
];
/// Wrappers that only change scheduling or output, not what runs: a rule for the wrapped
/// command allows the wrapped line.
const TRANSPARENT: &[&str] = &["time", "nohup", "nice", "timeout", "stdbuf", "command", "builtin"];
/// Programs that run another program from their arguments.
const WRAPPERS: &[&str] = &[
    "env", "time", "nohup", "nice", "timeout", "stdbuf", "command", "builtin", "exec", "sudo",
    "doas", "pkexec", "run0", "setsid", "xargs", "ionice", "chroot", "unshare", "nsenter", "su",
];
/// Shells whose `-c` argument is a script.
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"];

/// One program a line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The simple command as written (assignments and wrappers included), words joined by spaces.
    pub written: String,
    /// The command once transparent wrappers and safe assignments are gone (`None` when
    /// something else stands in front: an unsafe assignment, `env -i`, `sudo`, `xargs`…).
    pub plain: Option<String>,
    /// The innermost program and its arguments, every wrapper removed.
    pub program: Vec<Word>,
    /// Wrappers removed in front of `program`, outermost first (basenames).
    pub wrappers: Vec<String>,
    /// Shells that ran it through `-c` or `eval`, outermost first.
    pub via_shell: Vec<String>,
    /// Assignments in front of it (including `env`'s).
    pub assignments: Vec<String>,
    /// Its redirections.
    pub redirects: Vec<Redirect>,
    /// Some argument is only known at run time (expansion, `xargs`, `find -exec`).
    pub dynamic: bool,
    /// The pipeline it belongs to and its stage.
    pub pipeline: usize,
    /// Stage in the pipeline (0 = first).
    pub stage: usize,
    /// Runs inside a command or process substitution.
    pub in_substitution: bool,
    /// Indices (into [`Analysis::invocations`]) of programs run by substitutions in its words.
    pub substitutions: Vec<usize>,
    /// A shell or `eval` whose whole script was literal and is analysed as further invocations:
    /// it is allowed exactly when they are.
    pub runs_script: bool,
}

impl Invocation {
    /// The program's basename (`/usr/bin/git` → `git`).
    pub fn name(&self) -> &str {
        self.program.first().map_or("", |w| basename(&w.text))
    }

    /// The program's arguments (after the name) as text.
    pub fn args(&self) -> impl Iterator<Item = &str> {
        self.program.iter().skip(1).map(|w| w.text.as_str())
    }
}

/// The programs of one command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// Every program, nested ones included.
    pub invocations: Vec<Invocation>,
    /// Why the line is not fully understood (then it is never auto-allowed).
    pub opaque: Vec<String>,
}

/// Parses and analyses a command line.
pub fn analyze(line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    analyze_into(line, 0, &[], &mut analysis);
    analysis
}

fn analyze_into(line: &str, depth: usize, via_shell: &[String], out: &mut Analysis) {
    let script = shell::parse_at_depth(line, depth);
    add_script(script, depth, via_shell, out);
}

fn add_script(script: Script, depth: usize, via_shell: &[String], out: &mut Analysis) {
    for why in script.opaque {
        if !out.opaque.contains(&why) {
            out.opaque.push(why);
        }
    }
    let pipeline_base = out.invocations.iter().map(|i| i.pipeline).max().unwrap_or(0);
    // Index of each simple command's (first) invocation, for substitution links.
    let mut first_of = Vec::with_capacity(script.commands.len());
    for command in &script.commands {
        first_of.push(out.invocations.len());
        let substitutions =
            command.substitutions.iter().filter_map(|&i| first_of.get(i).copied()).collect();
        add_command(command, depth, via_shell, pipeline_base, substitutions, out);
    }
}

fn add_command(
    command: &SimpleCommand,
    depth: usize,
    via_shell: &[String],
    pipeline_base: usize,
    substitutions: Vec<usize>,
    out: &mut Analysis,
) {
    let written = join(command.assignments.iter().chain(&command.words));
    let mut assignments: Vec<String> = command.assignments.iter().map(|w| w.text.clone()).collect();
    let mut words: Vec<Word> = command.words.clone();
    let mut wrappers = Vec::new();
    let mut plain_ok = assignments.iter().all(|a| is_safe_assignment(a));
    let mut dynamic = false;
    let mut opaque = Vec::new();
    while let Some(first) = words.first() {
        let name = basename(&first.text).to_owned();
        if first.dynamic || !WRAPPERS.contains(&name.as_str()) {
            break;
        }
        let rest = strip_wrapper(&name, &words[1..], &mut assignments, &mut opaque);
        if !TRANSPARENT.contains(&name.as_str()) || (name == "command" && rest.is_none()) {
            plain_ok = false;
        }
        if name == "env" && !assignments.iter().all(|a| is_safe_assignment(a)) {
            plain_ok = false;
        }
        if name == "xargs" {
            dynamic = true;
        }
        wrappers.push(name);
        match rest {
            Some(rest) => words = rest,
            None => break,
        }
    }
    for why in opaque {
        if !out.opaque.contains(&why) {
            out.opaque.push(why);
        }
    }
    let program_name = words.first().map_or(String::new(), |w| basename(&w.text).to_owned());
    if let Some(first) = words.first() {
        if first.dynamic || first.glob {
            push_opaque(out, "the command name is only known at run time");
        }
        if !first.text.is_ascii() {
            push_opaque(out, "non-ASCII command name");
        }
    }
    if program_name == "shopt"
        || assignments.iter().any(|a| a.starts_with("GLOBIGNORE=") || a.starts_with("IFS="))
    {
        push_opaque(out, "changes how the shell expands words (shopt, GLOBIGNORE, IFS)");
    }
    if wrappers.iter().any(|w| w == "xargs")
        && (SHELLS.contains(&program_name.as_str()) || program_name == "eval")
    {
        push_opaque(out, "`xargs` feeds run-time text to a shell");
    }
    dynamic |= words.iter().any(|w| w.dynamic);
    let plain = plain_ok.then(|| join(words.iter()));
    let invocation = Invocation {
        written,
        plain,
        program: words.clone(),
        wrappers: wrappers.clone(),
        via_shell: via_shell.to_vec(),
        assignments,
        redirects: command.redirects.clone(),
        dynamic,
        pipeline: pipeline_base + command.pipeline,
        stage: command.stage,
        in_substitution: command.origin == Origin::Substitution,
        substitutions,
        runs_script: false,
    };
    let index = out.invocations.len();
    out.invocations.push(invocation);

    // Programs this one runs from its arguments.
    if SHELLS.contains(&program_name.as_str()) || program_name == "eval" || program_name == "su" {
        if let Some(script) = inline_script(&program_name, &words) {
            let mut shells = via_shell.to_vec();
            shells.push(program_name.clone());
            if script.dynamic {
                push_opaque(out, format!("`{program_name}` runs a script only known at run time"));
            } else if program_name != "su" && out.invocations[index].plain.is_some() {
                // Not with `BASH_ENV=… bash -c`, `sudo bash -c`: those run more than the script.
                out.invocations[index].runs_script = true;
            }
            analyze_into(&script.text, depth + 1, &shells, out);
        }
        if let Some(here) = command.redirects.iter().find(|r| r.kind == shell::RedirectKind::Input)
            && SHELLS.contains(&program_name.as_str())
        {
            let mut shells = via_shell.to_vec();
            shells.push(program_name.clone());
            analyze_into(&here.target.text, depth + 1, &shells, out);
        }
    }
    if program_name == "find" {
        find_exec(&words, depth, via_shell, out);
    }
    if program_name == "watch" {
        let text = join(words.iter().skip(1).skip_while(|w| w.text.starts_with('-')));
        analyze_into(&text, depth + 1, via_shell, out);
    }
}

/// The script of `bash -c '…'`, `su -c '…'` or `eval …`.
fn inline_script(name: &str, words: &[Word]) -> Option<Word> {
    if name == "eval" {
        let text = join(words.iter().skip(1));
        let dynamic = words.iter().skip(1).any(|w| w.dynamic);
        return Some(Word { text, dynamic, glob: false, dynamic_at: None });
    }
    let mut iter = words.iter().skip(1);
    while let Some(word) = iter.next() {
        let t = word.text.as_str();
        if t == "--" || !t.starts_with('-') || t == "-" {
            return None;
        }
        if t == "--command" || (!t.starts_with("--") && t.contains('c')) {
            return iter.next().cloned();
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            iter.next();
        }
    }
    None
}

/// `find … -exec cmd {} ;`: `cmd` runs with run-time arguments.
fn find_exec(words: &[Word], depth: usize, via_shell: &[String], out: &mut Analysis) {
    let mut i = 0;
    while i < words.len() {
        if matches!(words[i].text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let inner: Vec<&Word> =
                words[i + 1..].iter().take_while(|w| w.text != ";" && w.text != "+").collect();
            if inner
                .first()
                .is_some_and(|w| SHELLS.contains(&basename(&w.text)) || w.text == "eval")
            {
                push_opaque(out, "`find -exec` runs a shell on file names");
            }
            i += inner.len() + 1;
            let text = inner.iter().map(|w| quote(&w.text)).collect::<Vec<_>>().join(" ");
            let before = out.invocations.len();
            analyze_into(&text, depth + 1, via_shell, out);
            for invocation in &mut out.invocations[before..] {
                invocation.dynamic = true;
            }
        }
        i += 1;
    }
}

/// Removes one wrapper's options; the wrapped words, or `None` when nothing is wrapped.
fn strip_wrapper(
    name: &str,
    args: &[Word],
    assignments: &mut Vec<String>,
    opaque: &mut Vec<String>,
) -> Option<Vec<Word>> {
    // Options taking a value, per wrapper.
    let with_value: &[&str] = match name {
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "exec" => &["-a"],
        "sudo" => &["-u", "-g", "-C", "-h", "-p", "-D", "-r", "-t", "-T", "-U"],
        "doas" => &["-u", "-C"],
        "pkexec" => &["--user"],
        "xargs" => &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--delimiter", "--arg-file"],
        "ionice" => &["-c", "-n", "-p"],
        "su" => &["-c", "--command", "-s", "--shell", "-g", "-G"],
        _ => &[],
    };
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if name == "env" && (t == "-S" || t.starts_with("--split-string")) {
            opaque.push("`env -S` splits a string into a command".to_owned());
            return None;
        }
        if name == "env" && is_assignment_text(t) {
            assignments.push(t.to_owned());
            i += 1;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += if with_value.contains(&t) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if name == "timeout" && i < args.len() {
        i += 1; // the duration
    }
    if matches!(name, "chroot") && i < args.len() {
        i += 1; // the new root
    }
    if name == "command" && args.iter().any(|w| matches!(w.text.as_str(), "-v" | "-V")) {
        return None;
    }
    let rest = args.get(i..).unwrap_or_default();
    (!rest.is_empty()).then(|| rest.to_vec())
}

fn push_opaque(out: &mut Analysis, why: impl Into<String>) {
    let why = why.into();
    if !out.opaque.contains(&why) {
        out.opaque.push(why);
    }
}

fn is_assignment_text(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn is_safe_assignment(assignment: &str) -> bool {
    assignment.split_once('=').is_some_and(|(name, _)| SAFE_ASSIGNMENTS.contains(&name))
}

/// `/usr/bin/git` → `git`.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn join<'w>(words: impl Iterator<Item = &'w Word>) -> String {
    words.map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// Single-quotes a word for re-parsing.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
