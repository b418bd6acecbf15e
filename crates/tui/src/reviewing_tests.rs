use nucleic_protocol::{BackendInfo, Capabilities, CommentStatus, GitFacts, SessionSummary};
use serde_json::json;

use crate::app::{App, Command, Prompt, Reply, Screen};
use crate::keys::tests::press;

const PATCH: &str = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,3 @@\n fn a() {}\n+fn b() {}\n fn c() {}\n";

fn facts(turn: Option<u32>, turns: usize) -> Box<GitFacts> {
    let turns: Vec<_> = (1..=turns)
        .map(|n| json!({"turn": n, "startedAt": n * 1000, "endedAt": n * 1000 + 500}))
        .collect();
    Box::new(
        serde_json::from_value(json!({
            "baseBranch": "main", "baseSHA": "abc", "ahead": 1, "behind": 0, "conflicts": [],
            "files": [{"path": "src/a.rs", "status": "modified", "additions": 1, "deletions": 0, "binary": false}],
            "patch": PATCH, "turn": turn, "turns": turns, "snapshot": "tree9"
        }))
        .unwrap(),
    )
}

/// An app on `s1`'s diff (`turns` turns with snapshots), the commands so far taken.
fn on_diff(turns: usize) -> App {
    let mut app = App::new(0);
    app.open("s1");
    press(&mut app, "D");
    assert!(app.take_commands().contains(&Command::Diff { session_id: "s1".into(), turn: None }));
    app.on_reply(Reply::Diff { session_id: "s1".into(), result: Ok(facts(None, turns)) });
    assert_eq!(app.take_commands(), [Command::Comments { session_id: "s1".into() }]);
    app
}

fn asked_turn(app: &mut App) -> Option<u32> {
    match app.take_commands().as_slice() {
        [Command::Diff { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    }
}

#[test]
fn brackets_walk_the_turns_and_w_comes_back_to_the_whole_session() {
    let mut app = on_diff(2);
    press(&mut app, "[");
    assert_eq!(asked_turn(&mut app), Some(2), "from the whole session: the last turn");
    app.on_reply(Reply::Diff { session_id: "s1".into(), result: Ok(facts(Some(2), 2)) });
    app.take_commands();
    press(&mut app, "[");
    assert_eq!(asked_turn(&mut app), Some(1));
    app.on_reply(Reply::Diff { session_id: "s1".into(), result: Ok(facts(Some(1), 2)) });
    app.take_commands();
    press(&mut app, "[");
    assert!(app.take_commands().is_empty(), "nothing before the first turn");
    press(&mut app, "r");
    let reload: Vec<_> = app.take_commands();
    assert!(
        reload.contains(&Command::Diff { session_id: "s1".into(), turn: Some(1) }),
        "{reload:?}"
    );
    press(&mut app, "]");
    assert_eq!(asked_turn(&mut app), Some(2));
    app.on_reply(Reply::Diff { session_id: "s1".into(), result: Ok(facts(Some(2), 2)) });
    app.take_commands();
    press(&mut app, "]");
    assert_eq!(asked_turn(&mut app), None, "past the last turn: the whole session");
    press(&mut app, "w");
    assert_eq!(asked_turn(&mut app), None);
    // A session without snapshots has no turn to show.
    let mut app = on_diff(0);
    press(&mut app, "]");
    assert!(app.take_commands().is_empty());
}

#[test]
fn c_comments_on_the_cursors_line_or_a_marked_range_with_the_diffs_snapshot() {
    let mut app = on_diff(1);
    // The cursor starts on ` fn a() {}`, line 1; j goes to `+fn b() {}`, line 2.
    press(&mut app, "jcneeds a test\n");
    let Some(Command::Comment(draft)) = app.take_commands().pop() else { panic!() };
    assert_eq!((draft.path.as_str(), draft.line, draft.end_line), ("src/a.rs", 2, None));
    assert_eq!((draft.text.as_str(), draft.snapshot.as_deref()), ("needs a test", Some("tree9")));
    // V marks, j extends: lines 2-3.
    press(&mut app, "Vjc  \n");
    assert!(app.take_commands().is_empty(), "an empty comment is not sent");
    assert!(matches!(app.prompt, Some(Prompt::Comment(_))));
    press(&mut app, "both\n");
    let Some(Command::Comment(draft)) = app.take_commands().pop() else { panic!() };
    assert_eq!((draft.line, draft.end_line), (2, Some(3)));
    // A file header takes no comment.
    press(&mut app, "gc");
    assert!(app.prompt.is_none() && app.take_commands().is_empty());
    press(&mut app, "\u{1b}");
    assert_eq!(app.screen(), Screen::Session("s1".into()));
}

#[test]
fn v_resolves_the_comment_under_the_cursor_and_r_sends_the_review() {
    let mut app = on_diff(1);
    let comment = serde_json::from_value(json!({
        "commentID": "c1", "path": "src/a.rs", "line": 2, "body": "why?", "quote": ["fn b() {}"],
        "snapshot": "tree9", "status": "open", "createdAt": 0, "createdBy": "local"
    }))
    .unwrap();
    app.on_reply(Reply::Comments {
        session_id: "s1".into(),
        said: None,
        result: Ok(vec![comment]),
    });
    press(&mut app, "v");
    assert!(app.take_commands().is_empty(), "the cursor is on no comment");
    press(&mut app, "jjv");
    assert_eq!(
        app.take_commands(),
        [Command::ResolveComment {
            session_id: "s1".into(),
            comment_id: "c1".into(),
            resolved: true
        }]
    );
    let diff = app.diff.as_ref().unwrap();
    assert_eq!(diff.comment_at_cursor().map(|c| c.status), Some(CommentStatus::Open));
    press(&mut app, "R");
    assert_eq!(app.take_commands(), [Command::SendReview { session_id: "s1".into() }]);
}

fn backend(set_model: bool) -> BackendInfo {
    let capabilities: Capabilities = serde_json::from_value(json!({
        "interactiveApprovals": true, "editedToolInput": true, "allowAlways": true,
        "denyAndStop": true, "interrupt": true, "setModel": set_model, "setPermissionMode": true,
        "resume": true, "fork": true, "partialDeltas": true
    }))
    .unwrap();
    serde_json::from_value(json!({
        "backend": "claudeCode", "available": true, "capabilities": capabilities,
        "models": ["opus", "sonnet"], "permissionModes": ["default"]
    }))
    .unwrap()
}

fn session() -> SessionSummary {
    serde_json::from_value(json!({
        "sessionID": "s1", "title": "t", "backend": "claudeCode", "status": "idle",
        "pendingApprovals": 0, "costUSD": 0.0, "lastSeq": 0, "updatedAt": 0, "archived": false,
        "readOnly": false
    }))
    .unwrap()
}

#[test]
fn o_switches_the_model_typed_or_tabbed_through_the_backends_and_says_when_it_cannot() {
    let mut app = App::new(0);
    app.sessions.insert("s1".into(), session());
    app.backends = vec![backend(true)];
    app.open("s1");
    app.take_commands();
    press(&mut app, "O\t\t\t\n");
    assert_eq!(
        app.take_commands(),
        [Command::SetModel { session_id: "s1".into(), model: "opus".into() }],
        "Tab went opus, sonnet, opus"
    );
    press(&mut app, "Omy-model\n");
    assert_eq!(
        app.take_commands(),
        [Command::SetModel { session_id: "s1".into(), model: "my-model".into() }]
    );
    press(&mut app, "O\n\u{1b}");
    assert!(app.take_commands().is_empty(), "no model, nothing sent");
    app.backends = vec![backend(false)];
    press(&mut app, "O");
    assert!(app.prompt.is_none());
    assert!(app.flash.as_ref().is_some_and(|(t, _)| t.contains("cannot change the model")));
}
