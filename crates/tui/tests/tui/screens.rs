//! Each screen as a snapshot (80×24, 250 wide, 20×5), and hostile agent text never reaching a
//! cell as a control character.

use nucleic_tui::app::{Command, Reply, Screen, Target};
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

use crate::fixture::{app, assert_clean, draw, press};

#[test]
fn the_session_list_at_80x24() {
    let mut app = app();
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
}

#[test]
fn the_inbox_by_risk_at_80x24() {
    let mut app = app();
    press(&mut app, "2");
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
}

#[test]
fn a_session_at_80x24_with_a_tool_call_expanded() {
    let mut app = app();
    app.open("s1");
    // Up from the end: the reply, the failed Bash call (expanded), then thinking (expanded).
    press(&mut app, "kk ");
    let _ = draw(&mut app, 80, 24);
    press(&mut app, "kkk ");
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
}

#[test]
fn a_session_at_250_columns_following_the_end() {
    let mut app = app();
    app.open("s1");
    let screen = draw(&mut app, 250, 30);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
}

#[test]
fn deny_with_a_reason_prompts_and_sends_what_was_typed() {
    let mut app = app();
    press(&mut app, "2j");
    press(&mut app, "dnot the theme file");
    let screen = draw(&mut app, 80, 24);
    insta::assert_snapshot!(screen);
    press(&mut app, "\n");
    let target = Target { session_id: "s2".into(), request_id: "r2".into() };
    let decision = nucleic_protocol::Decision::Deny { message: "not the theme file".into() };
    assert_eq!(app.take_commands(), [Command::Decide { target, decision, confirmed: false }]);
}

#[test]
fn a_critical_allow_asks_for_the_second_key() {
    let mut app = app();
    press(&mut app, "2a");
    assert!(app.take_commands().is_empty());
    let screen = draw(&mut app, 80, 24);
    insta::assert_snapshot!(screen);
    press(&mut app, "y");
    let commands = app.take_commands();
    assert!(
        matches!(&commands[..], [Command::Decide { confirmed: true, target, .. }] if target.request_id == "r1"),
        "{commands:?}"
    );
}

#[test]
fn the_keys_on_a_question_mark() {
    let mut app = app();
    press(&mut app, "?");
    let screen = draw(&mut app, 80, 24);
    insta::assert_snapshot!(screen);
}

#[test]
fn a_20x5_terminal_shows_each_screen_without_panicking() {
    let mut app = app();
    let mut shots = Vec::new();
    for keys in ["1", "2", "\n", "?"] {
        press(&mut app, keys);
        let screen = draw(&mut app, 20, 5);
        assert_clean(&screen);
        shots.push(screen.to_string());
    }
    assert_eq!(app.screen(), Screen::Session("s1".into()));
    for (w, h) in [(1, 1), (3, 2), (10, 3), (0, 0)] {
        let _ = draw(&mut app, w, h);
    }
    insta::assert_snapshot!(shots.join("\n"));
}

#[test]
fn the_diff_of_a_session_at_80x24() {
    let mut app = app();
    app.open("s1");
    press(&mut app, "D");
    assert_eq!(app.take_commands(), [Command::Diff { session_id: "s1".into(), turn: None }]);
    let loading = draw(&mut app, 80, 24);
    assert!(loading.to_string().contains("Loading the diff"));
    let patch = format!(
        "diff --git a/src/auth.rs b/src/auth.rs\nindex 1..2 100644\n--- a/src/auth.rs\n+++ b/src/auth.rs\n@@ -1,3 +1,3 @@\n fn cookie() -> bool {{\n-    racy()\n+    settled() // {}\n }}\n",
        crate::fixture::HOSTILE
    );
    let facts = serde_json::from_value(serde_json::json!({
        "baseBranch": "main", "baseSHA": "abc", "ahead": 2, "behind": 0, "conflicts": [],
        "files": [{"path": "src/auth.rs", "status": "modified", "additions": 1, "deletions": 1, "binary": false}],
        "patch": patch
    }))
    .unwrap();
    app.on_reply(nucleic_tui::app::Reply::Diff {
        session_id: "s1".into(),
        result: Ok(Box::new(facts)),
    });
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
    press(&mut app, "\u{1b}");
    assert_eq!(app.screen(), Screen::Session("s1".into()));
}

/// The cell at the first `needle` on row `y` of `screen`.
fn cell_at<'a>(screen: &'a TestBackend, y: u16, needle: &str) -> &'a ratatui::buffer::Cell {
    let row: String = (0..screen.buffer().area.width)
        .map(|x| screen.buffer()[(x, y)].symbol().to_owned())
        .collect();
    let at = row.find(needle).unwrap_or_else(|| panic!("{needle:?} not on row {y}: {row}"));
    let x = row[..at].chars().count();
    &screen.buffer()[(u16::try_from(x).unwrap(), y)]
}

fn row_of(screen: &TestBackend, needle: &str) -> u16 {
    let text = screen.to_string();
    let line =
        text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {text}"));
    u16::try_from(line).unwrap()
}

#[test]
fn one_turns_diff_in_syntax_colours_with_a_comment_under_its_line_at_80x24() {
    let mut app = app();
    app.open("s1");
    press(&mut app, "D");
    app.take_commands();
    let patch = "diff --git a/src/auth.rs b/src/auth.rs\n--- a/src/auth.rs\n+++ b/src/auth.rs\n@@ -1,3 +1,3 @@\n fn cookie() -> bool {\n-    racy(\"old\")\n+    settled(42) // fixed\n }\n";
    let facts = serde_json::from_value(serde_json::json!({
        "baseBranch": "main", "baseSHA": "abc", "ahead": 2, "behind": 0, "conflicts": [],
        "files": [{"path": "src/auth.rs", "status": "modified", "additions": 1, "deletions": 1, "binary": false}],
        "patch": patch, "turn": 2, "snapshot": "t2",
        "turns": [{"turn": 1, "startedAt": 1, "endedAt": 2}, {"turn": 2, "startedAt": 3, "endedAt": 4}]
    }))
    .unwrap();
    app.on_reply(Reply::Diff { session_id: "s1".into(), result: Ok(Box::new(facts)) });
    assert_eq!(app.take_commands(), [Command::Comments { session_id: "s1".into() }]);
    let comment = serde_json::from_value(serde_json::json!({
        "commentID": "c1", "path": "src/auth.rs", "line": 2, "body": format!("why 42? {}", crate::fixture::HOSTILE),
        "quote": ["    settled(42) // fixed"], "snapshot": "t2", "status": "open", "createdAt": 0,
        "createdBy": "telegram:42"
    }))
    .unwrap();
    app.on_reply(Reply::Comments {
        session_id: "s1".into(),
        said: None,
        result: Ok(vec![comment]),
    });
    let _ = draw(&mut app, 80, 24);
    press(&mut app, "jj");
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
    // The added line: its marker a green cell, `42` a constant, the comment dark grey; the
    // removed line's string cyan; the cursor's row (the added line) reversed.
    let added = row_of(&screen, "+    settled");
    let marker = cell_at(&screen, added, "+");
    assert_eq!(marker.fg, Color::Green);
    assert!(marker.modifier.contains(Modifier::REVERSED));
    assert_eq!(cell_at(&screen, added, "42").fg, Color::Blue);
    assert_eq!(cell_at(&screen, added, "fixed").fg, Color::DarkGray);
    assert!(cell_at(&screen, added, "settled").modifier.contains(Modifier::REVERSED), "the cursor");
    let removed = row_of(&screen, "-    racy");
    assert_eq!(cell_at(&screen, removed, "old").fg, Color::Cyan);
    assert!(!cell_at(&screen, removed, "racy").modifier.contains(Modifier::REVERSED));
    assert_eq!(cell_at(&screen, row_of(&screen, " fn cookie"), "fn").fg, Color::Magenta);
    // The keys of the diff screen, on ?.
    press(&mut app, "?");
    let help = draw(&mut app, 80, 24);
    insta::assert_snapshot!("the_keys_on_the_diff_screen", help);
}

#[test]
fn the_session_list_moves_down_and_back_up() {
    let mut app = app();
    press(&mut app, "1jjj");
    let bottom = app.list_selected;
    assert!(bottom >= 2, "{bottom}");
    press(&mut app, "k");
    assert_eq!(app.list_selected, bottom - 1, "k moves up");
    press(&mut app, "kkkkkk");
    assert_eq!(app.list_selected, 0);
}
