//! Importing Nucleic exports: round trips through markdown and JSONL, the seed, and refusals.

use nucleic_protocol::{Backend, Event, SessionStatus};
use nucleic_transfer::{ImportedMeta, TransferError, export, import};
use pretty_assertions::assert_eq;

use crate::support::{
    SEED_RAW, SEED_RENDERED, seed_events, seed_meta, synthetic_events, synthetic_meta,
};

fn as_json(events: &[Event]) -> Vec<serde_json::Value> {
    events.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
}

#[test]
fn markdown_round_trips_events_and_header() {
    let events = synthetic_events();
    let meta = synthetic_meta(&events);
    let back = import::nucleic_export(&export::markdown(&meta, &events)).unwrap();
    assert_eq!(back.events, events);
    assert_eq!(back.source_lines, events.len());
    assert!(!back.torn_tail);
    let m = back.meta;
    assert_eq!(m.title.as_deref(), Some("Hello file"));
    assert_eq!(m.session_id.as_deref(), Some("S-1"));
    assert_eq!(m.status, Some(SessionStatus::Finished));
    assert_eq!(m.backend, Some(Backend::ClaudeCode));
    assert_eq!(m.backend_session_id, meta.backend_session_id);
    assert_eq!(m.model, meta.model);
    assert_eq!(m.effort, None);
    assert_eq!(m.branch, meta.branch);
    assert_eq!(m.worktree, meta.worktree);
    assert_eq!(m.base_sha, meta.base_sha);
    assert_eq!(m.last_seq, Some(meta.last_seq));
    assert_eq!(m.transcript_path, meta.transcript_path);
    assert_eq!(m.created_at, Some(meta.created_at));
    assert_eq!(m.updated_at, Some(meta.updated_at));
    assert_eq!(m.project, meta.project);
    assert_eq!(m.cwd.as_deref(), Some("/repo/.nucleic/worktrees/hello"));
}

#[test]
fn jsonl_round_trips_and_meta_comes_from_the_events() {
    let events = synthetic_events();
    let back = import::nucleic_export(&export::jsonl(&events)).unwrap();
    assert_eq!(back.events, events);
    let m = back.meta;
    // sessionUpdated renamed it after sessionCreated.
    assert_eq!(m.title.as_deref(), Some("Hello file"));
    assert_eq!(m.session_id.as_deref(), Some("S-1"));
    assert_eq!(m.status, None);
    assert_eq!(m.model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(m.branch.as_deref(), Some("nucleic/hello"));
    assert_eq!(m.last_seq, Some(events.len() as u64));
    assert_eq!(m.created_at, Some(events[0].at));
    assert_eq!(m.agent_version.as_deref(), Some("2.1.332"));
}

#[test]
fn the_seed_raw_events_import_as_plain_jsonl() {
    let back = import::nucleic_export(SEED_RAW).unwrap();
    assert_eq!(back.events.len(), 66);
    assert_eq!(back.events, seed_events());
    let original: Vec<serde_json::Value> =
        SEED_RAW.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(as_json(&back.events), original);
    assert_eq!(
        back.meta.backend_session_id.as_deref(),
        Some("c29d82c3-3baa-4f88-b8d1-04151486ebe4")
    );
    assert_eq!(back.meta.model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(back.meta.last_seq, Some(66));
}

#[test]
fn the_seed_round_trips_through_an_exported_markdown() {
    let events = import::nucleic_export(SEED_RAW).unwrap().events;
    let md = export::markdown(&seed_meta(), &events);
    let back = import::nucleic_export(&md).unwrap();
    assert_eq!(back.events, events);
    assert_eq!(as_json(&back.events), as_json(&seed_events()));
    assert_eq!(back.meta.title.as_deref(), Some("Explore Repository Contents"));
    assert_eq!(back.meta.effort.as_deref(), Some("low"));
    assert_eq!(back.meta.base_sha, None);
    assert_eq!(back.meta.status, Some(SessionStatus::AwaitingInput));
    assert_eq!(back.meta.project, seed_meta().project);
    // Exporting what was imported gives the same document.
    assert_eq!(export::markdown(&seed_meta(), &back.events), md);
}

#[test]
fn the_seed_as_rendered_imports_too() {
    // The seed's own text: no markdown markers and no fence around the raw events.
    let text = format!("{SEED_RENDERED}\n{SEED_RAW}\n120 KiB Raw Blame History\n");
    let back = import::nucleic_export(&text).unwrap();
    assert_eq!(back.events, seed_events());
    assert_eq!(back.meta.session_id.as_deref(), Some("5C9CD482-73AC-4470-B3E1-F336DD8F4D38"));
    assert_eq!(back.meta.status, Some(SessionStatus::AwaitingInput));
    assert_eq!(back.meta.project.map(|p| p.default_branch).as_deref(), Some("main"));
}

#[test]
fn raw_section_text_in_a_message_does_not_confuse_the_import() {
    let mut events = synthetic_events();
    if let nucleic_protocol::EventKind::UserText(t) = &mut events[2].kind {
        t.text =
            "## Raw events (JSONL)\n\n```jsonl\n{\"seq\":99}\n```\n\n## Session\n- ID: evil".into();
    }
    let meta = synthetic_meta(&events);
    let back = import::nucleic_export(&export::markdown(&meta, &events)).unwrap();
    assert_eq!(back.events, events);
    assert_eq!(back.meta.session_id.as_deref(), Some("S-1"));
}

#[test]
fn a_torn_last_jsonl_line_is_skipped() {
    let events = synthetic_events();
    let mut text = export::jsonl(&events[..3]);
    text.push_str(&serde_json::to_string(&events[3]).unwrap()[..40]);
    let back = import::nucleic_export(&text).unwrap();
    assert!(back.torn_tail);
    assert_eq!(back.events, events[..3]);
}

#[test]
fn refusals_say_where_and_why() {
    let events = synthetic_events();
    let lines: Vec<String> = events.iter().map(|e| serde_json::to_string(e).unwrap()).collect();

    let err = import::nucleic_export("").unwrap_err();
    assert!(matches!(err, TransferError::NotAnExport { .. }), "{err}");
    let err = import::nucleic_export("# Some notes\n\nhello\n").unwrap_err();
    assert!(matches!(err, TransferError::NotAnExport { .. }), "{err}");
    let err = import::nucleic_export("# Nucleic session export\n\n## Session\n").unwrap_err();
    assert_eq!(err.to_string(), "not a Nucleic export: no \"Raw events (JSONL)\" section");

    let bad = format!("{}\n{{\"seq\":2}}\n{}\n", lines[0], lines[2]);
    let err = import::nucleic_export(&bad).unwrap_err();
    assert!(matches!(err, TransferError::BadEvent { line: 2, .. }), "{err}");

    let gap = format!("{}\n{}\n", lines[0], lines[2]);
    let err = import::nucleic_export(&gap).unwrap_err();
    assert!(matches!(err, TransferError::SeqGap { line: 2, expected: 2, got: 3 }), "{err}");

    let mut other = events[1].clone();
    other.session_id = "S-2".into();
    let mixed = format!("{}\n{}\n", lines[0], serde_json::to_string(&other).unwrap());
    let err = import::nucleic_export(&mixed).unwrap_err();
    assert!(matches!(err, TransferError::MixedSessions { line: 2, .. }), "{err}");

    // In a markdown export, line numbers count the whole document.
    let md = export::markdown(&synthetic_meta(&events), &events[..2]);
    let broken = md.replace(&lines[1], "{\"not\":\"an event\"}");
    let at = broken.lines().position(|l| l == "{\"not\":\"an event\"}").unwrap() + 1;
    match import::nucleic_export(&broken).unwrap_err() {
        TransferError::BadEvent { line, .. } => assert_eq!(line, at),
        other => panic!("{other}"),
    }
}

/// Regression (fuzzing, `docs/robustness.md`): a "Raw events" heading before the title made the
/// import slice the header backwards and panic.
#[test]
fn a_raw_section_before_the_title_is_refused_not_a_panic() {
    let events = synthetic_events();
    let md = export::markdown(&synthetic_meta(&events), &events[..2]);
    let moved =
        format!("## Raw events (JSONL)\n\n{}", md.replace("## Raw events (JSONL)", "## Notes"));
    let err = import::nucleic_export(&moved).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not a Nucleic export: the \"Raw events (JSONL)\" section comes before the \"Nucleic session export\" heading"
    );
}

#[test]
fn files_are_read_and_written_with_their_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let events = synthetic_events();
    let path = dir.path().join("export.md");
    export::write_file(&path, &export::markdown(&synthetic_meta(&events), &events)).unwrap();
    assert_eq!(import::nucleic_export_file(&path).unwrap().events, events);

    let missing = dir.path().join("missing.jsonl");
    let err = import::nucleic_export_file(&missing).unwrap_err();
    assert!(matches!(&err, TransferError::Io { path, .. } if path == &missing), "{err}");
    assert!(err.to_string().contains("missing.jsonl"), "{err}");
}

#[test]
fn empty_meta_stays_empty_without_events() {
    let back = import::nucleic_export(
        "# Nucleic session export\n\n## Raw events (JSONL)\n\n```jsonl\n```\n",
    )
    .unwrap();
    assert!(back.events.is_empty());
    assert_eq!(back.meta, ImportedMeta::default());
}
