//! The parser against the real `/bin/bash` (5.2 in CI): `bash -n` agrees on what is valid
//! syntax, and on harmless payloads bash's own record of the commands it runs (every command
//! name unknown on an empty `PATH`, caught by `command_not_found_handle`; builtins with effects
//! shadowed by functions that only record their argv) is what the parser extracted.
//!
//! Nothing real runs: `PATH` is an empty directory, `HOME` and the working directory are a
//! throwaway temp dir, the payloads below redirect only to relative files, and attack lines are
//! only ever given to `bash -n`, which parses without executing.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nucleic_policy::command::{self, Analysis};

const BASH: &str = "/bin/bash";
/// Deadline of one bash run; the whole test takes a few seconds.
const DEADLINE: Duration = Duration::from_secs(5);

/// Builtins shadowed by recording functions (their effects — a `kill`, an `exec`, a `cd` —
/// never happen). `eval`, `wait`, `builtin`, `return`, `shift` stay real: payloads and the
/// recorder need them, and they touch nothing outside the shell.
const SHADOWED: &[&str] = &[
    "echo",
    "printf",
    "cd",
    "pushd",
    "popd",
    "test",
    "[",
    "true",
    "pwd",
    "kill",
    "exec",
    "source",
    ".",
    "trap",
    "read",
    "exit",
    "set",
    "shopt",
    "ulimit",
    "umask",
    "enable",
    "type",
    "hash",
    "alias",
    "unalias",
    "let",
    "history",
    "fc",
    "jobs",
    "fg",
    "bg",
    "disown",
    "suspend",
    "logout",
    "times",
    "caller",
    "complete",
    "compgen",
    "dirs",
    "mapfile",
    "readarray",
    "getopts",
    "command",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "help",
    "bind",
];

fn prelude() -> String {
    let mut p = String::from(
        // One write per record (`printf -v`, then a single append): pipeline stages record
        // concurrently and must not interleave.
        "__rec() { builtin printf -v __r '%s\\037' \"$@\"; builtin printf '%s\\036' \"${__r%$'\\037'}\" >> \"$NUCLEIC_TRACE\"; }\n\
         command_not_found_handle() { __rec \"$@\"; return 0; }\n\
         false() { __rec false \"$@\"; return 1; }\n",
    );
    for name in SHADOWED {
        p.push_str(&format!("{name}() {{ __rec {name} \"$@\"; return 0; }}\n"));
    }
    p
}

/// Runs bash with `args` in `dir`, killed at the deadline. `(exit success, stdout+stderr)`.
fn run_bash(args: &[&str], dir: &Path, trace: &Path) -> (bool, String) {
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let mut child = Command::new(BASH)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", &empty)
        .env("HOME", dir)
        .env("NUCLEIC_TRACE", trace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/bin/bash runs (the differential test needs bash 5)");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bash {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut out);
    }
    (status.success(), out)
}

fn understood(analysis: &Analysis) -> bool {
    analysis.opaque.is_empty()
}

/// Harmless payloads: every command name is unknown (recorded), redirections are relative.
/// `exact` ones run every command the parser sees (no `||` short-circuit, no loops).
const PAYLOADS: &[(&str, bool)] = &[
    ("a x \"y z\" 'q'", true),
    ("a $(b c) \"d $(e f)\"", true),
    ("a `b c`", true),
    ("a <(b) >(c); wait", true),
    ("x=$(a); b \"$x\"", true),
    ("a ${v:-$(b)}", true),
    ("a \"${v:-$(b)}\"", true),
    ("a ${v:-\"$(b)\"}", true),
    ("a $(( $(b) 1 ))", false),
    ("cat <<EOF\n$(a)\n`b`\nEOF", true),
    ("cat <<'EOF'\n$(a)\nEOF", true),
    ("cat <<\"EOF\"\n$(a)\nEOF", true),
    ("cat <<-EOF\n\t$(a)\n\tEOF", true),
    ("a <<EOF; b\nbody $(c)\nEOF", true),
    ("cat <<EOF\n\\$(a)\nEOF", true),
    ("cat <<EOF | a\nx\nEOF", true),
    ("a <<< \"$(b)\"", true),
    ("a \"$(cat <<EOF\n$(b)\nEOF\n)\"", true),
    ("a <<A <<B\n$(b)\nA\n$(c)\nB", true),
    ("echo $((1<<2)); a", false),
    ("((x = 1 << 2)); a", false),
    ("a # b\nc", true),
    ("a x#y", true),
    ("a; # $(b)", true),
    ("a $(b # c )\n)", true),
    ("a 'x' \"y\"z\\ w", true),
    ("a $'x\\ty' $'\\x41\\102' $'\\u00e9'", true),
    ("a $'\\''", true),
    ("a 'it''s'", true),
    ("a {b,c} d", true),
    ("if a; then b; fi", true),
    ("for x in 1 2; do a $x; done", true),
    ("{ a; b; }", true),
    ("(a; b)", true),
    ("a | b | c", true),
    ("a && b", true),
    ("! a", true),
    ("time a", true),
    ("time -p a", true),
    ("a 2>&1 >/dev/null", true),
    ("a > out.txt; b < out.txt", true),
    ("eval 'a; b'", true),
    ("a \"$(b \"$(c)\")\"", true),
    ("a \\$(b)", true),
    ("a \"\\$(b)\"", true),
    ("a '$(b)'", true),
    ("a $(b) $(c) $(d)", true),
    ("a=$(b) c", true),
    ("a\\\nb x", true),
    ("a $(b ')' c)", true),
    ("a \"$(b \"x)y\")\"", true),
    ("a <(b <(c)); wait", true),
    ("a \"$(b)\" | c \"$(d)\"", true),
    ("a ${#v} ${v%x}", true),
    ("a $v$(b)", true),
    ("echo a\\ b", true),
    ("test -n x && a", true),
    ("[ -n \"$(a)\" ] && b", true),
    ("a\r", false),
    ("case x in x) a;; esac", false),
    ("f() { a; }; f", false),
    ("${v:-a} x", false),
    ("a $[1+2]", false),
    ("a ~ ~/x", false),
    ("a 'x # y' b", true),
    ("a x # 'y\nb", true),
    ("a $(b) # $(c)", true),
    ("a \\# b", true),
    ("a\tb\tc", true),
    ("a $(b\n)", true),
    ("a &&\nb", true),
    ("a |\nb", true),
    ("a \\\n b", true),
    ("a \"x\\\"y\"", true),
    ("a \"$(b)\"'$(c)'", true),
    ("cat <<EOF; a 'x'\nbody\nEOF", false),
    ("a ${v:-$(b)$(c)}", true),
    ("a ${v:+$(b)}", false),
    ("a || b", false),
    ("false && a", false),
];

#[test]
fn the_parser_sees_every_command_bash_runs_on_harmless_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let prelude = prelude();
    let mut problems = Vec::new();
    for (n, (payload, exact)) in PAYLOADS.iter().enumerate() {
        let trace = dir.path().join(format!("trace-{n}"));
        std::fs::write(&trace, "").unwrap();
        let script = format!("{prelude}{payload}\n");
        let (_, output) = run_bash(&["--norc", "--noprofile", "-c", &script], dir.path(), &trace);
        let recorded = std::fs::read_to_string(&trace).unwrap();
        let ran: Vec<Vec<String>> = recorded
            .split('\u{1e}')
            .filter(|r| !r.is_empty())
            .map(|r| r.split('\u{1f}').map(str::to_owned).collect())
            .collect();
        let analysis = command::analyze(payload);
        let seen: BTreeSet<&str> =
            analysis.invocations.iter().map(|i| i.name()).filter(|n| !n.is_empty()).collect();
        let bash_names: BTreeSet<&str> = ran.iter().map(|r| r[0].as_str()).collect();
        if !understood(&analysis) {
            continue; // Asked anyway; the parser need not agree on what it gave up on.
        }
        for argv in &ran {
            let name = argv[0].as_str();
            if !seen.contains(name) {
                problems.push(format!(
                    "{payload:?}: bash ran `{name}`, the parser did not see it ({output})"
                ));
                continue;
            }
            // Where the parser knows every word, it must know them as bash passes them.
            let literal: Vec<Vec<&str>> = analysis
                .invocations
                .iter()
                .filter(|i| {
                    // `~` is kept as written: the policy expands it against the session's home.
                    i.name() == name
                        && !i.program.iter().any(|w| w.dynamic || w.glob || w.text.starts_with('~'))
                })
                .map(|i| i.program.iter().map(|w| w.text.as_str()).collect())
                .collect();
            if !literal.is_empty() && !literal.iter().any(|words| words == argv) {
                problems
                    .push(format!("{payload:?}: bash ran {argv:?}, the parser read {literal:?}"));
            }
        }
        if *exact {
            for name in &seen {
                if !bash_names.contains(name) && !matches!(*name, "eval" | "[[" | "wait") {
                    problems
                        .push(format!("{payload:?}: the parser saw `{name}`, bash did not run it"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "parser and bash disagree:\n{}", problems.join("\n"));
}

#[test]
fn lines_bash_rejects_are_never_understood() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut lines: Vec<String> = Vec::new();
    for corpus in [
        include_str!("../attacks.jsonl"),
        include_str!("../ordinary.jsonl"),
        include_str!("../corpus.jsonl"),
    ] {
        for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(cmd) = case["input"]["command"].as_str() {
                lines.push(cmd.to_owned());
            }
        }
    }
    lines.extend(PAYLOADS.iter().map(|(p, _)| (*p).to_owned()));
    lines.extend(
        [
            "echo 'open",
            "echo \"open",
            "a $(b",
            "a `b",
            "cat <<EOF\nno end",
            "a ${b",
            "a )",
            "a; ;; b",
            "a |",
            "&& a",
        ]
        .map(str::to_owned),
    );
    let mut disagreements = Vec::new();
    let mut rejected = 0;
    for line in lines.iter().filter(|l| !l.contains('\0')) {
        let (valid, output) = run_bash(&["-n", "-c", line], dir.path(), &trace);
        if !valid {
            rejected += 1;
            if understood(&command::analyze(line)) {
                disagreements.push(format!("{line:?}: bash -n: {}", output.trim()));
            }
        }
    }
    println!(
        "bash -n rejected {rejected} of {} lines; each is not understood by the parser",
        lines.len()
    );
    assert!(
        disagreements.is_empty(),
        "bash rejects lines the parser claims to understand:\n{}",
        disagreements.join("\n")
    );
}
