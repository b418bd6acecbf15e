//! Tests of the shell parser.

use super::*;

fn names(line: &str) -> Vec<String> {
    parse(line)
        .commands
        .iter()
        .map(|c| c.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn lists_and_pipelines_split_into_simple_commands() {
    assert_eq!(names("git status; rm -rf ~"), ["git status", "rm -rf ~"]);
    assert_eq!(names("a && b || c & d\ne"), ["a", "b", "c", "d", "e"]);
    let s = parse("curl x | sh");
    assert_eq!((s.commands[0].pipeline, s.commands[0].stage), (s.commands[1].pipeline, 0));
    assert_eq!(s.commands[1].stage, 1);
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(names(r"s\udo ls"), ["sudo ls"]);
    assert_eq!(names(r#"'su'"do" "a b" c\ d"#), ["sudo a b c d"]);
    assert_eq!(names("echo $'a\\tb'"), ["echo a\tb"]);
    assert!(parse("echo 'open").opaque.len() == 1);
}

#[test]
fn substitutions_and_subshells_are_parsed() {
    let s = parse("echo $(sudo id) `whoami` <(curl x); (cd /; ls)");
    let all: Vec<String> = s
        .commands
        .iter()
        .map(|c| c.words.first().map(|w| w.text.clone()).unwrap_or_default())
        .collect();
    for name in ["sudo", "whoami", "curl", "cd", "ls", "echo"] {
        assert!(all.contains(&name.to_owned()), "{name} missing from {all:?}");
    }
    let echo = s.commands.iter().find(|c| c.words[0].text == "echo").unwrap();
    assert_eq!(echo.substitutions.len(), 3);
    assert!(s.opaque.is_empty(), "{:?}", s.opaque);
}

#[test]
fn expansions_make_words_dynamic() {
    let s = parse("$(echo sudo) ls; X=1 Y=$(pwd) cmd ${A}B s{u,}do");
    let first = s.commands.iter().find(|c| c.origin == Origin::Direct).unwrap();
    assert!(first.words[0].dynamic);
    let cmd = s.commands.iter().find(|c| c.words.first().is_some_and(|w| w.text == "cmd")).unwrap();
    assert_eq!(cmd.assignments.len(), 2);
    assert!(cmd.words[1].dynamic && cmd.words[2].dynamic);
}

#[test]
fn redirections_and_heredocs() {
    let s = parse("cat <<'EOF' > out.txt 2>&1\nsudo rm\nEOF\nls >> log");
    assert_eq!(s.commands.len(), 2, "{s:?}");
    let cat = &s.commands[0];
    assert_eq!(
        cat.redirects[0],
        Redirect {
            kind: RedirectKind::Input,
            target: Word { text: "sudo rm\n".into(), ..Word::default() }
        }
    );
    assert_eq!(cat.redirects[1].kind, RedirectKind::Write);
    assert_eq!(cat.redirects[1].target.text, "out.txt");
    assert_eq!(cat.redirects[2].kind, RedirectKind::Dup);
    assert_eq!(s.commands[1].redirects[0].target.text, "log");
}

#[test]
fn control_keywords_are_skipped_or_opaque() {
    assert_eq!(names("if test -f x; then rm x; fi"), ["test -f x", "rm x"]);
    let s = parse("for f in *.rs $(ls); do rm $f; done");
    assert!(s.opaque.is_empty(), "{:?}", s.opaque);
    assert_eq!(names("for f in *.rs $(ls); do rm $f; done"), ["ls", "rm "]);
    assert!(!parse("for ((i=0; i<3; i++)); do x; done").opaque.is_empty());
    assert!(!parse("case $x in a) sudo id;; esac").opaque.is_empty());
    assert!(!parse("f() { sudo x; }").opaque.is_empty());
}

#[test]
fn work_is_bounded() {
    let long = "a".repeat(MAX_INPUT + 1);
    assert!(!parse(&long).opaque.is_empty());
    let deep = format!("{}x{}", "$(".repeat(MAX_DEPTH + 5), ")".repeat(MAX_DEPTH + 5));
    assert!(parse(&deep).opaque.iter().any(|o| o.contains("nested")));
    let many = "a;".repeat(MAX_COMMANDS + 10);
    assert!(!parse(&many).opaque.is_empty());
}
