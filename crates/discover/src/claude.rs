//! Claude Code's sessions: `<config>/projects/<slug>/<session id>.jsonl`, the slug being the
//! working directory with every character that is not a letter or digit turned into `-`.

use std::path::{Path, PathBuf};

use nucleic_protocol::Backend;
use serde_json::{Map, Value};

use crate::window::{self, Window};
use crate::{Budget, Discovery, OutsideSession, Skipped, Turns, belongs, title_of};

/// Line types of Claude Code 2.1 transcripts; any other is counted as unknown.
const KNOWN: &[&str] = &[
    "user",
    "assistant",
    "system",
    "attachment",
    "queue-operation",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "tools-used",
    "last-prompt",
    "atis-latch",
    "cost-state",
    "summary",
    "custom-title",
    "file-history-snapshot",
];

/// Model name Claude Code gives messages it made up itself.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The folder name Claude Code keeps a working directory's sessions under.
pub(crate) fn slug(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Adds the sessions of `checkout` (and below) that `config` holds to `found`.
pub(crate) fn sessions(config: &Path, checkout: &Path, budget: &mut Budget, found: &mut Discovery) {
    let prefix = slug(checkout);
    let Ok(projects) = std::fs::read_dir(config.join("projects")) else { return };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for dir in projects.flatten() {
        if !dir.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir.path()) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            // Regular files only: a link (to a secret, say) or a FIFO an agent planted in the
            // folder its CLI writes is not a session.
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if path.extension().is_some_and(|e| e == "jsonl") && regular {
                let modified = entry.metadata().and_then(|m| m.modified()).ok();
                files.push((modified.unwrap_or(std::time::UNIX_EPOCH), path));
            }
        }
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in files {
        if !budget.take() {
            return;
        }
        match window::read(&path, budget.window()) {
            Ok(w) => match summarize(&path, &w) {
                Ok(s) if belongs(&s.cwd, checkout) => found.sessions.push(s),
                Ok(_) => {} // a slug shared with another folder (`/src/app-x` for `/src/app`)
                Err(why) => found.skipped.push(Skipped { path, why }),
            },
            Err(e) => found.skipped.push(Skipped { path, why: format!("unreadable: {e}") }),
        }
    }
}

/// What the head and tail of one transcript say.
pub(crate) fn summarize(path: &Path, w: &Window) -> Result<OutsideSession, String> {
    let (objects, bad_lines) = window::objects(w.head.iter().chain(&w.tail));
    let str_of =
        |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    let cwd = objects.iter().find_map(|o| str_of(o, "cwd")).ok_or_else(|| {
        format!(
            "not a Claude Code transcript: no working directory in its first {} lines",
            w.head.len()
        )
    })?;
    let id = objects
        .iter()
        .find_map(|o| str_of(o, "sessionId"))
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let prompts: Vec<String> = objects.iter().filter_map(prompt).collect();
    let named = objects.iter().rev().find_map(|o| match kind(o) {
        "custom-title" => str_of(o, "customTitle"),
        "summary" => str_of(o, "summary"),
        _ => None,
    });
    let model = objects.iter().rev().find_map(|o| {
        let model = o.get("message")?.get("model")?.as_str()?;
        (kind(o) == "assistant" && model != SYNTHETIC_MODEL).then(|| model.to_owned())
    });
    let stamps: Vec<String> = objects.iter().filter_map(|o| str_of(o, "timestamp")).collect();
    let count = u32::try_from(prompts.len()).unwrap_or(u32::MAX);
    let cwd = PathBuf::from(cwd);
    Ok(OutsideSession {
        backend: Backend::ClaudeCode,
        id,
        path: path.to_owned(),
        cwd_exists: cwd.is_dir(),
        cwd,
        title: named
            .as_deref()
            .and_then(title_of)
            .or_else(|| prompts.first().and_then(|p| title_of(p))),
        started_at: stamps.first().cloned(),
        last_at: stamps.last().cloned(),
        modified: w.modified,
        turns: if w.whole { Turns::Exact(count) } else { Turns::AtLeast(count) },
        model,
        cli_version: objects.iter().find_map(|o| str_of(o, "version")),
        live: None,
        unknown_lines: objects.iter().filter(|o| !KNOWN.contains(&kind(o))).count(),
        bad_lines,
    })
}

/// A line's `type`.
fn kind(o: &Map<String, Value>) -> &str {
    o.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The person's prompt a `user` line carries (not a tool result, a side chain or a meta line).
fn prompt(o: &Map<String, Value>) -> Option<String> {
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    if o.get("type").and_then(Value::as_str) != Some("user")
        || flag("isSidechain")
        || flag("isMeta")
    {
        return None;
    }
    match o.get("message")?.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            let tool_result =
                blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            (!tool_result && !texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slug_is_the_path_with_every_other_character_a_dash() {
        assert_eq!(
            slug(Path::new("/tmp/cc-research/ws/stdio_perm")),
            "-tmp-cc-research-ws-stdio-perm"
        );
    }

    #[test]
    fn the_fixture_transcript_is_summarized() {
        let text = include_str!("../../transfer/tests/fixtures/claude-transcript.jsonl");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("91ff542b.jsonl");
        std::fs::write(&path, text).unwrap();
        let w = window::read(&path, 64 * 1024).unwrap();
        let s = summarize(&path, &w).unwrap();
        assert_eq!(s.id, "91ff542b-6c0e-4f0e-9a57-3e3b7d3c2a10");
        assert_eq!(s.cwd, Path::new("/home/dev/ws/hello"));
        assert_eq!(
            s.title.as_deref(),
            Some("Please create hello.txt containing hello, then tell me what you did")
        );
        assert_eq!(s.cli_version.as_deref(), Some("2.1.332"));
        assert!(matches!(s.turns, Turns::Exact(n) if n >= 1), "{:?}", s.turns);
        assert_eq!(s.unknown_lines, 0);
    }
}
