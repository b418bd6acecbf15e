//! A cockpit with two projects, four sessions and their events (a critical and a medium
//! approval waiting, tool calls, thinking, a streamed reply), some of it hostile text; and
//! drawing it on a test backend.

use nucleic_protocol::{Event, HostMessage, ProjectSummary, SessionSummary};
use nucleic_tui::app::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

/// "Now" in the fixture: 2026-12-07 12:00 UTC.
pub const NOW: i64 = 1_796_644_800_000;

/// Escape sequences an agent might print: clear the screen, set the window title, a C1 CSI,
/// a bidi override.
pub const HOSTILE: &str = "\u{1b}[2J\u{1b}]2;pwned\u{7}\u{9b}31m\u{202e}evil";

fn project(id: &str, name: &str) -> ProjectSummary {
    serde_json::from_value(json!({
        "projectID": id, "name": name, "root": format!("/src/{name}"),
        "defaultBranch": "main", "defaultBackend": "claudeCode"
    }))
    .unwrap()
}

fn session(
    id: &str,
    project: &str,
    title: &str,
    status: &str,
    pending: u32,
    cost: f64,
    ago_s: i64,
) -> SessionSummary {
    serde_json::from_value(json!({
        "sessionID": id, "projectID": project, "title": title, "backend": "claudeCode",
        "status": status, "pendingApprovals": pending, "costUSD": cost, "lastSeq": 10,
        "updatedAt": NOW - ago_s * 1000, "archived": false, "readOnly": false,
        "worktree": {"path": format!("/w/{id}"), "branch": format!("nucleic/{id}"), "baseRef": "main", "baseSHA": "abc"},
        "mode": "edit"
    }))
    .unwrap()
}

fn event(session: &str, seq: u64, ago_s: i64, kind: Value) -> Event {
    let at = nucleic_protocol::Timestamp::from_unix_millis(NOW - ago_s * 1000);
    serde_json::from_value(json!({
        "seq": seq, "at": at.to_string(), "sessionID": session, "backend": "claudeCode", "kind": kind
    }))
    .unwrap()
}

/// The events of session `s1` ("Fix the flaky login test"), ending with a critical request.
fn s1_events() -> Vec<Event> {
    let kinds = vec![
        json!({"type": "sessionCreated", "title": "Fix the flaky login test", "cwd": "/w/s1", "projectID": "p1"}),
        json!({"type": "userText", "isPartial": false, "messageID": "u1", "text": "Fix the flaky login test"}),
        json!({"type": "thinking", "isPartial": false, "messageID": "m1", "text": "The test races the session cookie; look at auth first."}),
        json!({"type": "assistantText", "isPartial": false, "messageID": "m1", "text": "I'll read the test, then the auth module."}),
        json!({"type": "toolCallCompleted", "toolCallID": "t1", "name": "Read", "input": {"file_path": "/w/s1/tests/login.rs"}}),
        json!({"type": "toolResult", "toolCallID": "t1", "content": "fn login() {\n    assert!(cookie());\n}\n", "isError": false}),
        json!({"type": "toolCallCompleted", "toolCallID": "t2", "name": "Bash", "input": {"command": "cargo test login"}}),
        json!({"type": "toolResult", "toolCallID": "t2", "content": format!("test login ... FAILED {HOSTILE}"), "isError": true}),
        json!({"type": "assistantText", "isPartial": false, "messageID": "m2", "text": format!("The output said {HOSTILE}. Now I need to wipe the cache.")}),
        json!({"type": "approvalRequested", "requestID": "r1", "toolName": "Bash", "input": {"command": "rm -rf /w/s1/target ~/.cache"},
               "risk": "critical", "riskReasons": ["deletes outside the worktree"], "description": "Wipe the build cache"}),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, k)| event("s1", i as u64 + 1, 600 - i as i64 * 30, k))
        .collect()
}

fn s2_events() -> Vec<Event> {
    let kinds = vec![
        json!({"type": "sessionCreated", "title": "Add dark mode", "cwd": "/w/s2"}),
        json!({"type": "userText", "isPartial": false, "messageID": "u1", "text": "Add dark mode"}),
        json!({"type": "approvalRequested", "requestID": "r2", "toolName": "Write", "input": {"file_path": "/w/s2/src/theme.css", "content": "body{}"},
               "risk": "medium"}),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, k)| event("s2", i as u64 + 1, 900 - i as i64 * 10, k))
        .collect()
}

/// The cockpit as it stands after the host said all that.
pub fn app() -> App {
    let mut app = App::new(NOW);
    app.projects = vec![project("p1", "webapp"), project("p2", &format!("api{HOSTILE}"))];
    let sessions = vec![
        session("s1", "p1", "Fix the flaky login test", "awaiting-approval", 1, 0.4213, 300),
        session("s2", "p2", "Add dark mode", "awaiting-approval", 1, 0.004, 890),
        session("s3", "p1", &format!("Refactor {HOSTILE}"), "running", 0, 1.5, 20),
        session("s4", "p2", "Bump dependencies", "finished", 0, 0.0, 3 * 86_400),
    ];
    app.on_reply(nucleic_tui::app::Reply::Sessions(sessions));
    for event in s1_events().into_iter().chain(s2_events()) {
        app.on_host(HostMessage::Event { event });
    }
    app.take_commands();
    app
}

/// Session `s3` asks `tool` with `input` (request `id`, low risk), after all of `app`'s events.
pub fn ask(app: &mut App, id: &str, tool: &str, input: Value) {
    let kind = json!({"type": "approvalRequested", "requestID": id, "toolName": tool, "input": input, "risk": "low"});
    let event = event("s3", 100 + u64::from(id.as_bytes()[id.len() - 1]), 5, kind);
    app.on_host(HostMessage::Event { event });
}

/// Every cell of `backend` holds nothing a terminal would act on.
pub fn assert_clean(backend: &TestBackend) {
    for cell in backend.buffer().content() {
        let symbol = cell.symbol();
        assert!(
            nucleic_tui::sanitize::is_clean(symbol) && !symbol.contains('\n'),
            "a cell holds {symbol:?}"
        );
        assert_theme_safe(cell);
    }
}

/// A cell reads on a dark and a light theme alike: its background is the terminal's own, and
/// its colour one of the palette's hues that keep their contrast on both (no yellow, white,
/// black, bright variants, RGB or indexed colours, which the theme cannot adapt).
fn assert_theme_safe(cell: &ratatui::buffer::Cell) {
    use ratatui::style::Color;
    assert_eq!(cell.bg, Color::Reset, "a background colour on {:?}", cell.symbol());
    assert!(
        matches!(
            cell.fg,
            Color::Reset
                | Color::Red
                | Color::Green
                | Color::Blue
                | Color::Magenta
                | Color::Cyan
                | Color::DarkGray
        ),
        "{:?} drawn in {:?}",
        cell.symbol(),
        cell.fg
    );
}

/// `app` drawn on a `width`×`height` test backend.
pub fn draw(app: &mut App, width: u16, height: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| nucleic_tui::render::draw(frame, app)).unwrap();
    terminal.backend().clone()
}

/// Types `keys` (`\n` Enter, `\u{1b}` Esc, `\t` Tab).
pub fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\u{1b}' => KeyCode::Esc,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        nucleic_tui::keys::handle(app, KeyEvent::new(code, KeyModifiers::NONE));
    }
}
