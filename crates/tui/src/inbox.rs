//! The inbox: every pending approval across sessions, highest risk first, then the one waiting
//! longest; answering one (a critical allow waits for a second key, questions and plans are
//! answered through their prompts, nothing is sent offline) and keeping the selection on its
//! request.

use nucleic_protocol::{ApprovalRequested, Decision, Risk, Timestamp};

use crate::app::{App, Command, Prompt, Screen, Target};
use crate::transcript::{Pending, Tone};

/// One line of the inbox: an approval waiting, with its session.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxItem {
    pub target: Target,
    /// The session's working directory (paths are shown relative to it).
    pub cwd: Option<String>,
    pub title: String,
    pub project: Option<String>,
    pub request: ApprovalRequested,
    pub at: Timestamp,
}

const RISK_NONE: u8 = 0;

fn risk_rank(risk: Option<Risk>) -> u8 {
    match risk {
        None => RISK_NONE,
        Some(Risk::Low) => 1,
        Some(Risk::Medium) => 2,
        Some(Risk::High) => 3,
        Some(Risk::Critical) => 4,
    }
}

impl App {
    /// Every approval waiting, highest risk first, then the longest waiting first.
    pub fn inbox(&self) -> Vec<InboxItem> {
        let mut items = Vec::new();
        for (session_id, transcript) in &self.transcripts {
            let summary = self.sessions.get(session_id);
            if summary.is_some_and(|s| s.read_only) {
                continue;
            }
            for Pending { request, at, .. } in transcript.pending() {
                let target = Target {
                    session_id: session_id.clone(),
                    request_id: request.request_id.clone(),
                };
                items.push(InboxItem {
                    target,
                    cwd: transcript.cwd().map(str::to_owned),
                    title: summary.map_or_else(|| session_id.clone(), |s| s.title.clone()),
                    project: self.project_name(summary.and_then(|s| s.project_id.as_deref())),
                    request: request.clone(),
                    at: *at,
                });
            }
        }
        items.sort_by(|a, b| {
            risk_rank(b.request.risk)
                .cmp(&risk_rank(a.request.risk))
                .then_with(|| a.at.unix_millis().cmp(&b.at.unix_millis()))
                .then_with(|| a.target.request_id.cmp(&b.target.request_id))
        });
        items
    }

    /// The oldest approval waiting in `session_id`.
    pub fn first_pending(&self, session_id: &str) -> Option<Pending> {
        self.transcripts.get(session_id)?.pending().first().cloned()
    }

    pub fn pending_request(&self, target: &Target) -> Option<ApprovalRequested> {
        let transcript = self.transcripts.get(&target.session_id)?;
        let pending =
            transcript.pending().iter().find(|p| p.request.request_id == target.request_id);
        pending.map(|p| p.request.clone())
    }

    /// Whether `target` is the approval under the person's eyes (the inbox's selected line,
    /// or the open session's first pending one).
    pub(crate) fn was_shown(&self, target: &Target) -> bool {
        match self.screen() {
            Screen::Inbox => {
                self.inbox().get(self.inbox_selected).is_some_and(|i| i.target == *target)
            }
            Screen::Session(id) => {
                id == target.session_id
                    && self
                        .first_pending(&id)
                        .is_some_and(|p| p.request.request_id == target.request_id)
            }
            Screen::Sessions | Screen::Diff(_) => false,
        }
    }

    /// Sends `decision` about `target`; an allowing answer to a critical request waits for a
    /// second key first. Offline, nothing is queued (an answer given blind is never sent later).
    pub fn decide(&mut self, target: Target, decision: Decision) {
        let Some(request) = self.pending_request(&target) else {
            self.say("That approval is no longer pending", Tone::Warn);
            return;
        };
        if !self.online() {
            self.say(
                "Offline: approval answers are never queued or sent later; answer again once the host is back",
                Tone::Warn,
            );
            return;
        }
        let allows = matches!(
            decision,
            Decision::Allow
                | Decision::AllowEdited { .. }
                | Decision::AllowAlways { .. }
                | Decision::ApprovePlan { .. }
                | Decision::Answer { .. }
        );
        let plain_allow = matches!(
            decision,
            Decision::Allow | Decision::AllowEdited { .. } | Decision::AllowAlways { .. }
        );
        if plain_allow && crate::asking::asks_more(&request) {
            // A plan is approved into a mode, questions with their answers: `a` opens them.
            self.say(
                "Plans and questions: a reads and answers them, d denies with feedback",
                Tone::Warn,
            );
            return;
        }
        let critical = request.risk == Some(Risk::Critical);
        if critical && allows {
            let confirming = matches!(&self.prompt, Some(Prompt::ConfirmCritical { target: t, .. }) if *t == target);
            if !confirming {
                self.prompt = Some(Prompt::ConfirmCritical { target, decision });
                return;
            }
        }
        self.prompt = None;
        self.answered_here.insert(target.clone());
        self.command(Command::Decide { target, decision, confirmed: critical && allows });
    }

    /// Selects line `index` of the inbox.
    pub fn select_request(&mut self, index: usize) {
        let items = self.inbox();
        let index = index.min(items.len().saturating_sub(1));
        self.inbox_pinned = items.get(index).map(|i| i.target.clone());
        self.inbox_selected = index;
        self.selection_moved = false;
    }

    /// Keeps the inbox's selection on its request; when that request is gone, on the one now
    /// in its place.
    pub fn clamp(&mut self) {
        let items = self.inbox();
        let found =
            self.inbox_pinned.as_ref().and_then(|t| items.iter().position(|i| i.target == *t));
        let index = found.unwrap_or(self.inbox_selected).min(items.len().saturating_sub(1));
        self.inbox_pinned = items.get(index).map(|i| i.target.clone());
        self.inbox_selected = index;
    }
}

#[cfg(test)]
mod tests {
    use nucleic_protocol::{
        ApprovalResolved, Backend, DecisionKind, Event, EventKind, HostMessage,
    };
    use serde_json::json;

    use super::*;

    fn ask(id: &str, risk: Option<Risk>) -> ApprovalRequested {
        ApprovalRequested {
            request_id: id.into(),
            tool_call_id: None,
            tool_name: "Bash".into(),
            input: json!({"command": format!("run {id}")}),
            description: None,
            blocked_path: None,
            risk,
            risk_reasons: vec![],
        }
    }

    fn event(session: &str, seq: u64, at: i64, kind: EventKind) -> Event {
        Event {
            seq,
            at: Timestamp::from_unix_millis(at),
            session_id: session.into(),
            backend: Backend::Simulated,
            native_type: None,
            kind,
            origin: None,
        }
    }

    fn with_requests() -> App {
        let mut app = App::new(0);
        let asks = [
            ("a", 1, 100, ask("low-old", Some(Risk::Low))),
            ("a", 2, 300, ask("crit", Some(Risk::Critical))),
            ("b", 1, 50, ask("none", None)),
            ("b", 2, 200, ask("high-new", Some(Risk::High))),
            ("b", 3, 150, ask("high-old", Some(Risk::High))),
        ];
        for (s, seq, at, a) in asks {
            app.on_host(HostMessage::Event {
                event: event(s, seq, at, EventKind::ApprovalRequested(a)),
            });
        }
        app
    }

    #[test]
    fn the_inbox_is_by_risk_then_longest_waiting() {
        let app = with_requests();
        let order: Vec<String> = app.inbox().into_iter().map(|i| i.target.request_id).collect();
        assert_eq!(order, ["crit", "high-old", "high-new", "low-old", "none"]);
    }

    #[test]
    fn a_critical_allow_needs_a_second_key_and_a_deny_does_not() {
        let mut app = with_requests();
        let target = Target { session_id: "a".into(), request_id: "crit".into() };
        app.decide(target.clone(), Decision::Allow);
        assert!(app.take_commands().is_empty(), "nothing sent on the first key");
        assert!(matches!(app.prompt, Some(Prompt::ConfirmCritical { .. })));
        app.decide(target.clone(), Decision::Allow);
        assert_eq!(
            app.take_commands(),
            [Command::Decide { target, decision: Decision::Allow, confirmed: true }]
        );
        let deny = Decision::Deny { message: "no".into() };
        let low = Target { session_id: "a".into(), request_id: "low-old".into() };
        app.decide(low.clone(), deny.clone());
        assert_eq!(
            app.take_commands(),
            [Command::Decide { target: low, decision: deny, confirmed: false }]
        );
    }

    #[test]
    fn an_approval_answered_elsewhere_leaves_the_inbox_and_says_who() {
        let mut app = with_requests();
        app.screen = Some(Screen::Inbox);
        let target = Target { session_id: "a".into(), request_id: "crit".into() };
        app.decide(target, Decision::Allow); // the critical question is open
        let resolved = ApprovalResolved {
            request_id: "crit".into(),
            decision: DecisionKind::Deny,
            by: "phone".into(),
            updated_input: None,
            message: Some("no".into()),
            mode: None,
        };
        app.on_host(HostMessage::Event {
            event: event("a", 3, 400, EventKind::ApprovalResolved(resolved)),
        });
        assert!(app.prompt.is_none(), "the question about it closes");
        assert_eq!(app.inbox().len(), 4);
        assert_eq!(app.flash.as_ref().unwrap().0, "Answered elsewhere: Denied by phone");
        let target = Target { session_id: "a".into(), request_id: "crit".into() };
        app.decide(target, Decision::Allow);
        assert!(app.take_commands().is_empty());
        assert_eq!(app.flash.as_ref().unwrap().0, "That approval is no longer pending");
    }

    #[test]
    fn the_inbox_selection_stays_on_its_request_and_a_swap_under_it_is_not_answered_blind() {
        let mut app = with_requests();
        app.screen = Some(Screen::Inbox);
        app.select_request(1); // high-old
        let higher = EventKind::ApprovalRequested(ask("crit-2", Some(Risk::Critical)));
        app.on_host(HostMessage::Event { event: event("b", 4, 500, higher) });
        let selected = |app: &App| app.inbox()[app.inbox_selected].target.request_id.clone();
        assert_eq!(selected(&app), "high-old", "a new request above does not move the selection");
        let resolved = ApprovalResolved {
            request_id: "high-old".into(),
            decision: DecisionKind::Allow,
            by: "phone".into(),
            updated_input: None,
            message: None,
            mode: None,
        };
        app.on_host(HostMessage::Event {
            event: event("b", 5, 600, EventKind::ApprovalResolved(resolved)),
        });
        assert_eq!(selected(&app), "high-new", "the one now in its place");
        assert!(app.selection_moved);
        crate::keys::tests::press(&mut app, "a");
        assert!(app.take_commands().is_empty(), "not answered blind");
        crate::keys::tests::press(&mut app, "a");
        let commands = app.take_commands();
        assert!(
            matches!(&commands[..], [Command::Decide { target, .. }] if target.request_id == "high-new")
        );
    }

    #[test]
    fn questions_and_plans_are_not_allowed_with_a_key() {
        let mut app = App::new(0);
        let mut question = ask("q1", None);
        question.tool_name = "AskUserQuestion".into();
        let asked = EventKind::ApprovalRequested(question);
        app.on_host(HostMessage::Event { event: event("a", 1, 1, asked) });
        let target = Target { session_id: "a".into(), request_id: "q1".into() };
        app.decide(target.clone(), Decision::Allow);
        assert!(app.take_commands().is_empty());
        app.decide(target, Decision::Deny { message: "later".into() });
        assert_eq!(app.take_commands().len(), 1, "a deny with feedback still goes");
    }

    #[test]
    fn offline_answers_are_refused_not_queued() {
        let mut app = with_requests();
        app.on_link(Some("connection lost".into()));
        let target = Target { session_id: "b".into(), request_id: "none".into() };
        app.decide(target, Decision::Allow);
        assert!(app.take_commands().is_empty());
        assert!(app.flash.as_ref().unwrap().0.starts_with("Offline"));
        app.on_link(None);
        assert_eq!(app.take_commands(), [Command::Refresh]);
    }
}
