//! The export layout: a snapshot of a synthetic session, and conformance with the seed's text.

use nucleic_transfer::export;
use pretty_assertions::assert_eq;

use crate::support::{SEED_RENDERED, seed_events, seed_meta, synthetic_events, synthetic_meta};

#[test]
fn markdown_of_a_synthetic_session() {
    let events = synthetic_events();
    insta::assert_snapshot!(
        "synthetic_session_markdown",
        export::markdown(&synthetic_meta(&events), &events)
    );
}

#[test]
fn raw_section_holds_every_event_partials_included() {
    let events = synthetic_events();
    let md = export::markdown(&synthetic_meta(&events), &events);
    let raw = md.split("```jsonl\n").nth(1).unwrap().strip_suffix("```\n").unwrap();
    assert_eq!(raw, export::jsonl(&events));
    assert_eq!(raw.lines().count(), events.len());
    for (line, event) in raw.lines().zip(&events) {
        assert_eq!(line, serde_json::to_string(event).unwrap());
    }
    // Partials, deltas, thinking and tool-call starts are in the raw section only.
    for hidden in ["#7 ", "#9 ", "#10 ", "#6 "] {
        assert!(!md.lines().any(|l| l.starts_with(hidden)), "{hidden} is shown");
    }
}

#[test]
fn jsonl_is_one_line_per_event() {
    let events = synthetic_events();
    let text = export::jsonl(&events);
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), events.len());
    assert_eq!(export::jsonl(&[]), "");
}

#[test]
fn a_session_without_project_or_events_still_has_every_section() {
    let mut meta = synthetic_meta(&[]);
    meta.project = None;
    meta.base_sha = None;
    meta.title = "two\nlines".into();
    let md = export::markdown(&meta, &[]);
    assert!(md.contains("- Title: two lines\n"));
    assert!(md.contains("- Base SHA: —\n"));
    assert!(!md.contains("## Project"));
    assert!(md.ends_with("## Conversation\n\n## Raw events (JSONL)\n\nFull normalized event stream for debugging:\n\n```jsonl\n```\n"));
}

/// What a markdown renderer leaves of a line: no emphasis, code or escape characters, no heading
/// or bullet markers, single spaces. The seed's text is such a rendering (and doubled every `~`).
fn rendered(line: &str, seed: bool) -> String {
    let line = if seed { line.replace("~~", "~") } else { line.to_owned() };
    let mut s = line.trim();
    for marker in ["###### ", "##### ", "#### ", "### ", "## ", "# ", "- "] {
        if let Some(rest) = s.strip_prefix(marker) {
            s = rest;
            break;
        }
    }
    // Links show their text only: `[text](target)` → `text`.
    let mut unlinked = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("](") {
        let Some(end) = rest[i..].find(')') else { break };
        unlinked.push_str(&rest[..i]);
        rest = &rest[i + end + 1..];
    }
    unlinked.push_str(rest);
    let kept: String =
        unlinked.chars().filter(|c| !matches!(c, '*' | '`' | '\\' | '[' | ']')).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn rendered_lines(text: &str, seed: bool) -> Vec<String> {
    text.lines().map(|l| rendered(l, seed)).filter(|l| !l.is_empty()).collect()
}

#[test]
fn the_seed_export_renders_as_the_seed_shows_it() {
    let md = export::markdown(&seed_meta(), &seed_events());
    let head = md.split("```jsonl").next().unwrap();
    assert_eq!(rendered_lines(head, false), rendered_lines(SEED_RENDERED, true));
}

#[test]
fn seed_truncation_lengths() {
    let md = export::markdown(&seed_meta(), &seed_events());
    let line = |prefix: &str| md.lines().find(|l| l.starts_with(prefix)).unwrap().to_owned();
    // raw[…] payloads: 500 characters; tool results: 2000 characters; no marker.
    assert_eq!(line("#6 ").chars().count(), "#6 raw[system/task_started] ".chars().count() + 500);
    assert!(line("#6 ").ends_with(r#""type":"sy"#));
    assert_eq!(line("#19 ").chars().count(), "#19 Result: ".chars().count() + 2000);
    // Short payloads are whole.
    assert_eq!(line("#59 "), r#"#59 Result: "No files found""#);
    assert_eq!(line("#28 "), "#28 usage in=4 out=421");
    assert_eq!(line("#30 "), "#30 — run completed —");
    assert_eq!(line("#65 ").chars().count(), "#65 raw[?] ".chars().count() + 500);
}
