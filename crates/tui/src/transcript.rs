//! One session's transcript as rows a person reads, folded from its events in `seq` order
//! (pure and incremental, like the cockpit's `web/src/transcript.ts`): streamed text merged by
//! message, tool calls with their results, approvals with who answered, notices. Text is
//! sanitized here, once, as it arrives.

use std::collections::HashMap;

use nucleic_protocol::{
    ApprovalRequested, DecisionKind, Event, EventKind, Risk, RunOutcome, SessionStatus, Timestamp,
};
use serde_json::Value;

use crate::sanitize;

/// At most this much of one tool result (or input) is kept for showing: a 10 MB result costs
/// 64 KiB of memory, and says how much was left out.
pub const KEPT_BYTES: usize = 64 * 1024;

/// How a notice reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Info,
    Ok,
    Warn,
}

/// What one row shows.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    /// What a person sent.
    User {
        text: String,
    },
    /// The agent's prose; `streaming` while deltas still come.
    Assistant {
        text: String,
        streaming: bool,
    },
    /// Reasoning: folded to one line unless expanded.
    Thinking {
        text: String,
    },
    /// A tool call: one line (name, its most telling input) unless expanded.
    Tool {
        name: String,
        summary: String,
        input: String,
        result: Option<ToolOutcome>,
    },
    /// An approval asked, and how it was answered.
    Approval {
        tool: String,
        summary: String,
        risk: Option<Risk>,
        answer: Option<String>,
    },
    Notice {
        text: String,
        tone: Tone,
    },
}

/// A tool call's result, as kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
    /// Bytes of the whole result (more than `text` when it was cut to [`KEPT_BYTES`]).
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub seq: u64,
    pub kind: RowKind,
    /// Shown whole (tool calls, thinking); other rows are always whole.
    pub expanded: bool,
}

impl Row {
    /// Whether a key can expand or fold this row.
    pub fn foldable(&self) -> bool {
        matches!(self.kind, RowKind::Tool { .. } | RowKind::Thinking { .. })
    }
}

/// An approval still waiting for a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub request: ApprovalRequested,
    /// When it was asked.
    pub at: Timestamp,
    pub seq: u64,
}

/// A session's rows and facts.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    rows: Vec<Row>,
    tools: HashMap<String, usize>,
    open_text: HashMap<(bool, String), usize>,
    approvals: HashMap<String, usize>,
    pending: Vec<Pending>,
    last_seq: u64,
    status: Option<SessionStatus>,
    cwd: Option<String>,
}

impl Transcript {
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    pub fn row_mut(&mut self, index: usize) -> Option<&mut Row> {
        self.rows.get_mut(index)
    }

    /// Approvals waiting, in the order they were asked.
    pub fn pending(&self) -> &[Pending] {
        &self.pending
    }

    /// The last `seq` folded (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The session's working directory, once an event said it (paths are shown relative).
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// The status the events say, once one changed.
    pub fn status(&self) -> Option<SessionStatus> {
        self.status
    }

    /// Folds `event` (ignored when its `seq` was folded already).
    pub fn fold(&mut self, event: &Event) {
        if event.seq <= self.last_seq {
            return;
        }
        self.last_seq = event.seq;
        self.apply(event);
    }

    fn push(&mut self, seq: u64, kind: RowKind) -> usize {
        self.rows.push(Row { seq, kind, expanded: false });
        self.rows.len() - 1
    }

    fn notice(&mut self, seq: u64, tone: Tone, text: impl AsRef<str>) {
        let text = sanitize::line(text.as_ref());
        self.push(seq, RowKind::Notice { text, tone });
    }

    fn text(&mut self, seq: u64, thinking: bool, message_id: &str, text: &str, partial: bool) {
        let key = (thinking, message_id.to_owned());
        let text = sanitize::clean(text);
        if let Some(&at) = self.open_text.get(&key) {
            if let Some(row) = self.rows.get_mut(at) {
                match &mut row.kind {
                    RowKind::Assistant { text: t, streaming } => {
                        if partial {
                            t.push_str(&text);
                        } else {
                            *t = text;
                        }
                        *streaming = partial;
                    }
                    RowKind::Thinking { text: t } if partial => t.push_str(&text),
                    RowKind::Thinking { text: t } => *t = text,
                    _ => {}
                }
            }
            if !partial {
                self.open_text.remove(&key);
            }
            return;
        }
        let kind = if thinking {
            RowKind::Thinking { text }
        } else {
            RowKind::Assistant { text, streaming: partial }
        };
        let at = self.push(seq, kind);
        if partial {
            self.open_text.insert(key, at);
        }
    }

    fn tool(&mut self, seq: u64, id: &str) -> usize {
        if let Some(&at) = self.tools.get(id) {
            return at;
        }
        let kind = RowKind::Tool {
            name: "tool".into(),
            summary: String::new(),
            input: String::new(),
            result: None,
        };
        let at = self.push(seq, kind);
        self.tools.insert(id.to_owned(), at);
        at
    }

    fn apply(&mut self, event: &Event) {
        let seq = event.seq;
        match &event.kind {
            EventKind::UserText(t) => {
                if !t.is_partial {
                    self.push(seq, RowKind::User { text: sanitize::clean(&t.text) });
                }
            }
            EventKind::AssistantText(t) => {
                self.text(seq, false, &t.message_id, &t.text, t.is_partial);
            }
            EventKind::Thinking(t) => self.text(seq, true, &t.message_id, &t.text, t.is_partial),
            EventKind::ToolCallStarted(call) | EventKind::ToolCallCompleted(call) => {
                let at = self.tool(seq, &call.tool_call_id);
                let summary = tool_summary(&call.input, self.cwd.as_deref());
                let input = kept(&pretty(&call.input)).0;
                if let Some(Row {
                    kind: RowKind::Tool { name, summary: s, input: i, .. }, ..
                }) = self.rows.get_mut(at)
                {
                    *name = sanitize::line(&call.name);
                    if !summary.is_empty() || s.is_empty() {
                        *s = summary;
                    }
                    if call.input.as_object().is_none_or(|o| !o.is_empty()) {
                        *i = input;
                    }
                }
            }
            EventKind::ToolInputDelta(_) => {}
            EventKind::ToolResult(r) => {
                let at = self.tool(seq, &r.tool_call_id);
                let whole = display_text(&r.content);
                let (text, bytes) = kept(&whole);
                if let Some(Row { kind: RowKind::Tool { result, .. }, .. }) = self.rows.get_mut(at)
                {
                    *result = Some(ToolOutcome { text, is_error: r.is_error, bytes });
                }
            }
            EventKind::ApprovalRequested(a) => {
                let summary = tool_summary(&a.input, self.cwd.as_deref());
                let tool = sanitize::line(&a.tool_name);
                let kind = RowKind::Approval { tool, summary, risk: a.risk, answer: None };
                let at = self.push(seq, kind);
                self.approvals.insert(a.request_id.clone(), at);
                self.pending.retain(|p| p.request.request_id != a.request_id);
                self.pending.push(Pending { request: a.clone(), at: event.at, seq });
            }
            EventKind::ApprovalResolved(r) => {
                self.pending.retain(|p| p.request.request_id != r.request_id);
                let how = decision_words(r.decision);
                let by = sanitize::line(&r.by);
                let reason = r.message.as_deref().map(sanitize::line);
                let said = match reason {
                    Some(m)
                        if matches!(r.decision, DecisionKind::Deny | DecisionKind::DenyAndStop) =>
                    {
                        format!("{how} by {by}: {m}")
                    }
                    _ => format!("{how} by {by}"),
                };
                if let Some(&at) = self.approvals.get(&r.request_id)
                    && let Some(Row { kind: RowKind::Approval { answer, .. }, .. }) =
                        self.rows.get_mut(at)
                {
                    *answer = Some(said);
                }
            }
            EventKind::TurnCompleted(t) => {
                let secs = t.duration_ms.map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0));
                let secs = secs.unwrap_or_default();
                if t.is_error {
                    let why = t.result.clone().or_else(|| t.terminal_reason.clone());
                    let why = why.map(|w| format!(": {w}")).unwrap_or_default();
                    self.notice(seq, Tone::Warn, format!("Turn failed{secs}{why}"));
                } else {
                    self.notice(seq, Tone::Ok, format!("Turn completed{secs}"));
                }
                self.open_text.clear();
            }
            EventKind::RunFinished(r) => {
                let tone = if r.outcome.is_success() { Tone::Info } else { Tone::Warn };
                let exit = r.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default();
                let why = r.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
                let outcome = outcome_words(r.outcome);
                self.notice(seq, tone, format!("Agent exited: {outcome}{exit}{why}"));
                // The agent is gone: its open approvals can no longer be answered.
                self.pending.clear();
            }
            EventKind::StatusChanged(s) => self.status = Some(s.status),
            EventKind::SessionCreated(c) => {
                self.cwd = Some(c.cwd.clone());
                let title = sanitize::line(&c.title);
                self.notice(seq, Tone::Info, format!("Session created: {title}"));
            }
            EventKind::SessionStarted(s) => self.cwd = Some(s.cwd.clone()),
            EventKind::InterruptRequested(i) => {
                self.notice(seq, Tone::Info, format!("Interrupt requested by {}", i.by));
            }
            EventKind::Error(e) => self.notice(seq, Tone::Warn, format!("Error: {}", e.message)),
            EventKind::PermissionDenied(p) => self.notice(
                seq,
                Tone::Warn,
                format!("{} refused by the agent: {}", p.tool_name, p.message),
            ),
            EventKind::EgressRefused(e) => self.notice(
                seq,
                Tone::Warn,
                format!("Network refused: {}:{} ({})", e.host, e.port, e.reason),
            ),
            EventKind::Confinement(c) if !c.confined => {
                self.notice(seq, Tone::Warn, format!("Not confined: {}", c.summary));
            }
            EventKind::ApiRetry(r) => self.notice(
                seq,
                Tone::Warn,
                format!("API retry {}/{} ({})", r.attempt, r.max_retries, r.error),
            ),
            EventKind::WorktreeFinished(w) => {
                let action = serde_json::to_value(w.action).unwrap_or(Value::Null);
                let action = action.as_str().unwrap_or("finished").to_owned();
                self.notice(seq, Tone::Info, format!("Worktree {action} by {}", w.by));
            }
            EventKind::SessionUpdated(u) => {
                if let Some(mode) = &u.mode {
                    self.notice(seq, Tone::Info, format!("Mode: {mode} (by {})", u.by));
                }
            }
            EventKind::CheckFinished(c) => {
                self.notice(seq, Tone::Info, format!("Check {}: {:?}", c.name, c.outcome));
            }
            EventKind::Confinement(_)
            | EventKind::Usage(_)
            | EventKind::RateLimit(_)
            | EventKind::SettingsChanged(_)
            | EventKind::Stderr(_)
            | EventKind::WorktreeReclaimed(_)
            | EventKind::WorktreeRestored(_)
            | EventKind::CheckStarted(_)
            | EventKind::CheckOutput(_)
            | EventKind::Report(_)
            | EventKind::PullRequestOpened(_)
            | EventKind::ReviewSent(_)
            | EventKind::Raw(_) => {}
        }
    }
}

/// How a decision reads (the cockpit's words).
pub fn decision_words(kind: DecisionKind) -> &'static str {
    match kind {
        DecisionKind::Allow => "Allowed",
        DecisionKind::AllowEdited => "Allowed edited",
        DecisionKind::AllowAlways => "Always allowed",
        DecisionKind::Deny => "Denied",
        DecisionKind::DenyAndStop => "Denied and stopped",
        DecisionKind::Cancelled => "Cancelled",
        DecisionKind::ApprovePlan => "Plan approved",
        DecisionKind::Answered => "Answered",
    }
}

fn outcome_words(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Completed => "completed",
        RunOutcome::Interrupted => "interrupted",
        RunOutcome::Stopped => "stopped",
        RunOutcome::ApiError => "apiError",
        RunOutcome::LimitReached => "limitReached",
        RunOutcome::AgentError => "agentError",
        RunOutcome::Crashed => "crashed",
        RunOutcome::SpawnFailed => "spawnFailed",
    }
}

/// `text` cut to [`KEPT_BYTES`] on a character boundary, and the whole length.
fn kept(text: &str) -> (String, usize) {
    let bytes = text.len();
    if bytes <= KEPT_BYTES {
        return (sanitize::clean(text), bytes);
    }
    let mut end = KEPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (sanitize::clean(&text[..end]), bytes)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A tool result or input as text: a string as it is, text blocks joined, else JSON.
pub fn display_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(blocks) if blocks.iter().all(|b| b.get("text").is_some()) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => pretty(other),
    }
}

/// The one-line summary of a tool call: its most telling input field (the cockpit's
/// `toolSummary`), paths relative to the session's directory, sanitized.
pub fn tool_summary(input: &Value, cwd: Option<&str>) -> String {
    let Some(o) = input.as_object() else { return String::new() };
    let changed: Vec<&str> = o
        .get("changes")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(|c| c.get("path").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    let text = if changed.is_empty() {
        ["command", "file_path", "path", "pattern", "url", "query", "description"]
            .iter()
            .find_map(|k| o.get(*k))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => String::new(),
            })
            .unwrap_or_default()
    } else {
        changed.join(", ")
    };
    let text = match cwd {
        Some(cwd) => {
            let base = if cwd.ends_with('/') { cwd.to_owned() } else { format!("{cwd}/") };
            text.replace(&base, "")
        }
        None => text,
    };
    sanitize::line(&text)
}

#[cfg(test)]
mod tests {
    use nucleic_protocol::{ApprovalResolved, Backend, TextBlock, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    pub(crate) fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            at: Timestamp::from_unix_millis(1_700_000_000_000 + seq as i64 * 1000),
            session_id: "s1".into(),
            backend: Backend::Simulated,
            native_type: None,
            kind,
            origin: None,
        }
    }

    fn text(partial: bool, id: &str, t: &str) -> TextBlock {
        TextBlock { is_partial: partial, message_id: id.into(), text: t.into() }
    }

    #[test]
    fn streamed_text_merges_and_the_whole_block_replaces_it() {
        let mut t = Transcript::default();
        t.fold(&event(1, EventKind::AssistantText(text(true, "m1", "Hel"))));
        t.fold(&event(2, EventKind::AssistantText(text(true, "m1", "lo"))));
        assert_eq!(t.rows()[0].kind, RowKind::Assistant { text: "Hello".into(), streaming: true });
        t.fold(&event(3, EventKind::AssistantText(text(false, "m1", "Hello!"))));
        t.fold(&event(3, EventKind::AssistantText(text(false, "m1", "again"))));
        assert_eq!(t.rows().len(), 1);
        assert_eq!(
            t.rows()[0].kind,
            RowKind::Assistant { text: "Hello!".into(), streaming: false }
        );
    }

    #[test]
    fn tool_calls_gather_their_result_and_a_huge_result_is_cut() {
        let mut t = Transcript::default();
        let call = ToolCall {
            tool_call_id: "t1".into(),
            name: "Bash".into(),
            input: json!({"command": "ls -la"}),
            parent_tool_call_id: None,
        };
        t.fold(&event(1, EventKind::ToolCallStarted(call.clone())));
        t.fold(&event(2, EventKind::ToolCallCompleted(call)));
        let huge = "x".repeat(10 * 1024 * 1024);
        let result =
            ToolResult { tool_call_id: "t1".into(), content: json!(huge), is_error: false };
        t.fold(&event(3, EventKind::ToolResult(result)));
        assert_eq!(t.rows().len(), 1);
        let RowKind::Tool { name, summary, result, .. } = &t.rows()[0].kind else { panic!() };
        assert_eq!((name.as_str(), summary.as_str()), ("Bash", "ls -la"));
        let result = result.as_ref().unwrap();
        assert_eq!(result.bytes, 10 * 1024 * 1024);
        assert_eq!(result.text.len(), KEPT_BYTES);
    }

    #[test]
    fn approvals_are_pending_until_resolved_or_the_agent_exits() {
        let mut t = Transcript::default();
        let ask = |id: &str| ApprovalRequested {
            request_id: id.into(),
            tool_call_id: None,
            tool_name: "Write".into(),
            input: json!({"file_path": "/w/a.txt"}),
            description: None,
            blocked_path: None,
            risk: Some(Risk::Medium),
            risk_reasons: vec![],
        };
        t.fold(&event(1, EventKind::ApprovalRequested(ask("r1"))));
        t.fold(&event(2, EventKind::ApprovalRequested(ask("r2"))));
        assert_eq!(t.pending().len(), 2);
        let resolved = ApprovalResolved {
            request_id: "r1".into(),
            decision: DecisionKind::Deny,
            by: "phone".into(),
            updated_input: None,
            message: Some("not \u{1b}[31mthat".into()),
            mode: None,
        };
        t.fold(&event(3, EventKind::ApprovalResolved(resolved)));
        assert_eq!(t.pending().len(), 1);
        let RowKind::Approval { answer, .. } = &t.rows()[0].kind else { panic!() };
        assert_eq!(answer.as_deref(), Some("Denied by phone: not ␛[31mthat"));
        let end = nucleic_protocol::RunFinished::new(RunOutcome::Crashed, None, Some(1));
        t.fold(&event(4, EventKind::RunFinished(end)));
        assert!(t.pending().is_empty());
    }
}
