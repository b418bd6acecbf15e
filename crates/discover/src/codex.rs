//! Codex's sessions: `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, every
//! project's together, each opening with a `session_meta` line that names its working directory.

use std::path::{Path, PathBuf};

use nucleic_protocol::Backend;
use serde_json::{Map, Value};

use crate::window::{self, Window};
use crate::{Budget, Discovery, OutsideSession, Skipped, Turns, belongs, title_of};

/// Line types of Codex 0.171 rollouts; any other is counted as unknown.
const KNOWN: &[&str] = &[
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "world_state",
    "token_usage_record",
    "compacted",
];

/// Every rollout under `sessions`, newest first (their names carry the time they began).
fn rollouts(sessions: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![sessions.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                // Regular files only (not a planted link or FIFO).
                Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "jsonl") => {
                    out.push(path)
                }
                _ => {}
            }
        }
    }
    // `…/2026/11/29/rollout-2026-11-29T19-55-05-<id>.jsonl`: the file name orders by time.
    out.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    out
}

/// Adds the sessions of `checkout` (and below) that `codex_home` holds to `found`.
pub(crate) fn sessions(
    codex_home: &Path,
    checkout: &Path,
    budget: &mut Budget,
    found: &mut Discovery,
) {
    for path in rollouts(&codex_home.join("sessions")) {
        if !budget.take() {
            return;
        }
        // The first line first: most rollouts are another project's, and need nothing more.
        match window::first_line(&path, budget.window()) {
            Ok(Some(line)) if !cwd_in(&line, checkout) => continue,
            Ok(_) => {}
            Err(e) => {
                found.skipped.push(Skipped { path, why: format!("unreadable: {e}") });
                continue;
            }
        }
        match window::read(&path, budget.window()) {
            Ok(w) => match summarize(&path, &w) {
                Ok(s) if belongs(&s.cwd, checkout) => found.sessions.push(s),
                Ok(_) => {}
                Err(why) => found.skipped.push(Skipped { path, why }),
            },
            Err(e) => found.skipped.push(Skipped { path, why: format!("unreadable: {e}") }),
        }
    }
}

/// Whether a rollout's first line is a `session_meta` whose folder is not under `checkout`;
/// false only when it surely is another project's (anything else is read and judged whole).
fn cwd_in(first: &str, checkout: &Path) -> bool {
    /// Only what the test needs: serde skips the rest (the base instructions) without building it.
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "type")]
        kind: String,
        payload: Option<MetaPayload>,
    }
    #[derive(serde::Deserialize)]
    struct MetaPayload {
        cwd: Option<String>,
    }
    match serde_json::from_str::<Meta>(first) {
        Ok(Meta { kind, payload: Some(MetaPayload { cwd: Some(cwd) }) })
            if kind == "session_meta" =>
        {
            belongs(Path::new(&cwd), checkout)
        }
        _ => true,
    }
}

/// What the head and tail of one rollout say.
pub(crate) fn summarize(path: &Path, w: &Window) -> Result<OutsideSession, String> {
    let (objects, bad_lines) = window::objects(w.head.iter().chain(&w.tail));
    let kind =
        |o: &Map<String, Value>| o.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
    let payload = |o: &Map<String, Value>| o.get("payload").and_then(Value::as_object).cloned();
    let meta = objects
        .iter()
        .find(|o| kind(o) == "session_meta")
        .and_then(payload)
        .ok_or_else(|| "not a Codex rollout: no session_meta line at its start".to_owned())?;
    let text =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let cwd = text(&meta, "cwd").ok_or("its session_meta names no working directory")?;
    // The person's messages among the Responses items (0.171), else as `user_message` events.
    let items = objects.iter().filter(|o| kind(o) == "response_item").filter_map(payload);
    let mut prompts: Vec<String> = items.filter_map(|p| person_text(&p)).collect();
    if prompts.is_empty() {
        prompts = objects
            .iter()
            .filter(|o| kind(o) == "event_msg")
            .filter_map(payload)
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("user_message"))
            .filter_map(|p| text(&p, "message"))
            .collect();
    }
    let model = objects
        .iter()
        .rev()
        .filter(|o| kind(o) == "turn_context")
        .filter_map(payload)
        .find_map(|p| text(&p, "model"));
    let stamps: Vec<String> = objects.iter().filter_map(|o| text(o, "timestamp")).collect();
    let count = u32::try_from(prompts.len()).unwrap_or(u32::MAX);
    let cwd = PathBuf::from(cwd);
    Ok(OutsideSession {
        backend: Backend::Codex,
        id: text(&meta, "id").unwrap_or_default(),
        path: path.to_owned(),
        cwd_exists: cwd.is_dir(),
        cwd,
        title: prompts.first().and_then(|p| title_of(p)),
        started_at: stamps.first().cloned(),
        last_at: stamps.last().cloned(),
        modified: w.modified,
        turns: if w.whole { Turns::Exact(count) } else { Turns::AtLeast(count) },
        model,
        cli_version: text(&meta, "cli_version"),
        live: None,
        unknown_lines: objects.iter().filter(|o| !KNOWN.contains(&kind(o).as_str())).count(),
        bad_lines,
    })
}

/// What a person typed, if `item` is a user message that is not one of codex's own wrappers
/// (`<environment_context>`, `<turn_aborted>`, …).
fn person_text(item: &Map<String, Value>) -> Option<String> {
    let is = |k: &str, v: &str| item.get(k).and_then(Value::as_str) == Some(v);
    if !is("type", "message") || !is("role", "user") {
        return None;
    }
    let parts = item.get("content")?.as_array()?;
    let text: Vec<&str> = parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("input_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    let trimmed = text.trim_start();
    (!trimmed.is_empty() && !trimmed.starts_with('<')).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rollout_is_summarized_from_its_meta_prompts_and_context() {
        let line = |t: &str, payload: Value| {
            json!({"timestamp": "2026-11-29T19:52:44.404Z", "type": t, "payload": payload})
                .to_string()
        };
        let text = [
            line(
                "session_meta",
                json!({"id": "01a2", "cwd": "/src/app", "cli_version": "0.171.0"}),
            ),
            line("turn_context", json!({"model": "gpt-5.5"})),
            line("event_msg", json!({"type": "user_message", "message": "add a retry"})),
            "not json".to_owned(),
            line("brand_new_kind", json!({})),
        ]
        .join("\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        std::fs::write(&path, text).unwrap();
        let s = summarize(&path, &window::read(&path, 4096).unwrap()).unwrap();
        assert_eq!((s.id.as_str(), s.cwd.as_path()), ("01a2", Path::new("/src/app")));
        assert_eq!(s.title.as_deref(), Some("add a retry"));
        assert_eq!(s.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(s.turns, Turns::Exact(1));
        assert_eq!((s.unknown_lines, s.bad_lines), (1, 1));
    }

    #[test]
    fn newest_rollouts_come_first() {
        let dir = tempfile::tempdir().unwrap();
        for (day, name) in [
            ("2026/11/29", "rollout-2026-11-29T10-00-00-a.jsonl"),
            ("2026/12/01", "rollout-2026-12-01T09-00-00-b.jsonl"),
        ] {
            std::fs::create_dir_all(dir.path().join(day)).unwrap();
            std::fs::write(dir.path().join(day).join(name), "").unwrap();
        }
        let names: Vec<_> =
            rollouts(dir.path()).iter().map(|p| p.file_name().unwrap().to_owned()).collect();
        assert_eq!(
            names,
            ["rollout-2026-12-01T09-00-00-b.jsonl", "rollout-2026-11-29T10-00-00-a.jsonl"]
        );
    }
}
