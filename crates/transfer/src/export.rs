//! Writing a session out: the seed's "Nucleic session export" markdown, or plain JSONL.

use std::fmt::Write as _;
use std::path::Path;

use nucleic_protocol::Event;

use crate::conversation;
use crate::error::{Result, TransferError};
use crate::meta::{ExportMeta, status_label};

/// The document's first heading; imports look for it.
pub const TITLE: &str = "Nucleic session export";
/// The heading of the raw section; imports read events from the last one in the text.
pub const RAW_HEADING: &str = "Raw events (JSONL)";
/// The sentence between the raw heading and the events.
pub const RAW_INTRO: &str = "Full normalized event stream for debugging:";
/// What the header shows for a value that is not known.
pub const NONE: &str = "—";

/// The seed's export layout: `# Nucleic session export`, `## Session` and `## Project` as
/// `- Label: value` lists, `## Conversation` with one `#<seq> …` paragraph per shown event, then
/// `## Raw events (JSONL)` with every event (partials included) as one JSON line in a
/// ```` ```jsonl ```` fence — that section is the source of truth for imports.
pub fn markdown(meta: &ExportMeta, events: &[Event]) -> String {
    let mut out = String::new();
    let _ = write!(out, "# {TITLE}\n\n## Session\n\n");
    let opt = |v: &Option<String>| v.as_deref().map_or_else(|| NONE.to_owned(), one_line);
    let fields = [
        ("Title", one_line(&meta.title)),
        ("ID", one_line(&meta.session_id)),
        ("Status", status_label(meta.status).to_owned()),
        ("Backend", meta.backend.as_str().to_owned()),
        ("Backend session id", opt(&meta.backend_session_id)),
        ("Model", opt(&meta.model)),
        ("Effort", opt(&meta.effort)),
        ("Branch", opt(&meta.branch)),
        ("Worktree", opt(&meta.worktree)),
        ("Base SHA", opt(&meta.base_sha)),
        ("Last seq", meta.last_seq.to_string()),
        ("Transcript path", opt(&meta.transcript_path)),
        ("Created", meta.created_at.to_string()),
        ("Updated", meta.updated_at.to_string()),
    ];
    for (label, value) in fields {
        let _ = writeln!(out, "- {label}: {value}");
    }
    if let Some(p) = &meta.project {
        let _ = write!(out, "\n## Project\n\n");
        let _ = writeln!(out, "- Name: {}", one_line(&p.name));
        let _ = writeln!(out, "- Root: {}", one_line(&p.root));
        let _ = writeln!(out, "- Default branch: {}", one_line(&p.default_branch));
    }
    out.push_str("\n## Conversation\n\n");
    for entry in events.iter().filter_map(conversation::entry) {
        out.push_str(&entry);
        out.push_str("\n\n");
    }
    let _ = write!(out, "## {RAW_HEADING}\n\n{RAW_INTRO}\n\n```jsonl\n");
    out.push_str(&jsonl(events));
    out.push_str("```\n");
    out
}

/// One `serde_json` line per event, each ending in a newline: a transcript-compatible stream.
pub fn jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for event in events {
        // Encoding an `Event` cannot fail (every map key is a string); should it ever, the line
        // says so and an import of this export fails loudly on it instead of losing it quietly.
        let line = serde_json::to_string(event).unwrap_or_else(|e| {
            format!("{{\"unencodableEventSeq\":{},\"error\":{:?}}}", event.seq, e.to_string())
        });
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Writes an export (either format) to `path`.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| TransferError::io(path, e))
}

/// Header values stay on their line.
fn one_line(value: &str) -> String {
    if value.contains(['\n', '\r']) {
        value.split(['\n', '\r']).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
    } else {
        value.to_owned()
    }
}
