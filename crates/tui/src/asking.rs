//! Plans and questions an agent puts to the person, answered in the terminal: a plan read in
//! full and approved into a mode (or denied with feedback), an agent's questions answered one
//! at a time (a choice by its number, several for a multi-select one, or free text). Pure: keys
//! change the state; the answer goes out through [`App::decide`].

use nucleic_protocol::{
    ASK_USER_QUESTION, ApprovalRequested, Decision, EXIT_PLAN_MODE, Question, QuestionAnswer,
    SessionMode, plan_text, questions,
};
use ratatui::crossterm::event::KeyCode;

use crate::app::{App, Prompt, Target};
use crate::transcript::Tone;

/// A plan waiting for approval, shown in full.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReview {
    pub target: Target,
    /// The plan's lines (sanitized when drawn).
    pub lines: Vec<String>,
    /// The first line shown.
    pub top: usize,
}

/// An agent's questions being answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answering {
    pub target: Target,
    pub questions: Vec<Question>,
    /// The question shown.
    pub at: usize,
    /// Per question: the chosen options' indexes, in the order they were chosen.
    pub chosen: Vec<Vec<usize>>,
    /// Per question: free text ("Other").
    pub other: Vec<String>,
    /// Keys go to the free text of the shown question.
    pub typing: bool,
}

/// The most options a question shows (choosable with `1`–`9`).
pub const MAX_OPTIONS: usize = 9;

impl Answering {
    /// The answers so far, one per question.
    fn answers(&self) -> Vec<QuestionAnswer> {
        self.questions
            .iter()
            .enumerate()
            .map(|(i, q)| QuestionAnswer {
                question: q.question.clone(),
                choices: self.chosen[i].iter().filter_map(|&c| q.options.get(c).cloned()).collect(),
                other: Some(self.other[i].trim().to_owned()).filter(|o| !o.is_empty()),
            })
            .collect()
    }

    fn answered(&self, i: usize) -> bool {
        !self.chosen[i].is_empty() || !self.other[i].trim().is_empty()
    }
}

/// Whether `request` is a plan or questions, which `a` answers with more than one key.
pub fn asks_more(request: &ApprovalRequested) -> bool {
    matches!(request.tool_name.as_str(), EXIT_PLAN_MODE | ASK_USER_QUESTION)
}

impl App {
    /// `a` on a plan or on questions: opens what answers it.
    pub(crate) fn start_answer(&mut self, target: Target, request: &ApprovalRequested) {
        if request.tool_name == EXIT_PLAN_MODE {
            let text = plan_text(&request.input)
                .unwrap_or("(the plan is empty: deny it with what you want, d)");
            let lines = text.lines().map(str::to_owned).collect();
            self.prompt = Some(Prompt::Plan(PlanReview { target, lines, top: 0 }));
            return;
        }
        match questions(&request.input) {
            Ok(questions) if !questions.is_empty() => {
                let n = questions.len();
                self.prompt = Some(Prompt::Questions(Answering {
                    target,
                    questions,
                    at: 0,
                    chosen: vec![Vec::new(); n],
                    other: vec![String::new(); n],
                    typing: false,
                }));
            }
            Ok(_) => self.say("The agent asked no question: d denies it", Tone::Warn),
            Err(why) => self.say(
                format!("These questions cannot be answered here: {why}; d denies"),
                Tone::Warn,
            ),
        }
    }

    /// A key while a plan is shown; the prompt that stays (`None`: closed).
    pub(crate) fn plan_key(
        &mut self,
        mut plan: PlanReview,
        code: KeyCode,
        height: usize,
    ) -> Option<Prompt> {
        let page = height.max(1);
        let last = plan.lines.len().saturating_sub(page);
        let mode = match code {
            KeyCode::Char('e') => Some(SessionMode::Edit),
            KeyCode::Char('f') => Some(SessionMode::Full),
            KeyCode::Char('r') => Some(SessionMode::Readonly),
            _ => None,
        };
        if let Some(mode) = mode {
            self.decide(plan.target, Decision::ApprovePlan { mode });
            return self.prompt.take();
        }
        match code {
            KeyCode::Esc => return None,
            KeyCode::Char('d') => {
                return Some(Prompt::DenyReason { target: plan.target, text: String::new() });
            }
            KeyCode::Char('j') | KeyCode::Down => plan.top = (plan.top + 1).min(last),
            KeyCode::Char('k') | KeyCode::Up => plan.top = plan.top.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => plan.top = (plan.top + page).min(last),
            KeyCode::PageUp => plan.top = plan.top.saturating_sub(page),
            _ => {}
        }
        Some(Prompt::Plan(plan))
    }

    /// A key while questions are being answered; the prompt that stays (`None`: closed).
    pub(crate) fn question_key(&mut self, mut asking: Answering, code: KeyCode) -> Option<Prompt> {
        let at = asking.at;
        if asking.typing {
            match code {
                KeyCode::Enter | KeyCode::Esc => asking.typing = false,
                KeyCode::Backspace => {
                    asking.other[at].pop();
                }
                KeyCode::Char(c) if !c.is_control() => asking.other[at].push(c),
                _ => {}
            }
            if code == KeyCode::Enter && !asking.questions[at].multi_select && asking.answered(at) {
                return self.next_question(asking);
            }
            return Some(Prompt::Questions(asking));
        }
        let question = &asking.questions[at];
        match code {
            KeyCode::Esc if at == 0 => return None,
            KeyCode::Esc => asking.at -= 1,
            KeyCode::Char('o') => asking.typing = true,
            KeyCode::Char('d') => {
                return Some(Prompt::DenyReason { target: asking.target, text: String::new() });
            }
            KeyCode::Char(c @ '1'..='9') => {
                let choice = usize::from(c as u8 - b'1');
                if choice >= question.options.len().min(MAX_OPTIONS) {
                    self.say(format!("{c} is not one of the choices"), Tone::Warn);
                    return Some(Prompt::Questions(asking));
                }
                if question.multi_select {
                    let chosen = &mut asking.chosen[at];
                    match chosen.iter().position(|&x| x == choice) {
                        Some(i) => {
                            chosen.remove(i);
                        }
                        None => chosen.push(choice),
                    }
                } else {
                    asking.chosen[at] = vec![choice];
                    asking.other[at].clear();
                    return self.next_question(asking);
                }
            }
            KeyCode::Enter if asking.answered(at) => return self.next_question(asking),
            KeyCode::Enter => {
                self.say("Choose with its number, or o for your own words", Tone::Warn)
            }
            _ => {}
        }
        Some(Prompt::Questions(asking))
    }

    /// The next question, or with the last one answered, the answers sent.
    fn next_question(&mut self, mut asking: Answering) -> Option<Prompt> {
        if asking.at + 1 < asking.questions.len() {
            asking.at += 1;
            return Some(Prompt::Questions(asking));
        }
        let answers = asking.answers();
        self.decide(asking.target, Decision::Answer { answers });
        self.prompt.take()
    }
}

#[cfg(test)]
mod tests {
    use nucleic_protocol::{Backend, Event, EventKind, HostMessage, Risk, Timestamp};
    use serde_json::json;

    use crate::app::{Command, Screen};
    use crate::keys::tests::press;

    use super::*;

    fn asked(app: &mut App, seq: u64, tool: &str, input: serde_json::Value) {
        let request = ApprovalRequested {
            request_id: format!("r{seq}"),
            tool_call_id: None,
            tool_name: tool.into(),
            input,
            description: None,
            blocked_path: None,
            risk: Some(Risk::Low),
            risk_reasons: vec![],
        };
        let event = Event {
            seq,
            at: Timestamp::from_unix_millis(1_700_000_000_000 + seq as i64),
            session_id: "s1".into(),
            backend: Backend::Simulated,
            native_type: None,
            kind: EventKind::ApprovalRequested(request),
            origin: None,
        };
        app.on_host(HostMessage::Event { event });
    }

    fn decided(app: &mut App) -> Vec<Decision> {
        app.take_commands()
            .into_iter()
            .filter_map(|c| match c {
                Command::Decide { decision, .. } => Some(decision),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_plan_is_read_then_approved_into_the_mode_chosen_or_denied_with_feedback() {
        let mut app = App::new(0);
        app.open("s1");
        let plan = (1..=30).map(|i| format!("step {i}")).collect::<Vec<_>>().join("\n");
        asked(&mut app, 1, "ExitPlanMode", json!({ "plan": plan }));
        app.take_commands();
        press(&mut app, "A");
        assert!(decided(&mut app).is_empty(), "always does not approve a plan");
        press(&mut app, "a");
        let Some(Prompt::Plan(review)) = &app.prompt else { panic!("{:?}", app.prompt) };
        assert_eq!(review.lines.len(), 30);
        press(&mut app, "jjx");
        assert!(decided(&mut app).is_empty(), "x is no mode");
        press(&mut app, "f");
        assert_eq!(decided(&mut app), [Decision::ApprovePlan { mode: SessionMode::Full }]);
        assert!(app.prompt.is_none());

        asked(&mut app, 2, "ExitPlanMode", json!({ "plan": "again" }));
        press(&mut app, "adnot yet\n");
        assert_eq!(decided(&mut app), [Decision::Deny { message: "not yet".into() }]);
        assert_eq!(app.screen(), Screen::Session("s1".into()));
    }

    #[test]
    fn questions_are_answered_one_by_one_by_number_several_or_in_own_words() {
        let mut app = App::new(0);
        app.open("s1");
        let input = json!({ "questions": [
            { "question": "Which database?", "header": "DB", "options": [
                { "label": "Postgres" }, { "label": "SQLite" } ] },
            { "question": "Which extras?", "header": "Extras", "multiSelect": true, "options": [
                { "label": "Auth" }, { "label": "Docs" }, { "label": "CI" } ] },
            { "question": "Name?", "header": "Name", "options": [ { "label": "demo" } ] },
        ]});
        asked(&mut app, 1, "AskUserQuestion", input);
        app.take_commands();
        // 7 is past the choices: nothing chosen, still the first question.
        press(&mut app, "a7");
        assert!(matches!(&app.prompt, Some(Prompt::Questions(q)) if q.at == 0));
        // SQLite; then Auth and CI (Docs toggled off again); then own words.
        press(&mut app, "2");
        press(&mut app, "1322\n");
        press(&mut app, "omy-app\n");
        let answers = vec![
            QuestionAnswer {
                question: "Which database?".into(),
                choices: vec!["SQLite".into()],
                other: None,
            },
            QuestionAnswer {
                question: "Which extras?".into(),
                choices: vec!["Auth".into(), "CI".into()],
                other: None,
            },
            QuestionAnswer {
                question: "Name?".into(),
                choices: vec![],
                other: Some("my-app".into()),
            },
        ];
        assert_eq!(decided(&mut app), [Decision::Answer { answers }]);
        assert!(app.prompt.is_none());
    }

    #[test]
    fn esc_goes_back_a_question_and_out_and_enter_needs_an_answer() {
        let mut app = App::new(0);
        app.open("s1");
        let input = json!({ "questions": [
            { "question": "One?", "header": "1", "options": [ { "label": "yes" } ] },
            { "question": "Two?", "header": "2", "multiSelect": true, "options": [ { "label": "a" } ] },
        ]});
        asked(&mut app, 1, "AskUserQuestion", input);
        app.take_commands();
        press(&mut app, "a1\n");
        assert!(
            matches!(&app.prompt, Some(Prompt::Questions(q)) if q.at == 1),
            "Enter with nothing chosen stays"
        );
        press(&mut app, "\u{1b}\u{1b}");
        assert!(app.prompt.is_none());
        assert!(decided(&mut app).is_empty());
    }
}
