//! Keys: what each does on each screen (the list `?` shows is [`HELP`]), applied to the
//! [`App`]. Pure: a key changes the state and may queue commands, nothing more.

use nucleic_protocol::{Decision, RuleScope};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::{Anchor, App, Command, Finish, Integration, Prompt, Screen, Target};
use crate::transcript::Tone;

/// The deny reason sent when none is typed (the cockpit's).
pub const DEFAULT_DENY: &str = "Denied by the user.";

/// The keys, by where they work, in the cockpit's words.
pub const HELP: &[(&str, &[(&str, &str)])] = &[
    (
        "Everywhere",
        &[
            ("?", "Keys (this list)"),
            ("1 / 2 / Tab", "Sessions / Inbox / switch"),
            ("j k ↑ ↓", "Move"),
            ("Enter", "Open the session"),
            ("r", "Refresh"),
            ("q  Ctrl-C", "Quit"),
        ],
    ),
    (
        "Inbox and session",
        &[
            ("a", "Allow (a plan: read it, e f r approve into a mode)"),
            ("", "(questions: 1-9 choose, o own words, Enter next)"),
            ("A / P", "Always (this session / this project)"),
            ("d", "Deny… (type why, Enter sends, Esc back)"),
            ("y", "Yes, allow (critical: the second key)"),
        ],
    ),
    (
        "Session",
        &[
            ("Enter / Space", "Expand or fold a tool call or thinking"),
            ("PgUp PgDn g G", "Page, top, follow the end"),
            ("m", "Message the agent… (Enter sends, Alt+Enter: new line)"),
            ("x / S", "Interrupt / Stop (asks first)"),
            ("D", "Diff: one turn or all, review comments (? there)"),
            ("M K X C", "Merge (y, s squash, b rebase) / Keep / Discard / Continue…"),
            ("o / O", "Mode… (r readonly, e edit, f full) / Model… (Tab)"),
            ("Esc", "Back"),
        ],
    ),
    (
        "Diff",
        &[
            ("j k PgUp PgDn", "Move the cursor, page (g G: top, end)"),
            ("[ ] / w", "The turn before / after · the whole session"),
            ("c / V", "Comment on the line… / mark a range, then c"),
            ("v", "Resolve or reopen the comment under the cursor"),
            ("R", "Send review: the open comments, to the agent"),
            ("M", "Merge… (y, s squash, b rebase)"),
            ("r / Esc", "Reload / Back"),
        ],
    ),
];

/// The sections of [`HELP`] that `diff` (the diff screen) or the other screens show.
pub fn help_sections(
    diff: bool,
) -> impl Iterator<Item = &'static (&'static str, &'static [(&'static str, &'static str)])> {
    HELP.iter().filter(move |(name, _)| match *name {
        "Everywhere" => true,
        "Diff" => diff,
        _ => !diff,
    })
}

/// Applies `key` to `app`.
pub fn handle(app: &mut App, key: KeyEvent) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        app.quit = true;
        return;
    }
    if app.prompt.is_some() {
        prompt_key(app, key);
        return;
    }
    if app.help {
        // Any key closes the list of keys.
        app.help = false;
        return;
    }
    match key.code {
        KeyCode::Char('?') => app.help = true,
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Char('1') => app.screen = Some(Screen::Sessions),
        KeyCode::Char('2') => app.screen = Some(Screen::Inbox),
        KeyCode::Tab => {
            app.screen = Some(match app.screen() {
                Screen::Sessions => Screen::Inbox,
                Screen::Inbox | Screen::Session(_) | Screen::Diff(_) => Screen::Sessions,
            });
        }
        KeyCode::Char('r') => {
            app.command(Command::Refresh);
            if let Screen::Diff(id) = app.screen() {
                app.show_diff(&id);
            }
            app.say("Refreshing…", Tone::Info);
        }
        _ => match app.screen() {
            Screen::Sessions => sessions_key(app, key),
            Screen::Inbox => inbox_key(app, key),
            Screen::Session(id) => session_key(app, &id, key),
            Screen::Diff(id) => app.diff_key(&id, key),
        },
    }
}

fn sessions_key(app: &mut App, key: KeyEvent) {
    let n = app.sessions.len();
    match key.code {
        KeyCode::Char('j') | KeyCode::Down => app.select_session((app.list_selected + 1).min(n)),
        KeyCode::Char('k') | KeyCode::Up => app.select_session(app.list_selected.saturating_sub(1)),
        KeyCode::Enter => {
            let id = app.session_list().get(app.list_selected).map(|s| s.session_id.clone());
            if let Some(id) = id {
                app.open(&id);
            }
        }
        _ => {}
    }
}

fn inbox_key(app: &mut App, key: KeyEvent) {
    let items = app.inbox();
    let selected = items.get(app.inbox_selected).map(|i| i.target.clone());
    match key.code {
        KeyCode::Char('j') | KeyCode::Down => app.select_request(app.inbox_selected + 1),
        KeyCode::Char('k') | KeyCode::Up => {
            app.select_request(app.inbox_selected.saturating_sub(1))
        }
        KeyCode::Enter => {
            if let Some(target) = selected {
                app.open(&target.session_id);
            }
        }
        _ => {
            if let Some(target) = selected {
                answer_key(app, target, key);
            }
        }
    }
}

/// `a`, `A`, `d` on an approval.
fn answer_key(app: &mut App, target: Target, key: KeyEvent) {
    if app.selection_moved && matches!(key.code, KeyCode::Char('a' | 'A' | 'P' | 'd')) {
        app.selection_moved = false;
        app.say("That one was answered elsewhere: look at this one, then answer it", Tone::Warn);
        return;
    }
    match key.code {
        KeyCode::Char('a') => match app.pending_request(&target) {
            Some(request) if crate::asking::asks_more(&request) => {
                app.start_answer(target, &request)
            }
            _ => app.decide(target, Decision::Allow),
        },
        KeyCode::Char('A') => {
            app.decide(target, Decision::AllowAlways { scope: Some(RuleScope::Session) });
        }
        KeyCode::Char('P') => {
            app.decide(target, Decision::AllowAlways { scope: Some(RuleScope::Project) });
        }
        KeyCode::Char('d') => app.prompt = Some(Prompt::DenyReason { target, text: String::new() }),
        _ => {}
    }
}

fn session_key(app: &mut App, session_id: &str, key: KeyEvent) {
    let rows = app.transcripts.get(session_id).map_or(0, |t| t.rows().len());
    let last = rows.saturating_sub(1);
    let current = app.view.selected.unwrap_or(last);
    let (top, bottom) = app.view.shown;
    let page = bottom.saturating_sub(top).max(1);
    match key.code {
        KeyCode::Esc | KeyCode::Backspace => app.back(),
        KeyCode::Char('k') | KeyCode::Up => select(app, current.saturating_sub(1), last),
        KeyCode::Char('j') | KeyCode::Down => select(app, current + 1, last),
        KeyCode::PageUp => select(app, current.saturating_sub(page), last),
        KeyCode::PageDown => select(app, current + page, last),
        KeyCode::Char('g') | KeyCode::Home => {
            app.view.selected = Some(0);
            app.view.anchor = Anchor::Top(0);
        }
        KeyCode::Char('G') | KeyCode::End => {
            app.view.selected = None;
            app.view.anchor = Anchor::Follow;
        }
        KeyCode::Enter | KeyCode::Char(' ') => {
            if let Some(row) = app.transcripts.get_mut(session_id).and_then(|t| t.row_mut(current))
                && row.foldable()
            {
                row.expanded = !row.expanded;
            }
        }
        KeyCode::Char('m') | KeyCode::Char('i') => {
            app.prompt = Some(Prompt::Composer { text: String::new() });
        }
        KeyCode::Char('x') => {
            app.command(Command::Interrupt { session_id: session_id.to_owned() });
        }
        KeyCode::Char('D') => app.show_diff(session_id),
        KeyCode::Char('M') => ask_merge(app, session_id),
        KeyCode::Char(c @ ('K' | 'X' | 'C')) => {
            let finish = match c {
                'K' => Finish::Keep,
                'X' => Finish::Discard,
                _ => Finish::Continue,
            };
            app.prompt = Some(Prompt::ConfirmFinish { session_id: session_id.to_owned(), finish });
        }
        KeyCode::Char('o') => {
            app.prompt = Some(Prompt::ChooseMode { session_id: session_id.to_owned() });
        }
        KeyCode::Char('O') => app.ask_model(session_id),
        KeyCode::Char('S') => {
            app.prompt = Some(Prompt::ConfirmStop { session_id: session_id.to_owned() });
        }
        KeyCode::Char('a' | 'A' | 'P' | 'd') => match app.first_pending(session_id) {
            Some(p) => {
                let target =
                    Target { session_id: session_id.to_owned(), request_id: p.request.request_id };
                answer_key(app, target, key);
            }
            None => app.say("Nothing waits for you in this session", Tone::Info),
        },
        _ => {}
    }
}

/// Asks before merging `session_id` into its base branch.
pub(crate) fn ask_merge(app: &mut App, session_id: &str) {
    let base =
        app.sessions.get(session_id).and_then(|s| s.worktree.as_ref()).map(|w| w.base_ref.clone());
    match base {
        Some(base) => {
            app.prompt = Some(Prompt::ConfirmMerge { session_id: session_id.to_owned(), base })
        }
        None => app.say("This session has no worktree to merge", Tone::Warn),
    }
}

/// Selects row `row` (the last one: follow the end), keeping it on screen.
fn select(app: &mut App, row: usize, last: usize) {
    if row >= last {
        app.view.selected = None;
        app.view.anchor = Anchor::Follow;
        return;
    }
    let (top, bottom) = app.view.shown;
    app.view.selected = Some(row);
    if row < top {
        app.view.anchor = Anchor::Top(row);
    } else if row > bottom {
        app.view.anchor = Anchor::Bottom(row);
    } else if app.view.anchor == Anchor::Follow {
        // Stop following where the screen is, so new events do not move it.
        app.view.anchor = Anchor::Bottom(bottom);
    }
}

fn prompt_key(app: &mut App, key: KeyEvent) {
    let Some(prompt) = app.prompt.take() else { return };
    app.prompt = match prompt {
        Prompt::DenyReason { target, mut text } => match key.code {
            KeyCode::Esc => None,
            KeyCode::Enter => {
                let reason = text.trim();
                let message =
                    if reason.is_empty() { DEFAULT_DENY.to_owned() } else { reason.to_owned() };
                app.decide(target, Decision::Deny { message });
                return;
            }
            code => {
                edit(&mut text, code);
                Some(Prompt::DenyReason { target, text })
            }
        },
        Prompt::ConfirmCritical { target, decision } => match key.code {
            KeyCode::Char('y') => {
                app.prompt = Some(Prompt::ConfirmCritical {
                    target: target.clone(),
                    decision: decision.clone(),
                });
                app.decide(target, decision);
                return;
            }
            KeyCode::Esc | KeyCode::Char('n') => None,
            _ => Some(Prompt::ConfirmCritical { target, decision }),
        },
        Prompt::Composer { mut text } => match key.code {
            KeyCode::Esc => None,
            // Alt+Enter (or Shift+Enter where the terminal tells them apart) breaks the line.
            KeyCode::Enter if key.modifiers.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) => {
                text.push('\n');
                Some(Prompt::Composer { text })
            }
            KeyCode::Enter => {
                if let (Screen::Session(session_id), false) = (app.screen(), text.trim().is_empty())
                {
                    app.command(Command::Send { session_id, text });
                }
                None
            }
            code => {
                edit(&mut text, code);
                Some(Prompt::Composer { text })
            }
        },
        Prompt::ConfirmMerge { session_id, .. } => {
            let chosen = match key.code {
                KeyCode::Char('y') => Some((Integration::Merge, false)),
                KeyCode::Char('u') => Some((Integration::Merge, true)),
                KeyCode::Char('s') => Some((Integration::Squash, false)),
                KeyCode::Char('S') => Some((Integration::Squash, true)),
                KeyCode::Char('b') => Some((Integration::Rebase, false)),
                KeyCode::Char('B') => Some((Integration::Rebase, true)),
                _ => None,
            };
            if let Some((how, update_checkout)) = chosen {
                app.command(Command::Merge { session_id, how, update_checkout });
            }
            None
        }
        Prompt::ConfirmFinish { session_id, finish } => {
            if key.code == KeyCode::Char('y') {
                app.command(Command::Finish { session_id, finish });
            }
            None
        }
        Prompt::ChooseMode { session_id } => {
            let mode = match key.code {
                KeyCode::Char('r') => Some("readonly"),
                KeyCode::Char('e') => Some("edit"),
                KeyCode::Char('f') => Some("full"),
                _ => None,
            };
            if let Some(mode) = mode {
                app.command(Command::SetMode { session_id, mode });
            }
            None
        }
        Prompt::ConfirmStop { session_id } => match key.code {
            KeyCode::Char('y') => {
                app.command(Command::Stop { session_id });
                None
            }
            _ => None,
        },
        Prompt::Plan(plan) => {
            let height = app.prompt_rows.saturating_sub(2);
            app.plan_key(plan, key.code, height)
        }
        Prompt::Questions(asking) => app.question_key(asking, key.code),
        Prompt::Comment(draft) => app.comment_key(draft, key.code),
        Prompt::Model(choice) => app.model_key(choice, key.code),
    };
}

/// Typing into a one-line field.
pub(crate) fn edit(text: &mut String, code: KeyCode) {
    match code {
        KeyCode::Char(c) if !c.is_control() => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => {}
    }
}

/// Text pasted into a prompt (bracketed paste): its control characters dropped, lines joined.
pub fn paste(app: &mut App, pasted: &str) {
    let clean: String = pasted
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    match &mut app.prompt {
        Some(Prompt::Composer { text } | Prompt::DenyReason { text, .. }) => text.push_str(&clean),
        Some(Prompt::Comment(draft)) => draft.text.push_str(&clean),
        Some(Prompt::Model(choice)) => choice.text.push_str(&clean),
        Some(Prompt::Questions(asking)) if asking.typing => {
            asking.other[asking.at].push_str(&clean)
        }
        Some(
            Prompt::Questions(_)
            | Prompt::Plan(_)
            | Prompt::ConfirmCritical { .. }
            | Prompt::ConfirmStop { .. }
            | Prompt::ConfirmMerge { .. }
            | Prompt::ConfirmFinish { .. }
            | Prompt::ChooseMode { .. },
        )
        | None => {}
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use ratatui::crossterm::event::KeyEvent;

    use super::*;

    pub(crate) fn press(app: &mut App, keys: &str) {
        for c in keys.chars() {
            let code = match c {
                '\n' => KeyCode::Enter,
                '\u{1b}' => KeyCode::Esc,
                '\t' => KeyCode::Tab,
                c => KeyCode::Char(c),
            };
            handle(app, KeyEvent::new(code, KeyModifiers::NONE));
        }
    }

    #[test]
    fn the_composer_sends_on_enter_and_esc_drops_it() {
        let mut app = App::new(0);
        app.open("s1");
        app.take_commands();
        press(&mut app, "mhi there\n");
        assert_eq!(
            app.take_commands(),
            [Command::Send { session_id: "s1".into(), text: "hi there".into() }]
        );
        press(&mut app, "mnope\u{1b}");
        assert!(app.take_commands().is_empty());
        assert!(app.prompt.is_none());
        press(&mut app, "q");
        assert!(app.quit);
    }

    #[test]
    fn alt_enter_breaks_the_line_of_a_follow_up() {
        let mut app = App::new(0);
        app.open("s1");
        app.take_commands();
        press(&mut app, "mone");
        handle(&mut app, KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        press(&mut app, "two\n");
        assert_eq!(
            app.take_commands(),
            [Command::Send { session_id: "s1".into(), text: "one\ntwo".into() }]
        );
    }

    #[test]
    fn stop_asks_first() {
        let mut app = App::new(0);
        app.open("s1");
        app.take_commands();
        press(&mut app, "Sn");
        assert!(app.take_commands().is_empty());
        press(&mut app, "Sy");
        assert_eq!(app.take_commands(), [Command::Stop { session_id: "s1".into() }]);
    }

    #[test]
    fn keep_discard_and_continue_ask_first_and_the_mode_takes_one_key() {
        let mut app = App::new(0);
        app.open("s1");
        app.take_commands();
        press(&mut app, "Xn");
        assert!(app.take_commands().is_empty(), "discard without its y");
        press(&mut app, "XyKyCy");
        let finish = |finish| Command::Finish { session_id: "s1".into(), finish };
        assert_eq!(
            app.take_commands(),
            [finish(Finish::Discard), finish(Finish::Keep), finish(Finish::Continue)]
        );
        press(&mut app, "oxoe");
        assert_eq!(
            app.take_commands(),
            [Command::SetMode { session_id: "s1".into(), mode: "edit" }],
            "x is no mode: nothing asked"
        );
    }

    #[test]
    fn the_merge_prompt_merges_squashes_or_rebases_and_capitals_update_the_checkout() {
        let mut app = App::new(0);
        app.open("s1");
        app.take_commands();
        press(&mut app, "M");
        assert!(app.prompt.is_none(), "no worktree: nothing to merge, nothing asked");
        let merge =
            |how, update_checkout| Command::Merge { session_id: "s1".into(), how, update_checkout };
        let mut chosen = Vec::new();
        for key in "yusSbBn".chars() {
            app.prompt =
                Some(Prompt::ConfirmMerge { session_id: "s1".into(), base: "main".into() });
            press(&mut app, &key.to_string());
            assert!(app.prompt.is_none(), "{key} closes the prompt");
            chosen.extend(app.take_commands());
        }
        assert_eq!(
            chosen,
            [
                merge(Integration::Merge, false),
                merge(Integration::Merge, true),
                merge(Integration::Squash, false),
                merge(Integration::Squash, true),
                merge(Integration::Rebase, false),
                merge(Integration::Rebase, true),
            ],
            "n integrates nothing"
        );
    }

    #[test]
    fn help_opens_with_a_question_mark_and_any_key_closes_it() {
        let mut app = App::new(0);
        press(&mut app, "?");
        assert!(app.help);
        press(&mut app, "q");
        assert!(!app.help && !app.quit);
    }
}
