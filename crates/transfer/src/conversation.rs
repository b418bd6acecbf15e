//! One human line per event for an export's "Conversation" section, as the seed renders them.

use nucleic_protocol::{
    DecisionKind, Event, EventKind, RunOutcome, WorktreeAction, WorktreeFinished,
};
use serde_json::Value;

/// Raw native payloads and stderr lines are cut to this many characters (seed: `raw[…]` lines).
pub const RAW_LIMIT: usize = 500;
/// Tool inputs and results are cut to this many characters (seed: `Result:` lines).
pub const PAYLOAD_LIMIT: usize = 2000;

/// The Conversation entry for one event (without a trailing newline), or `None` for events the
/// seed leaves out: streamed fragments (`isPartial: true`, `toolInputDelta`), `thinking`, and
/// `toolCallStarted` (the matching `toolCallCompleted` shows the final input).
pub fn entry(event: &Event) -> Option<String> {
    let body = body(&event.kind, event.native_type.as_deref())?;
    Some(format!("#{} {body}", event.seq))
}

fn body(kind: &EventKind, native_type: Option<&str>) -> Option<String> {
    if kind.is_partial() {
        return None;
    }
    Some(match kind {
        EventKind::UserText(t) => format!("User: {}", t.text),
        EventKind::AssistantText(t) => format!("Assistant: {}", t.text),
        EventKind::Thinking(_) | EventKind::ToolCallStarted(_) | EventKind::ToolInputDelta(_) => {
            return None;
        }
        EventKind::SessionStarted(s) => format!("session started — model {}", s.model),
        EventKind::ToolCallCompleted(c) => {
            format!("Tool {} — {}", c.name, json(&c.input, PAYLOAD_LIMIT))
        }
        EventKind::ToolResult(r) => {
            let label = if r.is_error { "Result (error)" } else { "Result" };
            format!("{label}: {}", json(&r.content, PAYLOAD_LIMIT))
        }
        EventKind::Usage(u) => format!("usage in={} out={}", u.input_tokens, u.output_tokens),
        EventKind::TurnCompleted(t) if t.is_error => {
            let why = t.terminal_reason.as_deref().or(t.result.as_deref()).unwrap_or("error");
            format!("— turn failed: {} —", cut(why, RAW_LIMIT))
        }
        EventKind::TurnCompleted(_) => "— turn completed —".to_owned(),
        EventKind::RunFinished(r) => match &r.message {
            Some(m) if r.outcome != RunOutcome::Completed => {
                format!("— run {}: {} —", outcome_words(r.outcome), cut(m, RAW_LIMIT))
            }
            _ => format!("— run {} —", outcome_words(r.outcome)),
        },
        EventKind::RateLimit(r) => match &r.rate_limit_type {
            Some(t) => format!("rate limit {t} {}", r.status),
            None => format!("rate limit {}", r.status),
        },
        EventKind::ApiRetry(r) => {
            let http = r.http_status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            format!(
                "API retry {}/{} in {}ms: {}{http}",
                r.attempt, r.max_retries, r.retry_delay_ms, r.error
            )
        }
        EventKind::ApprovalRequested(a) => {
            format!("Approval requested: {} — {}", a.tool_name, json(&a.input, PAYLOAD_LIMIT))
        }
        EventKind::ApprovalResolved(a) => {
            let mut line = format!("Approval {} by {}", decision_word(a.decision), a.by);
            if let Some(input) = &a.updated_input {
                line.push_str(&format!(" — {}", json(input, PAYLOAD_LIMIT)));
            }
            if let Some(m) = &a.message {
                line.push_str(&format!(": {}", cut(m, RAW_LIMIT)));
            }
            line
        }
        EventKind::PermissionDenied(p) => {
            format!("Permission denied: {} — {}", p.tool_name, cut(&p.message, RAW_LIMIT))
        }
        EventKind::Confinement(c) if c.confined => format!("Confined: {}", c.summary),
        EventKind::Confinement(c) => format!("UNCONFINED: {}", c.summary),
        EventKind::EgressRefused(r) => {
            format!("Network refused: {} {}:{} — {}", r.method, r.host, r.port, r.reason)
        }
        EventKind::StatusChanged(s) => format!("status {}", s.status.as_str()),
        EventKind::SettingsChanged(s) => {
            let mut parts = Vec::new();
            if let Some(m) = &s.model {
                parts.push(format!("model {m}"));
            }
            if let Some(p) = &s.permission_mode {
                parts.push(format!("permission mode {p}"));
            }
            format!("settings changed — {}", parts.join(", "))
        }
        EventKind::InterruptRequested(i) => format!("interrupt requested by {}", i.by),
        EventKind::Error(e) => match e.http_status {
            Some(s) => format!("Error: {} (HTTP {s})", cut(&e.message, PAYLOAD_LIMIT)),
            None => format!("Error: {}", cut(&e.message, PAYLOAD_LIMIT)),
        },
        EventKind::Stderr(s) => format!("stderr: {}", cut(&s.text, RAW_LIMIT)),
        EventKind::SessionCreated(c) => {
            let imported = if c.read_only { " (imported, read-only)" } else { "" };
            format!("session created — {} — cwd {}{imported}", c.title, c.cwd)
        }
        EventKind::SessionUpdated(u) => {
            let mut parts = Vec::new();
            if let Some(t) = &u.title {
                parts.push(format!("renamed to {t}"));
            }
            match u.archived {
                Some(true) => parts.push("archived".to_owned()),
                Some(false) => parts.push("unarchived".to_owned()),
                None => {}
            }
            if let Some(m) = &u.mode {
                parts.push(format!("switched to mode {m}"));
            }
            format!("session {} by {}", parts.join(", "), u.by)
        }
        EventKind::WorktreeFinished(w) => worktree_line(w),
        EventKind::WorktreeReclaimed(w) => w.summary(),
        EventKind::WorktreeRestored(w) => w.summary(),
        EventKind::CheckStarted(c) => format!("check {} started: {}", c.name, c.argv.join(" ")),
        EventKind::CheckOutput(c) => {
            format!("check {} output: {}", c.name, cut(&c.text, RAW_LIMIT))
        }
        EventKind::CheckFinished(c) => format!("check {}", c.summary()),
        EventKind::Report(r) => {
            let mut text = r.summary();
            for c in &r.contradictions {
                text.push_str(&format!("\n  contradiction: \"{}\" — but {}", c.claim, c.fact));
            }
            text
        }
        EventKind::PullRequestOpened(p) => p.summary(),
        EventKind::ReviewSent(r) => r.summary(),
        EventKind::Raw(r) => {
            format!("raw[{}] {}", native_type.unwrap_or("?"), cut(r.native.as_str(), RAW_LIMIT))
        }
    })
}

fn worktree_line(w: &WorktreeFinished) -> String {
    let action = match w.action {
        WorktreeAction::Merged => "merged",
        WorktreeAction::Squashed => "squashed",
        WorktreeAction::Rebased => "rebased",
        WorktreeAction::Discarded => "discarded",
        WorktreeAction::Kept => "kept",
        WorktreeAction::RolledBack => "rolled back",
        WorktreeAction::Continued => "continued",
    };
    let mut line = format!("worktree {action}");
    if let Some(b) = &w.base_branch {
        line.push_str(&format!(" into {b}"));
    }
    if let Some(t) = &w.new_tip {
        line.push_str(&format!(" at {t}"));
    }
    if let Some(s) = &w.continued_in {
        line.push_str(&format!(" in session {s}"));
    }
    line.push_str(&format!(" by {}", w.by));
    if let Some(r) = &w.forced_reason {
        line.push_str(&format!(", forced past failing checks: {r}"));
    }
    line
}

fn outcome_words(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Completed => "completed",
        RunOutcome::Interrupted => "interrupted",
        RunOutcome::Stopped => "stopped",
        RunOutcome::ApiError => "failed (API error)",
        RunOutcome::LimitReached => "hit a limit",
        RunOutcome::AgentError => "failed (agent error)",
        RunOutcome::Crashed => "crashed",
        RunOutcome::SpawnFailed => "failed to start",
    }
}

fn decision_word(decision: DecisionKind) -> &'static str {
    match decision {
        DecisionKind::Allow => "allow",
        DecisionKind::AllowEdited => "allow (edited)",
        DecisionKind::AllowAlways => "allow always",
        DecisionKind::Deny => "deny",
        DecisionKind::DenyAndStop => "deny and stop",
        DecisionKind::Cancelled => "cancelled",
        DecisionKind::ApprovePlan => "approve the plan",
        DecisionKind::Answered => "answered",
    }
}

/// Compact JSON (keys in the order the value holds them: sorted), cut to `limit` characters.
fn json(value: &Value, limit: usize) -> String {
    cut(&value.to_string(), limit).to_owned()
}

/// The first `limit` characters of `text`, with no marker (as the seed does).
pub fn cut(text: &str, limit: usize) -> &str {
    match text.char_indices().nth(limit) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_characters_not_bytes() {
        assert_eq!(cut("héllo", 2), "hé");
        assert_eq!(cut("ab", 5), "ab");
        assert_eq!(cut("", 0), "");
    }
}
