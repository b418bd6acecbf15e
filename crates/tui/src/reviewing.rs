//! Reviewing a session: its diff screen's keys (a cursor, one turn or the whole session, a
//! range marked), review comments typed on its lines, resolved and sent to the agent, and the
//! session's model chosen — the cockpit's review words, on single keys.

use nucleic_protocol::ReviewComment;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::app::{App, Command, Prompt, Screen};
use crate::transcript::Tone;

/// A review comment being typed on lines of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentDraft {
    pub session_id: String,
    /// The file, relative to the worktree (git's new-side name).
    pub path: String,
    pub line: u32,
    /// The last line of a range (none: one line).
    pub end_line: Option<u32>,
    /// The snapshot the diff showed (what the lines are).
    pub snapshot: Option<String>,
    pub text: String,
}

/// The session's model being chosen: typed, or `Tab` through the backend's suggestions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub session_id: String,
    pub text: String,
    pub suggestions: Vec<String>,
    /// The suggestion `Tab` last put in.
    pub at: Option<usize>,
}

impl App {
    /// Shows `session_id`'s diff: the whole session's, or turn `turn`'s (asked of the host).
    pub fn show_diff_turn(&mut self, session_id: &str, turn: Option<u32>) {
        self.screen = Some(Screen::Diff(session_id.to_owned()));
        if self.diff.as_ref().is_some_and(|d| d.session_id != session_id) {
            self.diff = None;
        }
        self.diff_turn = turn;
        self.command(Command::Diff { session_id: session_id.to_owned(), turn });
    }

    /// The session's comments came (after the diff, or after one was added or resolved).
    pub(crate) fn on_comments(&mut self, session_id: &str, comments: Vec<ReviewComment>) {
        if let Some(diff) = self.diff.as_mut().filter(|d| d.session_id == session_id) {
            diff.set_comments(comments);
        }
    }

    /// A key on the diff screen of `session_id`.
    pub(crate) fn diff_key(&mut self, session_id: &str, key: KeyEvent) {
        let height = self.diff_height.max(1);
        let page = isize::try_from(height).unwrap_or(isize::MAX);
        let session = session_id.to_owned();
        match key.code {
            KeyCode::Esc | KeyCode::Backspace => {
                self.screen = Some(Screen::Session(session));
                return;
            }
            KeyCode::Char('M') => {
                crate::keys::ask_merge(self, session_id);
                return;
            }
            KeyCode::Char('w') => return self.show_diff_turn(session_id, None),
            KeyCode::Char(c @ ('[' | ']')) => return self.other_turn(session_id, c == ']'),
            KeyCode::Char('R') => {
                self.command(Command::SendReview { session_id: session });
                return;
            }
            _ => {}
        }
        let Some(diff) = self.diff.as_mut() else { return };
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => diff.move_cursor(1, height),
            KeyCode::Char('k') | KeyCode::Up => diff.move_cursor(-1, height),
            KeyCode::PageDown | KeyCode::Char(' ') => diff.page(page, height),
            KeyCode::PageUp => diff.page(-page, height),
            KeyCode::Char('g') | KeyCode::Home => diff.move_cursor(isize::MIN / 2, height),
            KeyCode::Char('G') | KeyCode::End => diff.move_cursor(isize::MAX / 2, height),
            KeyCode::Char('V') => {
                diff.mark = if diff.mark.is_some() { None } else { Some(diff.cursor) };
            }
            KeyCode::Char('c') => match diff.comment_target() {
                Ok((path, line, last)) => {
                    let draft = CommentDraft {
                        session_id: session,
                        path,
                        line,
                        end_line: (last != line).then_some(last),
                        snapshot: diff.snapshot.clone(),
                        text: String::new(),
                    };
                    self.prompt = Some(Prompt::Comment(draft));
                }
                Err(why) => self.say(why, Tone::Warn),
            },
            KeyCode::Char('v') => match diff.comment_at_cursor() {
                Some(c) => {
                    let resolved = c.status == nucleic_protocol::CommentStatus::Open;
                    let comment_id = c.comment_id.clone();
                    self.command(Command::ResolveComment {
                        session_id: session,
                        comment_id,
                        resolved,
                    });
                }
                None => {
                    self.say("Put the cursor on a comment (▸) to resolve or reopen it", Tone::Info)
                }
            },
            _ => {}
        }
    }

    /// The turn before (`next`: after) the one shown; past the last, the whole session.
    fn other_turn(&mut self, session_id: &str, next: bool) {
        let Some(diff) = self.diff.as_ref().filter(|d| d.session_id == session_id) else { return };
        let turns = diff.turns;
        if turns == 0 {
            return self.say("No turn has a snapshot yet: the whole session is shown", Tone::Info);
        }
        let turn = match (diff.turn, next) {
            (None, false) => Some(turns),
            (None, true) => Some(1),
            (Some(1), false) => return self.say("This is the first turn", Tone::Info),
            (Some(n), false) => Some(n - 1),
            (Some(n), true) if n >= turns => None,
            (Some(n), true) => Some(n + 1),
        };
        self.show_diff_turn(session_id, turn);
    }

    /// Asks for `session_id`'s model, offering its backend's suggestions.
    pub(crate) fn ask_model(&mut self, session_id: &str) {
        let backend = self.sessions.get(session_id).map(|s| s.backend);
        let info = self.backends.iter().find(|b| Some(b.backend) == backend);
        if info.is_some_and(|b| !b.capabilities.set_model) {
            return self.say("This backend cannot change the model mid-session", Tone::Warn);
        }
        let suggestions = info.map(|b| b.models.clone()).unwrap_or_default();
        self.prompt = Some(Prompt::Model(ModelChoice {
            session_id: session_id.to_owned(),
            text: String::new(),
            suggestions,
            at: None,
        }));
    }

    /// A key while a comment is typed.
    pub(crate) fn comment_key(&mut self, mut draft: CommentDraft, key: KeyCode) -> Option<Prompt> {
        match key {
            KeyCode::Esc => None,
            KeyCode::Enter if draft.text.trim().is_empty() => {
                self.say("An empty comment is not sent (Esc drops it)", Tone::Info);
                Some(Prompt::Comment(draft))
            }
            KeyCode::Enter => {
                if let Some(diff) = self.diff.as_mut() {
                    diff.mark = None;
                }
                draft.text = draft.text.trim().to_owned();
                self.command(Command::Comment(draft));
                None
            }
            code => {
                crate::keys::edit(&mut draft.text, code);
                Some(Prompt::Comment(draft))
            }
        }
    }

    /// A key while the model is chosen.
    pub(crate) fn model_key(&mut self, mut choice: ModelChoice, key: KeyCode) -> Option<Prompt> {
        match key {
            KeyCode::Esc => None,
            KeyCode::Tab if !choice.suggestions.is_empty() => {
                let at = choice.at.map_or(0, |i| (i + 1) % choice.suggestions.len());
                choice.text = choice.suggestions[at].clone();
                choice.at = Some(at);
                Some(Prompt::Model(choice))
            }
            KeyCode::Enter => {
                let model = choice.text.trim().to_owned();
                if model.is_empty() {
                    return Some(Prompt::Model(choice));
                }
                self.command(Command::SetModel { session_id: choice.session_id, model });
                None
            }
            code => {
                crate::keys::edit(&mut choice.text, code);
                choice.at = None;
                Some(Prompt::Model(choice))
            }
        }
    }
}

#[cfg(test)]
#[path = "reviewing_tests.rs"]
mod tests;
