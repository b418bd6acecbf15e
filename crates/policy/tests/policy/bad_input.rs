//! Bad input: huge lines, deep nesting, invalid UTF-8, NUL bytes, unterminated quotes and
//! here-documents are decided in bounded time (no stack overflow), and never allowed.

use std::time::{Duration, Instant};

use nucleic_policy::{Behaviour, CodexCommand, Mode};
use proptest::prelude::*;

use crate::support::{bash, ctx, permissive, resolver};

/// Generous for a debug build on a loaded two-core machine: an ordinary line is decided in
/// microseconds, but the 10,000-`eval` line takes ~1 s per three modes in a debug build alone
/// and 5–6 s at load 5–8 (seen in full-crate runs), while a parse that blew up with nesting
/// would take minutes.
const BOUND: Duration = Duration::from_secs(15);

fn never_allowed(line: &str) {
    let start = Instant::now();
    for mode in [Mode::Edit, Mode::Full, Mode::Readonly] {
        let d = bash(&permissive(), mode, line);
        let shown: String = line.chars().take(60).collect();
        assert_ne!(d.behaviour, Behaviour::Allow, "{shown:?}… allowed in {mode:?}: {d:?}");
        assert!(!d.reason.is_empty());
    }
    let elapsed = start.elapsed();
    assert!(elapsed < BOUND, "{} bytes took {elapsed:?}", line.len());
}

#[test]
fn lines_of_64_kib_and_more_are_asked() {
    for size in [64 * 1024 + 1, 200 * 1024, 1024 * 1024] {
        never_allowed(&format!("ls {}", "a".repeat(size)));
        never_allowed(&"ls;".repeat(size / 3));
    }
}

#[test]
fn ten_thousand_nested_substitutions_are_bounded_and_asked() {
    let n = 10_000;
    for (open, close) in [
        ("$(", ")"),
        ("${x:-", "}"),
        ("\"${x:-", "}\""),
        ("$((", "))"),
        ("$[", "]"),
        ("((", "))"),
        ("(", ")"),
        ("<(", ")"),
        ("\"$(", ")\""),
        ("$(echo ", ")"),
        ("${a[", "]}"),
    ] {
        never_allowed(&format!("ls {}x{}", open.repeat(n), close.repeat(n)));
        // Unbalanced too.
        never_allowed(&format!("ls {}x", open.repeat(n)));
    }
    never_allowed(&format!("{}ls", "eval ".repeat(n)));
    never_allowed(&format!("{}ls", "bash -c ".repeat(n)));
    never_allowed(&format!("ls {}", "`".repeat(n)));
    never_allowed(&format!("{}ls{}", "$(cat <<E\n".repeat(n), "\nE\n)".repeat(n)));
    never_allowed(&"cat <<A ".repeat(n));
    // Escaped backticks are literal: a valid line, only bounded.
    let start = Instant::now();
    let _ = bash(&permissive(), Mode::Edit, &format!("ls {}", "\\`".repeat(n)));
    assert!(start.elapsed() < BOUND);
}

#[test]
fn invalid_utf8_and_nul_bytes_are_asked() {
    let bytes: &[&[u8]] = &[b"ls \xff\xfe", b"cat \xc3(", b"ls\xe2\x82", b"\xf0\x28\x8c\x28 x"];
    for raw in bytes {
        never_allowed(&String::from_utf8_lossy(raw));
    }
    for line in ["ls\0; rm -rf ~", "ls \0", "echo a\0b", "git status\0"] {
        never_allowed(line);
    }
    // The same through Codex's argv form.
    let r = resolver();
    let c = ctx(Mode::Full, &r);
    for argv in [
        vec!["ls".to_owned(), "a\0b".to_owned()],
        vec![String::from_utf8_lossy(b"ls\xff").into_owned()],
    ] {
        let d = permissive().evaluate_codex_command(&CodexCommand::Argv(argv.clone()), None, &c);
        assert_ne!(d.behaviour, Behaviour::Allow, "{argv:?}: {d:?}");
    }
}

#[test]
fn unterminated_quotes_and_here_documents_are_asked() {
    for line in [
        "echo 'open",
        "echo \"open",
        "echo $'open",
        "echo `open",
        "echo $(open",
        "echo ${open",
        "echo $((1 +",
        "cat <<EOF\nno end",
        "cat <<EOF",
        "cat <<-'EOF'\n\tbody",
        "bash <<EOF\nsudo id",
        "ls |",
        "ls &&",
        "(ls",
        "ls )",
    ] {
        never_allowed(line);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any line from shell-ish pieces is decided without panicking, in bounded time.
    #[test]
    fn any_line_is_decided_in_bounded_time(pieces in prop::collection::vec(
        prop::sample::select(vec![
            "ls", "cat", "sudo", "rm -rf", "~", "~u", "/", "..", "$(", ")", "${", "}", "$((", "))",
            "`", "'", "\"", "<<", "EOF", "\n", ";", "|", "&&", "||", "&", ">", "<", "#", "\\", "$'",
            "\\x41", "{a,b}", "*", "?", "[", "]", "(", " ", "\t", "\0", "\u{fffd}", "=", "x=1",
            "bash -c", "eval", "find . -exec", "{}", "\\;", "xargs", "env -C", "time -p", ".ssh",
        ]),
        0..80,
    )) {
        let line: String = pieces.concat();
        let start = Instant::now();
        let d = bash(&permissive(), Mode::Edit, &line);
        prop_assert!(start.elapsed() < BOUND);
        if line.contains('\0') || line.contains('\u{fffd}') {
            prop_assert_ne!(d.behaviour, Behaviour::Allow, "{:?}", line);
        }
    }

    /// Arbitrary Unicode never panics and a NUL is never allowed.
    #[test]
    fn arbitrary_text_never_panics(line in "\\PC{0,200}", nul in any::<bool>()) {
        let line = if nul { format!("{line}\0") } else { line };
        let d = bash(&permissive(), Mode::Full, &line);
        if nul {
            prop_assert_ne!(d.behaviour, Behaviour::Allow);
        }
    }
}
