//! Continuing a session in another agent: the first prompt of the new conversation, which hands
//! over what the new agent cannot read from the old one's conversation — the task and the
//! person's follow-ups, what the previous agent said last, why it stopped, and the files changed
//! so far (they are in the worktree it starts in). Each part is bounded.

use nucleic_protocol::{DiffFile, Event, EventKind};

/// The longest quote of one message.
const QUOTE: usize = 2_000;
/// Follow-ups and closing messages quoted, at most.
const FOLLOW_UPS: usize = 10;
const LAST_SAID: usize = 3;
/// Files listed, at most.
const FILES: usize = 200;

/// `text` cut at `max` characters, saying so.
fn quoted(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((at, _)) => {
            format!("{}… [cut: {} characters in all]", &text[..at], text.chars().count())
        }
        None => text.to_owned(),
    }
}

/// The handover prompt for `to` (the new agent's label) continuing the session `events` are
/// of, which `from` ran; `files` its changes against its base, then the person's `prompt`.
pub(crate) fn handover_prompt(
    from: &str,
    to: &str,
    events: &[Event],
    files: &[DiffFile],
    prompt: &str,
) -> String {
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserText(t) if !t.is_partial && !t.text.trim().is_empty() => {
                Some(t.text.as_str())
            }
            _ => None,
        })
        .collect();
    let said: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantText(t) if !t.is_partial && !t.text.trim().is_empty() => {
                Some(t.text.as_str())
            }
            _ => None,
        })
        .collect();
    let stopped = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Error(err) => Some(err.message.clone()),
        EventKind::RunFinished(r) => r.message.clone(),
        _ => None,
    });

    let mut out = format!(
        "You are continuing a task that another coding agent ({from}) worked on in this same \
         worktree; you are {to}. Its conversation is not available to you: what follows is \
         what it was asked, what it said last and what it changed. Check the files yourself \
         before relying on this summary.\n"
    );
    match asked.split_first() {
        Some((task, follow_ups)) => {
            out.push_str(&format!("\n## The task\n\n{}\n", quoted(task, QUOTE)));
            if !follow_ups.is_empty() {
                out.push_str("\n## The person's follow-ups, in order\n\n");
                let skipped = follow_ups.len().saturating_sub(FOLLOW_UPS);
                if skipped > 0 {
                    out.push_str(&format!("({skipped} earlier ones left out)\n"));
                }
                for f in follow_ups.iter().skip(skipped) {
                    out.push_str(&format!("- {}\n", quoted(f, QUOTE)));
                }
            }
        }
        None => out.push_str("\n## The task\n\n(no prompt was recorded)\n"),
    }
    if !said.is_empty() {
        out.push_str(&format!("\n## What {from} said last\n\n"));
        for s in said.iter().skip(said.len().saturating_sub(LAST_SAID)) {
            out.push_str(&format!("> {}\n\n", quoted(s, QUOTE).replace('\n', "\n> ")));
        }
    }
    if let Some(why) = stopped {
        out.push_str(&format!("\n## Why it stopped\n\n{}\n", quoted(&why, QUOTE)));
    }
    out.push_str("\n## Files changed so far (against the base branch)\n\n");
    if files.is_empty() {
        out.push_str("None yet.\n");
    }
    for f in files.iter().take(FILES) {
        out.push_str(&format!("- {} {} (+{} -{})\n", f.status, f.path, f.additions, f.deletions));
    }
    if files.len() > FILES {
        out.push_str(&format!("- … and {} more\n", files.len() - FILES));
    }
    out.push_str(&format!("\n## Now\n\n{}\n", prompt.trim()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: serde_json::Value) -> Event {
        serde_json::from_value(serde_json::json!({
            "seq": seq, "at": "2026-12-07T00:00:00Z", "sessionID": "s", "backend": "claudeCode",
            "kind": kind
        }))
        .unwrap()
    }

    #[test]
    fn the_task_follow_ups_last_words_reason_and_files_are_handed_over_bounded() {
        let long = "x".repeat(5_000);
        let events = vec![
            event(
                1,
                serde_json::json!({"type": "userText", "isPartial": false, "messageID": "u1", "text": "fix the login test"}),
            ),
            event(
                2,
                serde_json::json!({"type": "assistantText", "isPartial": true, "messageID": "m1", "text": "partial"}),
            ),
            event(
                3,
                serde_json::json!({"type": "assistantText", "isPartial": false, "messageID": "m1", "text": "I changed auth.rs"}),
            ),
            event(
                4,
                serde_json::json!({"type": "userText", "isPartial": false, "messageID": "u2", "text": long}),
            ),
            event(
                5,
                serde_json::json!({"type": "error", "code": "apiError", "message": "429 rate_limit_error: mock: rate limited"}),
            ),
        ];
        let files: Vec<DiffFile> = serde_json::from_value(serde_json::json!([
            {"path": "src/auth.rs", "status": "modified", "additions": 3, "deletions": 1, "binary": false}
        ]))
        .unwrap();
        let prompt = handover_prompt("Claude Code", "Gemini CLI", &events, &files, "carry on");
        assert!(prompt.contains("## The task\n\nfix the login test"), "{prompt}");
        assert!(prompt.contains("I changed auth.rs") && !prompt.contains("partial"), "{prompt}");
        assert!(prompt.contains("[cut: 5000 characters in all]"), "a long follow-up is cut");
        assert!(prompt.len() < 4_000, "bounded: {}", prompt.len());
        assert!(prompt.contains("429 rate_limit_error"), "why it stopped: {prompt}");
        assert!(prompt.contains("- modified src/auth.rs (+3 -1)"), "{prompt}");
        assert!(prompt.ends_with("## Now\n\ncarry on\n"), "{prompt}");
        assert!(prompt.contains("you are Gemini CLI"), "{prompt}");
    }
}
