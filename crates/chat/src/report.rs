//! The host's events as chat reports: an approval with its code, risk class and buttons; a plan
//! to confirm or reject; a question with a button per choice; the end of a turn and of a run.
//! Everything else a session does stays in the cockpit.

use nucleic_protocol::{
    ASK_USER_QUESTION, ApprovalRequested, EXIT_PLAN_MODE, Event, EventKind, Report, Risk,
};

use crate::bridge::{Bridge, BridgeError};
use crate::exec::short;
use crate::state::{Pending, PendingKind, State, StateError};
use crate::transport::Button;

/// How much of a turn's final text a report quotes.
const RESULT_QUOTE: usize = 1500;
/// How much of a plan a report quotes (the rest is in the cockpit).
const PLAN_QUOTE: usize = 3000;

impl Bridge {
    /// Reports `event` to the chat following its session, if it is worth a message.
    pub(crate) fn on_event(&mut self, event: &Event) -> Result<(), BridgeError> {
        let Some(key) = self.state.chat_of(&event.session_id)? else { return Ok(()) };
        let chat = key.as_str();
        let session = event.session_id.as_str();
        match &event.kind {
            EventKind::ApprovalRequested(a) => self.ask(chat, session, a)?,
            EventKind::ApprovalResolved(r) => {
                let code = self.state.resolve(session, &r.request_id, &r.by)?;
                if !self.answered_here.remove(&r.request_id)
                    && let Some(code) = code
                {
                    let decision = serde_json::to_value(r.decision).unwrap_or_default();
                    let decision = decision.as_str().unwrap_or("resolved").to_owned();
                    self.report(
                        chat,
                        &format!("{code} was resolved: {decision} (by {}).", r.by),
                        &[],
                        Some(format!("{code} was resolved (by {}).", r.by)),
                    )?;
                }
            }
            EventKind::TurnCompleted(t) => {
                let result = t.result.as_deref().unwrap_or("").trim();
                let head = if t.is_error { "Turn failed" } else { "Turn ended" };
                let text = format!(
                    "{head} in session {}:\n{}\n/cc diff · /cc report · /cc keep · /cc say <more>",
                    short(session),
                    quote(result, RESULT_QUOTE)
                );
                let notice = format!("{head} in session {}: it waits for you.", short(session));
                self.report(chat, &text, &[], Some(notice))?;
            }
            EventKind::RunFinished(r) => {
                let outcome = serde_json::to_value(r.outcome).unwrap_or_default();
                let why = r.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
                let text = format!(
                    "Session {}'s agent stopped ({}){why}.",
                    short(session),
                    outcome.as_str().unwrap_or("ended")
                );
                let notice = format!("Session {}'s agent stopped.", short(session));
                self.report(chat, &text, &[], Some(notice))?;
            }
            EventKind::UserText(_)
            | EventKind::SessionStarted(_)
            | EventKind::AssistantText(_)
            | EventKind::Thinking(_)
            | EventKind::ToolCallStarted(_)
            | EventKind::ToolInputDelta(_)
            | EventKind::ToolCallCompleted(_)
            | EventKind::ToolResult(_)
            | EventKind::Usage(_)
            | EventKind::RateLimit(_)
            | EventKind::ApiRetry(_)
            | EventKind::PermissionDenied(_)
            | EventKind::Confinement(_)
            | EventKind::EgressRefused(_)
            | EventKind::StatusChanged(_)
            | EventKind::SettingsChanged(_)
            | EventKind::InterruptRequested(_)
            | EventKind::Error(_)
            | EventKind::Stderr(_)
            | EventKind::SessionCreated(_)
            | EventKind::SessionUpdated(_)
            | EventKind::WorktreeFinished(_)
            | EventKind::WorktreeReclaimed(_)
            | EventKind::WorktreeRestored(_)
            | EventKind::CheckStarted(_)
            | EventKind::CheckOutput(_)
            | EventKind::CheckFinished(_)
            | EventKind::Report(_)
            | EventKind::PullRequestOpened(_)
            | EventKind::ReviewSent(_)
            | EventKind::Raw(_) => {}
        }
        self.state.advance(session, event.seq + 1)?;
        Ok(())
    }

    /// Queues a report, or in a "needs you only" chat its `notice` (no content: which session,
    /// what kind of thing waits, its code); nothing when it has none.
    fn report(
        &mut self,
        chat: &str,
        text: &str,
        buttons: &[Vec<Button>],
        notice: Option<String>,
    ) -> Result<(), BridgeError> {
        if self.state.needs_you_only(chat)? {
            let Some(notice) = notice else { return Ok(()) };
            self.stats.reports += 1;
            // Buttons carry codes only; a question's carry its choices, which are content.
            let buttons = if buttons.iter().flatten().any(|b| b.data.starts_with("q:")) {
                &[][..]
            } else {
                buttons
            };
            return self.say(chat, &notice, buttons);
        }
        self.stats.reports += 1;
        self.say(chat, text, buttons)
    }

    fn ask(&mut self, chat: &str, session: &str, a: &ApprovalRequested) -> Result<(), BridgeError> {
        let kind = match a.tool_name.as_str() {
            EXIT_PLAN_MODE => PendingKind::Plan,
            ASK_USER_QUESTION => PendingKind::Question,
            _ => PendingKind::Approval,
        };
        let risk = a.risk.map(risk_name);
        let input = (kind == PendingKind::Question).then(|| a.input.to_string());
        let code =
            self.state.add_pending(chat, session, &a.request_id, kind, risk, input.as_deref())?;
        let button = |label: &str, data: String| Button { label: label.to_owned(), data };
        let (text, buttons) = match kind {
            PendingKind::Plan => {
                let plan = nucleic_protocol::plan_text(&a.input).unwrap_or("(empty plan)");
                (
                    format!(
                        "Plan {code} from session {}:\n{}\n/cc confirm {code} · /cc reject {code} <why>",
                        short(session),
                        quote(plan, PLAN_QUOTE)
                    ),
                    vec![vec![
                        button("Confirm", format!("p:{code}")),
                        button("Reject", format!("r:{code}")),
                    ]],
                )
            }
            PendingKind::Question => {
                let questions = nucleic_protocol::questions(&a.input).unwrap_or_default();
                let Some(q) = questions.first() else { return Ok(()) };
                let rows = q
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| vec![button(o, format!("q:{code}:{i}"))])
                    .collect();
                let more = if questions.len() > 1 {
                    "\n(more questions: answer in the cockpit)"
                } else {
                    ""
                };
                (
                    format!(
                        "Question {code} from session {}: {}{more}",
                        short(session),
                        q.question
                    ),
                    rows,
                )
            }
            PendingKind::Approval => {
                let risk_line = match (risk, a.risk_reasons.is_empty()) {
                    (Some(r), true) => format!(" · risk {r}"),
                    (Some(r), false) => format!(" · risk {r} ({})", a.risk_reasons.join(", ")),
                    (None, _) => String::new(),
                };
                let critical = if a.risk == Some(Risk::Critical) {
                    "\nCritical: approving needs a second confirmation."
                } else {
                    ""
                };
                (
                    format!(
                        "Approval {code}{risk_line}\nsession {} wants {}{critical}\n/cc approve {code} · /cc deny {code} <why>",
                        short(session),
                        summarize(a)
                    ),
                    vec![vec![
                        button("Approve", format!("a:{code}")),
                        button("Deny", format!("d:{code}")),
                    ]],
                )
            }
        };
        let risk = risk.map(|r| format!(" · risk {r}")).unwrap_or_default();
        let notice = match kind {
            PendingKind::Plan => format!(
                "Session {} needs you: plan {code}. /cc confirm {code} · /cc reject {code} <why>",
                short(session)
            ),
            PendingKind::Question => {
                format!(
                    "Session {} needs you: question {code} (answer it in the cockpit).",
                    short(session)
                )
            }
            PendingKind::Approval => format!(
                "Session {} needs you: approval {code}{risk}. /cc approve {code} · /cc deny {code} <why>",
                short(session)
            ),
        };
        self.report(chat, &text, &buttons, Some(notice))
    }
}

/// `/cc session`: the session's status in two lines.
pub(crate) fn describe(s: &nucleic_protocol::SessionSummary) -> String {
    let branch = s.worktree.as_ref().map(|w| w.branch.as_str()).unwrap_or("-");
    format!(
        "Session {} — {}\nstatus {}, {} pending, branch {branch}, ${:.2}",
        short(&s.session_id),
        s.title,
        s.status.as_str(),
        s.pending_approvals,
        s.cost_usd
    )
}

/// Choice `index` of the first question `pending` asked: (question, label).
pub(crate) fn question_choice(
    state: &State,
    pending: &Pending,
    index: usize,
) -> Result<Option<(String, String)>, StateError> {
    let Some(input) = state.pending_input(&pending.code)? else { return Ok(None) };
    let input: serde_json::Value = serde_json::from_str(&input).unwrap_or_default();
    let questions = nucleic_protocol::questions(&input).unwrap_or_default();
    Ok(questions
        .first()
        .and_then(|q| q.options.get(index).map(|label| (q.question.clone(), label.clone()))))
}

/// `/cc report`: the host's facts next to the agent's claims.
pub(crate) fn render_report(session: &str, r: &Report) -> String {
    let mut out = format!(
        "Report of session {}: {} files, +{} -{}, {} ahead, {} behind, {} approvals asked ({} denied), ${:.2}",
        short(session),
        r.files.len(),
        r.additions,
        r.deletions,
        r.ahead,
        r.behind,
        r.approvals_asked,
        r.approvals_denied,
        r.cost_usd
    );
    for file in r.files.iter().take(30) {
        out.push_str(&format!("\n· {file}"));
    }
    for check in &r.checks {
        out.push_str(&format!("\ncheck {}: {:?}", check.name, check.outcome));
    }
    for c in &r.claims {
        out.push_str(&format!("\nclaim ({}): {}", c.kind, quote(&c.quote, 200)));
    }
    for c in &r.contradictions {
        out.push_str(&format!("\n⚠ {} — but {}", quote(&c.claim, 200), c.fact));
    }
    out
}

fn risk_name(risk: Risk) -> &'static str {
    match risk {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
        Risk::Critical => "critical",
    }
}

/// What a tool call would do, on one line.
fn summarize(a: &ApprovalRequested) -> String {
    if let Some(asked) = nucleic_protocol::EgressAsked::of(a) {
        return format!("network access to {}", asked.destination());
    }
    let field = |k: &str| a.input.get(k).and_then(|v| v.as_str());
    let detail = field("command")
        .or(field("file_path"))
        .or(field("path"))
        .map(in_worktree)
        .unwrap_or_else(|| a.input.to_string());
    format!("{} {}", a.tool_name, quote(&detail, 300))
}

/// A path in a session's worktree as the chat sees it: relative to the worktree (the
/// machine's directories are nobody's business at the chat provider).
fn in_worktree(path: &str) -> String {
    const WORKTREES: &str = "/.nucleic/worktrees/";
    match path.find(WORKTREES) {
        Some(at) => {
            let rest = &path[at + WORKTREES.len()..];
            rest.split_once('/').map_or(rest, |(_, inside)| inside).to_owned()
        }
        None => path.to_owned(),
    }
}

/// `text` cut to `max` characters (marked when cut).
fn quote(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}… (cut; the rest is in the cockpit)")
}
