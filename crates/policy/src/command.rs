//! From parsed simple commands to the programs a line runs: wrappers stripped, `bash -c` recursed.

pub use crate::code::SHELLS;
use crate::code::{self, ShellRun};
use crate::shell::{self, Origin, Redirect, RedirectKind, Script, SimpleCommand, Word};
use crate::wrappers::{self, RUNS_OTHERS, Stripped, WRAPPERS};

/// What the policy knows about a program name, looked up once per simple command.
#[derive(Debug, Clone, Copy, Default)]
struct Kind {
    wrapper: bool,
    shell: bool,
    interpreter: bool,
    runs_others: bool,
}

static KINDS: std::sync::LazyLock<std::collections::HashMap<&'static str, Kind>> =
    std::sync::LazyLock::new(|| {
        let mut map: std::collections::HashMap<&'static str, Kind> = Default::default();
        for name in WRAPPERS {
            map.entry(name).or_default().wrapper = true;
        }
        for name in SHELLS {
            map.entry(name).or_default().shell = true;
        }
        for name in code::INTERPRETERS {
            map.entry(name).or_default().interpreter = true;
        }
        for name in RUNS_OTHERS {
            map.entry(name).or_default().runs_others = true;
        }
        map
    });

fn kind(name: &str) -> Kind {
    KINDS.get(name).copied().unwrap_or_default()
}

/// Environment variables whose assignment in front of a command does not change what runs
/// (with a plain value: letters, digits and `-_.,:+`; `PAGER` only as `cat`, `less`, `more`).
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
/// Variables that change how the shell finds programs, files or its own behaviour: a line
/// assigning one is not understood.
const SHELL_STATE: &[&str] = &[
    "HOME",
    "PATH",
    "CDPATH",
    "IFS",
    "GLOBIGNORE",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_XTRACEFD",
    "OLDPWD",
    "PWD",
    "BASH_CMDS",
    "BASH_ALIASES",
    "EXECIGNORE",
    "FIGNORE",
    "HOSTFILE",
    "INPUTRC",
    "TMOUT",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
];
/// Variables whose value is a program (or options or code) another program runs: `git log`
/// with `GIT_PAGER='sh -c …'` runs that. A line assigning one (other than a plain pager) is
/// not understood.
const CODE_VARIABLES: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "BROWSER",
    "NODE_OPTIONS",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PROMPT_COMMAND",
    "SHELL",
    "CARGO_HOME",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CC",
    "CXX",
    "MAKEFLAGS",
    "npm_config_script_shell",
];

/// Wrappers that only change scheduling or output, not what runs: a rule for the wrapped
/// command allows the wrapped line.
const TRANSPARENT: &[&str] = &["time", "nohup", "nice", "timeout", "stdbuf", "command", "builtin"];
/// Builtins whose arguments are assignments.
const DECLARE: &[&str] = &["export", "declare", "typeset", "local", "readonly"];

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
    /// Values of the wrappers' options (`xargs -a FILE`, `timeout 5`): checked as paths.
    pub wrapper_args: Vec<Word>,
    /// Shells that ran it through `-c` or `eval`, outermost first.
    pub via_shell: Vec<String>,
    /// Assignments in front of it (including `env`'s).
    pub assignments: Vec<String>,
    /// Its redirections.
    pub redirects: Vec<Redirect>,
    /// Some argument is only known at run time (expansion, `xargs`, `find -exec`).
    pub dynamic: bool,
    /// Run-time arguments are appended to it (`xargs`, `find -exec … {}`).
    pub appended_args: bool,
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
    for why in crate::pinned::unpinned(&analysis) {
        push_opaque(&mut analysis, why);
    }
    analysis
}

fn analyze_into(line: &str, depth: usize, via_shell: &[String], out: &mut Analysis) {
    let script = shell::parse_at_depth(line, depth);
    add_script(script, depth, via_shell, out);
}

fn add_script(script: Script, depth: usize, via_shell: &[String], out: &mut Analysis) {
    for why in script.opaque {
        push_opaque(out, why);
    }
    let pipeline_base = out.invocations.iter().map(|i| i.pipeline).max().unwrap_or(0);
    // Index of each simple command's (first) invocation, for substitution links.
    let mut first_of = Vec::with_capacity(script.commands.len());
    for command in script.commands {
        first_of.push(out.invocations.len());
        let substitutions =
            command.substitutions.iter().filter_map(|&i| first_of.get(i).copied()).collect();
        add_command(command, depth, via_shell, pipeline_base, substitutions, out);
    }
}

fn add_command(
    command: SimpleCommand,
    depth: usize,
    via_shell: &[String],
    pipeline_base: usize,
    substitutions: Vec<usize>,
    out: &mut Analysis,
) {
    let written = join(command.assignments.iter().chain(&command.words));
    let SimpleCommand {
        assignments: mut assignment_words,
        mut words,
        redirects,
        pipeline,
        stage,
        origin,
        substitutions: _,
    } = command;
    let mut wrappers = Vec::new();
    let mut wrapper_args = Vec::new();
    let mut plain_ok = true;
    let mut appended_args = false;
    while let Some(first) = words.first() {
        let name = basename(&first.text).to_owned();
        if first.dynamic || !kind(&name).wrapper {
            break;
        }
        let stripped = wrappers::strip(&name, &words[1..], &mut assignment_words);
        if !TRANSPARENT.contains(&name.as_str()) {
            plain_ok = false;
        }
        if name == "xargs" {
            appended_args = true;
        }
        wrappers.push(name);
        match stripped {
            Stripped::Wrapped { rest, values } => {
                wrapper_args.extend(values);
                words = rest;
            }
            Stripped::Nothing { values } => {
                wrapper_args.extend(values);
                if wrappers.last().is_some_and(|w| w == "command") {
                    plain_ok = false;
                }
                words.clear();
                break;
            }
            Stripped::Opaque(why) => {
                push_opaque(out, why);
                words.remove(0);
            }
        }
    }
    plain_ok &= assignment_words.iter().all(is_safe_assignment);
    let assignments: Vec<String> = assignment_words.iter().map(|w| w.text.clone()).collect();
    let program_name = words.first().map_or(String::new(), |w| basename(&w.text).to_owned());
    check_names(&words, &program_name, &assignment_words, &wrappers, out);
    if DECLARE.contains(&program_name.as_str()) {
        let declared: Vec<Word> = words[1..].to_vec();
        check_names(&[], "", &declared, &[], out);
    }
    let dynamic = appended_args || words.iter().any(|w| w.dynamic);
    let plain = plain_ok.then(|| join(words.iter()));
    let program = kind(&program_name);
    // Only programs that run others need their words again after the invocation is stored.
    let nested = (program.shell
        || program.interpreter
        || matches!(program_name.as_str(), "eval" | "su" | "find" | "watch" | "source" | "."))
    .then(|| words.clone());
    let input = redirects.iter().find(|r| r.kind == RedirectKind::Input).cloned();
    let invocation = Invocation {
        written,
        plain,
        program: words,
        wrappers,
        wrapper_args,
        via_shell: via_shell.to_vec(),
        assignments,
        redirects,
        dynamic,
        appended_args,
        pipeline: pipeline_base + pipeline,
        stage,
        in_substitution: origin == Origin::Substitution,
        substitutions,
        runs_script: false,
    };
    let index = out.invocations.len();
    out.invocations.push(invocation);
    let words = nested.unwrap_or_default();
    nested_programs(input.as_ref(), &words, &program_name, index, depth, via_shell, out);
}

/// Names and assignments the policy cannot look past.
fn check_names(
    words: &[Word],
    program_name: &str,
    assignments: &[Word],
    wrappers: &[String],
    out: &mut Analysis,
) {
    if let Some(first) = words.first() {
        if first.dynamic || first.glob {
            push_opaque(out, format!("the command name `{}` is only known at run time", first.raw));
        }
        if !first.text.is_ascii() {
            push_opaque(out, "non-ASCII command name");
        }
        if first.text.starts_with('-') && !first.dynamic {
            push_opaque(
                out,
                format!("`{}` is an option where a command name should be", first.text),
            );
        }
    }
    if program_name == "shopt" || program_name == "set" && words.len() > 1 {
        push_opaque(out, "changes how the shell expands words or runs commands (shopt, set)");
    }
    let program = kind(program_name);
    if program.runs_others {
        push_opaque(
            out,
            format!("`{program_name}` runs other programs in a way not looked through"),
        );
    }
    for a in assignments {
        let name = a.text.split_once('=').map_or(a.text.as_str(), |(n, _)| n);
        let name = name.strip_suffix('+').unwrap_or(name);
        if SHELL_STATE.contains(&name) || name.starts_with("LD_") || name.starts_with("DYLD_") {
            push_opaque(
                out,
                format!("assigns `{name}`, which changes how the shell finds programs or paths"),
            );
        }
        let value = a.text.split_once('=').map_or("", |(_, v)| v);
        let plain_pager = name.ends_with("PAGER") && matches!(value, "cat" | "less" | "more" | "");
        if (CODE_VARIABLES.contains(&name) || name.starts_with("GIT_CONFIG_")) && !plain_pager {
            push_opaque(
                out,
                format!("assigns `{name}`, a program or options another program runs"),
            );
        }
    }
    if wrappers.iter().any(|w| w == "xargs")
        && (program.shell || program.interpreter || program_name == "eval")
    {
        push_opaque(out, format!("`xargs` feeds run-time text to `{program_name}`"));
    }
}

/// Programs one program runs from its arguments or its input.
fn nested_programs(
    input: Option<&Redirect>,
    words: &[Word],
    program_name: &str,
    index: usize,
    depth: usize,
    via_shell: &[String],
    out: &mut Analysis,
) {
    let mut shells = via_shell.to_vec();
    shells.push(program_name.to_owned());
    let from_pipe = out.invocations[index].stage > 0;
    let program = kind(program_name);
    if program.shell || program_name == "eval" || program_name == "su" {
        let run = if program_name == "eval" {
            let text = join(words.iter().skip(1));
            let dynamic = words.iter().skip(1).any(|w| w.dynamic);
            ShellRun::Inline(Word { text, dynamic, ..Word::default() })
        } else if program_name == "su" {
            su_script(words).map_or(ShellRun::File, ShellRun::Inline)
        } else {
            code::shell_run(program_name, words)
        };
        match run {
            ShellRun::Inline(script) => {
                if script.dynamic {
                    push_opaque(
                        out,
                        format!("`{program_name}` runs a script only known at run time"),
                    );
                } else if program_name != "su" && out.invocations[index].plain.is_some() {
                    // Not with `BASH_ENV=… bash -c`, `sudo bash -c`: those run more than the script.
                    out.invocations[index].runs_script = true;
                }
                analyze_into(&script.text, depth + 1, &shells, out);
            }
            ShellRun::Stdin => match input {
                Some(here) if !program.interpreter => {
                    if here.target.dynamic {
                        push_opaque(
                            out,
                            format!("`{program_name}` runs a here-document with run-time parts"),
                        );
                    }
                    analyze_into(&here.target.text, depth + 1, &shells, out);
                }
                Some(_) => {}
                None if from_pipe => {
                    push_opaque(out, format!("`{program_name}` runs a program read from a pipe"));
                }
                None => {}
            },
            ShellRun::File => {}
            ShellRun::Opaque(why) => push_opaque(out, why),
        }
    }
    if program.interpreter {
        match code::inline_code(program_name, words) {
            Some(code) => {
                if let Some(why) = code::code_not_understood(program_name, &code) {
                    push_opaque(out, why);
                }
            }
            None => {
                let stdin = words.iter().skip(1).all(|w| w.text.starts_with('-') && w.text != "-m")
                    || words.iter().any(|w| w.text == "-" || w.text == "/dev/stdin");
                match input {
                    Some(here) if stdin => {
                        if let Some(why) = code::code_not_understood(program_name, &here.target) {
                            push_opaque(out, why);
                        }
                    }
                    None if stdin && from_pipe => push_opaque(
                        out,
                        format!("`{program_name}` runs code from a pipe, which is not analysed"),
                    ),
                    _ => {}
                }
            }
        }
    }
    if matches!(program_name, "source" | ".")
        && words.get(1).is_some_and(|w| code::is_stdin_file(&w.text))
    {
        match input {
            Some(here) => {
                if here.target.dynamic {
                    push_opaque(
                        out,
                        format!("`{program_name}` runs a here-document with run-time parts"),
                    );
                }
                analyze_into(&here.target.text, depth + 1, &shells, out);
            }
            None => push_opaque(out, format!("`{program_name}` runs a script read from its input")),
        }
    }
    if program.interpreter
        && program_name.ends_with("awk")
        && words.iter().skip(1).any(|w| {
            matches!(w.text.as_str(), "-i" | "--include" | "-l" | "--load" | "-E" | "--exec")
        })
    {
        push_opaque(out, format!("`{program_name}` loads extensions or in-place editing"));
    }
    match program_name {
        "sed" => {
            if let Some(why) = crate::data::sed_not_understood(&out.invocations[index]) {
                push_opaque(out, why);
            }
        }
        "find" => find_exec(words, depth, via_shell, out),
        "watch" => watch(words, depth, via_shell, out),
        "git" => {
            if let Some(why) = crate::git::runs_code(&out.invocations[index]) {
                push_opaque(out, why);
            }
        }
        _ => {
            if let Some(why) = crate::tools::runs_code(&out.invocations[index]) {
                push_opaque(out, why);
            }
        }
    }
}

/// `su -c SCRIPT`.
fn su_script(words: &[Word]) -> Option<Word> {
    let mut iter = words.iter().skip(1);
    while let Some(w) = iter.next() {
        if matches!(w.text.as_str(), "-c" | "--command") {
            return iter.next().cloned();
        }
    }
    None
}

/// `watch [options] COMMAND…`: the words, joined, run through `sh -c`.
fn watch(words: &[Word], depth: usize, via_shell: &[String], out: &mut Analysis) {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        match w.text.as_str() {
            "-n" | "--interval" | "-q" | "--equexit" => i += 2,
            "-d" | "--differences" | "-t" | "--no-title" | "-b" | "--beep" | "-e" | "--errexit"
            | "-g" | "--chgexit" | "-c" | "--color" | "-p" | "--precise" | "-w" | "--no-wrap"
            | "-x" | "--exec" => i += 1,
            t if t.starts_with("--interval=") || t.starts_with("-n") && t.len() > 2 => i += 1,
            t if t.starts_with('-') => {
                push_opaque(out, format!("`watch` option `{t}` is not understood"));
                return;
            }
            _ => break,
        }
    }
    let rest = &words[i.min(words.len())..];
    if rest.iter().any(|w| w.dynamic) {
        push_opaque(out, "`watch` runs a command only known at run time");
    }
    analyze_into(&join(rest.iter()), depth + 1, &[String::from("sh")], out);
    let _ = via_shell;
}

/// `find … -exec cmd {} ;`: `cmd` runs with run-time arguments.
fn find_exec(words: &[Word], depth: usize, via_shell: &[String], out: &mut Analysis) {
    let mut i = 0;
    while i < words.len() {
        if matches!(words[i].text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let inner: Vec<&Word> =
                words[i + 1..].iter().take_while(|w| w.text != ";" && w.text != "+").collect();
            if let Some(first) = inner.first() {
                let name = basename(&first.text);
                let k = kind(name);
                if k.shell || name == "eval" || k.interpreter {
                    push_opaque(out, format!("`find -exec` runs `{name}` on file names"));
                }
                if first.text.contains("{}") || first.dynamic {
                    push_opaque(out, "`find -exec` runs a program named by a file name");
                }
            }
            i += inner.len() + 1;
            let text = inner.iter().map(|w| quote(&w.text)).collect::<Vec<_>>().join(" ");
            let before = out.invocations.len();
            analyze_into(&text, depth + 1, via_shell, out);
            for invocation in &mut out.invocations[before..] {
                invocation.dynamic = true;
                invocation.appended_args = true;
                for word in invocation.program.iter_mut().skip(1) {
                    if word.text.contains("{}") {
                        word.dynamic = true;
                        word.unquoted_expansion = true;
                    }
                }
            }
        }
        i += 1;
    }
}

pub(crate) fn push_opaque(out: &mut Analysis, why: impl Into<String>) {
    let why = why.into();
    if !out.opaque.contains(&why) {
        out.opaque.push(why);
    }
}

fn is_safe_assignment(assignment: &Word) -> bool {
    if assignment.dynamic {
        return false;
    }
    let Some((name, value)) = assignment.text.split_once('=') else { return false };
    if !SAFE_ASSIGNMENTS.contains(&name) {
        return false;
    }
    if name.ends_with("PAGER") {
        return matches!(value, "cat" | "less" | "more" | "");
    }
    value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:+=".contains(c))
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
