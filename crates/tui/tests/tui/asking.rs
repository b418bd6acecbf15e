//! A plan and an agent's questions answered in the terminal: each prompt as a snapshot at
//! 80×24 (hostile text in them shown as symbols), and what the keys send.

use nucleic_protocol::{Decision, QuestionAnswer, SessionMode};
use nucleic_tui::app::{Command, Target};
use serde_json::json;

use crate::fixture::{HOSTILE, app, ask, assert_clean, draw, press};

fn decisions(app: &mut nucleic_tui::app::App) -> Vec<(Target, Decision)> {
    app.take_commands()
        .into_iter()
        .filter_map(|c| match c {
            Command::Decide { target, decision, .. } => Some((target, decision)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_plan_read_in_the_session_and_approved_into_edit() {
    let mut app = app();
    let plan = format!(
        "# Refactor the parser\n\n1. Split `lexer.rs` out of `parser.rs`\n2. Add tests {HOSTILE}\n3. Run cargo test"
    );
    ask(&mut app, "p1", "ExitPlanMode", json!({ "plan": plan }));
    app.open("s3");
    press(&mut app, "a");
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
    press(&mut app, "e");
    let target = Target { session_id: "s3".into(), request_id: "p1".into() };
    assert_eq!(decisions(&mut app), [(target, Decision::ApprovePlan { mode: SessionMode::Edit })]);
}

#[test]
fn questions_answered_from_the_inbox() {
    let mut app = app();
    let input = json!({ "questions": [
        { "question": format!("Which store {HOSTILE}?"), "header": "Store", "options": [
            { "label": "SQLite" }, { "label": "Postgres" } ] },
        { "question": "Which checks?", "header": "Checks", "multiSelect": true, "options": [
            { "label": "clippy" }, { "label": "tests" }, { "label": "fmt" } ] },
    ]});
    ask(&mut app, "q1", "AskUserQuestion", input);
    // The inbox: the critical request first, the medium one, then these questions.
    press(&mut app, "2jja1");
    press(&mut app, "13");
    let screen = draw(&mut app, 80, 24);
    assert_clean(&screen);
    insta::assert_snapshot!(screen);
    press(&mut app, "\n");
    let answers = vec![
        QuestionAnswer {
            question: format!("Which store {HOSTILE}?"),
            choices: vec!["SQLite".into()],
            other: None,
        },
        QuestionAnswer {
            question: "Which checks?".into(),
            choices: vec!["clippy".into(), "fmt".into()],
            other: None,
        },
    ];
    let target = Target { session_id: "s3".into(), request_id: "q1".into() };
    assert_eq!(decisions(&mut app), [(target, Decision::Answer { answers })]);
}

#[test]
fn always_for_this_project_from_the_inbox() {
    let mut app = app();
    press(&mut app, "2jP");
    let target = Target { session_id: "s2".into(), request_id: "r2".into() };
    let always = Decision::AllowAlways { scope: Some(nucleic_protocol::RuleScope::Project) };
    assert_eq!(decisions(&mut app), [(target, always)]);
}
