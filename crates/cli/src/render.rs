//! The readable transcript `nucleic run` prints: assistant text as it streams, one line per tool
//! call, result and approval; plumbing (raw lines, status, stderr) stays out of the way.

use std::collections::HashSet;
use std::io::Write;

use nucleic_protocol::{DecisionKind, Event, EventKind};
use nucleic_tui::sanitize::clean;
use serde_json::Value;

/// Prints events for a person.
#[derive(Debug, Default)]
pub struct Renderer {
    /// Messages whose text was already printed as it streamed.
    streamed: HashSet<String>,
    mid_line: bool,
}

/// A one-line summary of a tool input (`file_path=…`, `command=…`), at most `max` chars.
pub fn summarize_input(input: &Value, max: usize) -> String {
    let text = match input {
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| k.as_str() != "content" && k.as_str() != "description")
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    };
    shorten(&text, max)
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = nucleic_tui::sanitize::line(text);
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

impl Renderer {
    /// Writes the lines for `event` (possibly none).
    pub fn render(&mut self, event: &Event, out: &mut impl Write) -> std::io::Result<()> {
        let line = match &event.kind {
            EventKind::AssistantText(t) if t.is_partial => {
                self.streamed.insert(t.message_id.clone());
                self.mid_line = !t.text.ends_with('\n');
                return write!(out, "{}", clean(&t.text)).and_then(|()| out.flush());
            }
            EventKind::AssistantText(t) => {
                if self.streamed.contains(&t.message_id) {
                    // Already shown delta by delta; only end the line.
                    self.end_line(out)?;
                    return Ok(());
                }
                t.text.clone()
            }
            EventKind::UserText(t) => format!("> {}", t.text),
            EventKind::SessionStarted(s) => {
                format!(
                    "· {} session {} ({}) in {}",
                    event.backend.as_str(),
                    s.backend_session_id,
                    s.model,
                    s.cwd
                )
            }
            EventKind::Thinking(t) if !t.is_partial => {
                format!("(thinking) {}", shorten(&t.text, 100))
            }
            EventKind::ToolCallCompleted(c) => {
                format!("⚙ {} {}", c.name, summarize_input(&c.input, 100))
            }
            EventKind::ToolResult(r) => {
                let mark = if r.is_error { "✗" } else { "↳" };
                format!("  {mark} {}", shorten(&result_text(&r.content), 100))
            }
            EventKind::ApprovalRequested(a) => match nucleic_protocol::EgressAsked::of(a) {
                Some(asked) => format!(
                    "? network: allow access to {} ({})? approve once, --always for the project, or deny",
                    asked.destination(),
                    asked.method
                ),
                None => {
                    format!("? {} wants approval: {}", a.tool_name, summarize_input(&a.input, 100))
                }
            },
            EventKind::ApprovalResolved(r) => {
                let what = match r.decision {
                    DecisionKind::Allow => "allowed",
                    DecisionKind::AllowEdited => "allowed with edited input",
                    DecisionKind::AllowAlways => "allowed for the rest of the session",
                    DecisionKind::Deny => "denied",
                    DecisionKind::DenyAndStop => "denied and stopped",
                    DecisionKind::Cancelled => "cancelled",
                    DecisionKind::ApprovePlan => "plan approved",
                    DecisionKind::Answered => "answered",
                };
                let what = match r.mode {
                    Some(mode) => format!("{what} (executing in {} mode)", mode.as_str()),
                    None => what.to_owned(),
                };
                match &r.message {
                    Some(m) => format!("  {what} by {}: {m}", r.by),
                    None => format!("  {what} by {}", r.by),
                }
            }
            EventKind::PermissionDenied(p) => {
                format!("✗ {} refused by the agent: {}", p.tool_name, p.message)
            }
            EventKind::Confinement(c) if c.confined => format!("· confined: {}", c.summary),
            EventKind::Confinement(c) => format!("! UNCONFINED: {}", c.summary),
            EventKind::EgressRefused(r) => {
                format!("✗ network: {} {}:{} refused: {}", r.method, r.host, r.port, r.reason)
            }
            EventKind::ApiRetry(r) => format!(
                "… API call failed ({}{}), retry {}/{} in {} ms",
                r.error,
                r.http_status.map(|s| format!(" {s}")).unwrap_or_default(),
                r.attempt,
                r.max_retries,
                r.retry_delay_ms
            ),
            EventKind::Error(e) => format!("! {}", e.message),
            EventKind::TurnCompleted(t) => format!(
                "· turn {}: {} in / {} out tokens{}",
                if t.is_error { "failed" } else { "done" },
                t.usage.input_tokens,
                t.usage.output_tokens,
                t.usage.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
            ),
            EventKind::RunFinished(r) => format!(
                "· run finished: {}",
                serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
            EventKind::SettingsChanged(s) => format!(
                "· settings: {}{}",
                s.model.as_deref().map(|m| format!("model {m} ")).unwrap_or_default(),
                s.permission_mode.as_deref().map(|m| format!("mode {m}")).unwrap_or_default()
            ),
            EventKind::InterruptRequested(i) => format!("· interrupt requested by {}", i.by),
            EventKind::RateLimit(r) => format!("· rate limit: {}", r.status),
            EventKind::SessionCreated(c) => match &c.worktree {
                Some(w) => format!(
                    "· session {:?} in {} (branch {} off {})",
                    c.title, w.path, w.branch, w.base_ref
                ),
                None => format!("· session {:?} in {}", c.title, c.cwd),
            },
            EventKind::WorktreeFinished(w) => format!(
                "· worktree {} by {}{}",
                serde_json::to_value(w.action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                w.by,
                w.base_branch.as_deref().map(|b| format!(" into {b}")).unwrap_or_default()
            ),
            EventKind::WorktreeReclaimed(w) => format!("· {}", w.summary()),
            EventKind::WorktreeRestored(w) => format!("· {}", w.summary()),
            EventKind::CheckStarted(c) => {
                format!("· check {} started: {}", c.name, c.argv.join(" "))
            }
            EventKind::CheckFinished(c) => format!("· check {}", c.summary()),
            EventKind::PullRequestOpened(p) => format!("· {}", p.summary()),
            EventKind::Report(r) => {
                let mut text = format!("· {}", r.summary());
                for c in &r.contradictions {
                    text.push_str(&format!("\n  ✗ \"{}\" — but {}", c.claim, c.fact));
                }
                text
            }
            EventKind::ReviewSent(r) => format!("· {}", r.summary()),
            EventKind::SessionUpdated(u) => format!(
                "· {}{}{}by {}{}",
                u.title.as_deref().map(|t| format!("renamed to {t:?} ")).unwrap_or_default(),
                u.archived.map(|a| if a { "archived " } else { "unarchived " }).unwrap_or_default(),
                u.mode.as_deref().map(|m| format!("mode {m} ")).unwrap_or_default(),
                u.by,
                u.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
            ),
            EventKind::Thinking(_)
            | EventKind::ToolCallStarted(_)
            | EventKind::ToolInputDelta(_)
            | EventKind::Usage(_)
            | EventKind::StatusChanged(_)
            | EventKind::Stderr(_)
            | EventKind::CheckOutput(_)
            | EventKind::Raw(_) => return Ok(()),
        };
        self.end_line(out)?;
        // Agent text never reaches the terminal as escape sequences or controls.
        writeln!(out, "{}", clean(&line))
    }

    fn end_line(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.mid_line {
            self.mid_line = false;
            writeln!(out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_escape_sequence_of_an_agent_reaches_the_terminal() {
        let hostile = "hi \u{1b}]2;pwned\u{7} and \u{1b}[2J\u{9b}31m done";
        let summary = summarize_input(&json!({"command": hostile}), 200);
        let event = |partial: bool| -> Event {
            serde_json::from_value(json!({
                "seq": 1, "at": "2026-12-07T12:00:00Z", "sessionID": "s", "backend": "simulated",
                "kind": {"type": "assistantText", "messageID": if partial { "m1" } else { "m2" },
                         "text": hostile, "isPartial": partial}
            }))
            .unwrap()
        };
        let mut out = Vec::new();
        let mut renderer = Renderer::default();
        renderer.render(&event(true), &mut out).unwrap();
        renderer.render(&event(false), &mut out).unwrap();
        let printed = String::from_utf8(out).unwrap();
        for text in [summary.as_str(), printed.as_str()] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
                "{text:?}"
            );
            assert!(
                text.contains("pwned") && text.contains("done"),
                "the text itself is kept: {text:?}"
            );
        }
    }

    #[test]
    fn inputs_are_summarized_on_one_line() {
        let s = summarize_input(&json!({"file_path": "/w/a.txt", "content": "x\ny"}), 80);
        assert_eq!(s, "file_path=/w/a.txt");
        let long = summarize_input(&json!({"command": "a".repeat(300)}), 20);
        assert_eq!(long.chars().count(), 20);
    }
}
