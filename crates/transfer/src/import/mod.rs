//! Reading sessions in: Nucleic exports (markdown or JSONL), Claude Code's own transcripts and
//! Codex rollouts.

mod claude;
mod codex;
mod nucleic;

use std::path::Path;

use nucleic_protocol::Event;
use serde::{Deserialize, Serialize};

use crate::error::{Result, TransferError};
use crate::meta::ImportedMeta;

pub use claude::claude_transcript;
pub use codex::codex_rollout;
pub use nucleic::nucleic_export;

/// An imported session: what could be read about it, and its events (`seq` 1.. without gaps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportedSession {
    pub meta: ImportedMeta,
    pub events: Vec<Event>,
    /// Non-blank input lines turned into events (raw-section lines for a markdown export).
    pub source_lines: usize,
    /// The last line had no newline and did not parse (a file cut mid-write); it was skipped.
    pub torn_tail: bool,
}

/// [`nucleic_export`] over the contents of `path`.
pub fn nucleic_export_file(path: &Path) -> Result<ImportedSession> {
    nucleic_export(&read(path)?)
}

/// [`claude_transcript`] over the contents of `path` (e.g.
/// `~/.claude/projects/<slug>/<session_id>.jsonl`).
pub fn claude_transcript_file(path: &Path, session_id: &str) -> Result<ImportedSession> {
    claude_transcript(&read(path)?, session_id)
}

/// [`codex_rollout`] over the contents of `path` (e.g.
/// `$CODEX_HOME/sessions/2026/11/29/rollout-….jsonl`).
pub fn codex_rollout_file(path: &Path, session_id: &str) -> Result<ImportedSession> {
    codex_rollout(&read(path)?, session_id)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| TransferError::io(path, e))
}

/// Non-blank lines with their 1-based line numbers, and whether the text ends in a newline.
fn numbered_lines(text: &str) -> (Vec<(usize, &str)>, bool) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    (lines, text.ends_with('\n'))
}
