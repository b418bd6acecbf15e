//! Importing a Nucleic export: events from its raw JSONL section (or a plain JSONL file).

use nucleic_protocol::{Event, Timestamp};

use super::{ImportedSession, numbered_lines};
use crate::error::{Result, TransferError};
use crate::export::{NONE, RAW_HEADING, TITLE};
use crate::meta::{ImportedMeta, ProjectMeta, parse_backend, parse_status};

/// Parses a Nucleic export: the markdown of [`crate::export::markdown`] (events come from its
/// last "Raw events (JSONL)" section; the header fills the meta) or a plain JSONL stream of
/// events such as a session transcript (a torn last line is skipped). Events must be one
/// session's, numbered 1, 2, 3, …; meta fields the header does not give come from the events.
pub fn nucleic_export(text: &str) -> Result<ImportedSession> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (lines, ends_with_newline) = numbered_lines(text);
    let Some(&(_, first)) = lines.first() else {
        return Err(TransferError::NotAnExport { why: "the text is empty".into() });
    };
    let mut imported = if first.trim_start().starts_with('{') {
        plain_jsonl(&lines, ends_with_newline)?
    } else {
        markdown(text)?
    };
    imported.meta.fill_from_events(&imported.events);
    Ok(imported)
}

fn plain_jsonl(lines: &[(usize, &str)], ends_with_newline: bool) -> Result<ImportedSession> {
    let mut events = Vec::with_capacity(lines.len());
    let mut torn_tail = false;
    for (i, &(number, line)) in lines.iter().enumerate() {
        match serde_json::from_str::<Event>(line) {
            Ok(event) => events.push((number, event)),
            Err(_) if i + 1 == lines.len() && !ends_with_newline => torn_tail = true,
            Err(source) => return Err(TransferError::BadEvent { line: number, source }),
        }
    }
    let source_lines = events.len();
    let events = checked(events)?;
    Ok(ImportedSession { meta: ImportedMeta::default(), events, source_lines, torn_tail })
}

fn markdown(text: &str) -> Result<ImportedSession> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(title_at) = lines.iter().position(|l| heading(l) == TITLE) else {
        return Err(TransferError::NotAnExport {
            why: format!("no \"{TITLE}\" heading, and the first line is not a JSON event"),
        });
    };
    let Some(raw_at) = lines.iter().rposition(|l| heading(l) == RAW_HEADING) else {
        return Err(TransferError::NotAnExport { why: format!("no \"{RAW_HEADING}\" section") });
    };
    if raw_at < title_at {
        return Err(TransferError::NotAnExport {
            why: format!("the \"{RAW_HEADING}\" section comes before the \"{TITLE}\" heading"),
        });
    }
    let meta = header(&lines[title_at..raw_at]);
    let mut events = Vec::new();
    let (mut fenced, mut started) = (false, false);
    for (i, line) in lines.iter().enumerate().skip(raw_at + 1) {
        let t = line.trim();
        if t.starts_with("```") {
            if started {
                break;
            }
            (fenced, started) = (true, true);
        } else if t.is_empty() {
            // Without a fence (a rendered copy of an export), a blank line ends the events.
            if started && !fenced {
                break;
            }
        } else if started || t.starts_with('{') {
            started = true;
            let event = serde_json::from_str::<Event>(t)
                .map_err(|source| TransferError::BadEvent { line: i + 1, source })?;
            events.push((i + 1, event));
        }
    }
    let source_lines = events.len();
    let events = checked(events)?;
    Ok(ImportedSession { meta, events, source_lines, torn_tail: false })
}

/// Seq must run 1, 2, 3, … and every event must be of the first event's session.
fn checked(numbered: Vec<(usize, Event)>) -> Result<Vec<Event>> {
    let session = numbered.first().map(|(_, e)| e.session_id.clone()).unwrap_or_default();
    let mut events = Vec::with_capacity(numbered.len());
    for (expected, (line, event)) in (1u64..).zip(numbered) {
        if event.seq != expected {
            return Err(TransferError::SeqGap { line, expected, got: event.seq });
        }
        if event.session_id != session {
            let (expected, got) = (session, event.session_id);
            return Err(TransferError::MixedSessions { line, expected, got });
        }
        events.push(event);
    }
    Ok(events)
}

/// The text of a heading line without its `#`s (also accepts the bare text of a rendered copy).
fn heading(line: &str) -> &str {
    line.trim().trim_start_matches('#').trim()
}

/// Reads the `Label: value` lines of the Session and Project sections (up to Conversation).
fn header(lines: &[&str]) -> ImportedMeta {
    let mut meta = ImportedMeta::default();
    let mut project: Option<ProjectMeta> = None;
    let mut section = "";
    for line in lines {
        let h = heading(line);
        match h {
            "Conversation" => break,
            "Session" | "Project" => {
                section = h;
                continue;
            }
            _ => {}
        }
        let item = line.trim().trim_start_matches(['-', '*']).trim();
        let Some((label, value)) = item.split_once(':') else { continue };
        let value = value.trim();
        let known = (value != NONE && !value.is_empty()).then(|| value.to_owned());
        match (section, label.trim()) {
            ("Session", "Title") => meta.title = known,
            ("Session", "ID") => meta.session_id = known,
            ("Session", "Status") => meta.status = parse_status(value),
            ("Session", "Backend") => meta.backend = parse_backend(value),
            ("Session", "Backend session id") => meta.backend_session_id = known,
            ("Session", "Model") => meta.model = known,
            ("Session", "Effort") => meta.effort = known,
            ("Session", "Branch") => meta.branch = known,
            ("Session", "Worktree") => meta.worktree = known,
            ("Session", "Base SHA") => meta.base_sha = known,
            ("Session", "Last seq") => meta.last_seq = value.parse().ok(),
            ("Session", "Transcript path") => meta.transcript_path = known,
            ("Session", "Created") => meta.created_at = Timestamp::parse(value).ok(),
            ("Session", "Updated") => meta.updated_at = Timestamp::parse(value).ok(),
            ("Project", field @ ("Name" | "Root" | "Default branch")) => {
                let p = project.get_or_insert_with(|| ProjectMeta {
                    name: String::new(),
                    root: String::new(),
                    default_branch: String::new(),
                });
                let slot = match field {
                    "Name" => &mut p.name,
                    "Root" => &mut p.root,
                    _ => &mut p.default_branch,
                };
                *slot = known.unwrap_or_default();
            }
            _ => {}
        }
    }
    meta.project = project;
    meta
}
