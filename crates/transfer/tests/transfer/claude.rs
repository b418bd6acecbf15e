//! Converting a Claude Code transcript: kinds in order, gapless seq, nothing dropped.

use nucleic_protocol::{Backend, ErrorCode, Event, EventKind, Timestamp};
use nucleic_transfer::{TransferError, export, import};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::CLAUDE_TRANSCRIPT;

const SESSION: &str = "N-claude-1";
const BACKEND_SESSION: &str = "91ff542b-6c0e-4f0e-9a57-3e3b7d3c2a10";

fn kinds(events: &[Event]) -> Vec<(String, &'static str)> {
    events
        .iter()
        .map(|e| (e.native_type.clone().unwrap_or_else(|| "-".into()), e.kind.type_name()))
        .collect()
}

#[test]
fn every_line_becomes_events_in_order() {
    let imported = import::claude_transcript(CLAUDE_TRANSCRIPT, SESSION).unwrap();
    let events = &imported.events;
    let expected: Vec<(&str, &str)> = vec![
        ("-", "sessionCreated"),
        ("queue-operation", "raw"),
        ("user", "userText"),
        ("attachment", "raw"),
        ("api-request", "raw"),
        ("assistant", "thinking"),
        ("assistant", "assistantText"),
        ("assistant", "toolCallStarted"),
        ("assistant", "toolCallCompleted"),
        ("assistant", "usage"),
        ("user", "toolResult"),
        ("tools-used", "raw"),
        ("assistant", "assistantText"),
        ("assistant", "usage"),
        ("last-prompt", "raw"),
        ("cost-state", "raw"),
        ("invalid", "raw"),
        ("invalid", "error"),
        ("atis-latch", "raw"),
        ("user", "userText"),
        ("assistant", "toolCallStarted"),
        ("assistant", "toolCallCompleted"),
        ("assistant", "usage"),
        ("user", "toolResult"),
        ("user", "raw"),
    ];
    let got = kinds(events);
    let got: Vec<(&str, &str)> = got.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    assert_eq!(got, expected);

    // seq 1.. without gaps, one session, one backend.
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(events.iter().all(|e| e.session_id == SESSION && e.backend == Backend::ClaudeCode));

    // Nothing dropped: every input line produced at least one event after sessionCreated.
    let input_lines = CLAUDE_TRANSCRIPT.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(imported.source_lines, input_lines);
    assert!(!imported.torn_tail);
    // Lines with more than one event: msg_011's tool_use line (+2: completed, usage), msg_012's
    // (+1: usage), the malformed line (+1: error), msg_014's tool_use line (+2).
    assert_eq!(events.len(), 1 + input_lines + 2 + 1 + 1 + 2);
}

#[test]
fn payloads_are_mapped_like_the_live_adapter() {
    let events = import::claude_transcript(CLAUDE_TRANSCRIPT, SESSION).unwrap().events;
    let EventKind::SessionCreated(created) = &events[0].kind else { panic!("{:?}", events[0]) };
    assert_eq!(created.title, "Please create hello.txt containing hello, then tell me what…");
    assert_eq!(created.title.chars().count(), 60);
    assert_eq!(created.cwd, "/home/dev/ws/hello");
    assert!(created.read_only);
    assert_eq!(created.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(created.permission_mode.as_deref(), Some("default"));
    assert_eq!(events[0].at, Timestamp::parse("2026-07-01T09:00:00Z").unwrap());

    let EventKind::ToolCallCompleted(call) = &events[8].kind else { panic!("{:?}", events[8]) };
    assert_eq!(call.tool_call_id, "toolu_01WriteHello");
    assert_eq!(
        call.input,
        json!({"file_path": "/home/dev/ws/hello/hello.txt", "content": "hello"})
    );
    assert_eq!(events[7].kind, EventKind::ToolCallStarted(call.clone()));

    // Usage once per API message, from its last line; cached = cache read + cache creation.
    let EventKind::Usage(u) = &events[9].kind else { panic!("{:?}", events[9]) };
    assert_eq!((u.input_tokens, u.output_tokens, u.cached_input_tokens), (3, 95, 15560));
    assert_eq!(u.cost_usd, None);

    let EventKind::ToolResult(ok) = &events[10].kind else { panic!("{:?}", events[10]) };
    assert_eq!(ok.content, json!("File created successfully at: /home/dev/ws/hello/hello.txt"));
    assert!(!ok.is_error);
    let EventKind::ToolResult(denied) = &events[23].kind else { panic!("{:?}", events[23]) };
    assert!(denied.is_error);
    assert_eq!(denied.tool_call_id, "toolu_01RmHello");

    // The second prompt was a bare string.
    let EventKind::UserText(t) = &events[19].kind else { panic!("{:?}", events[19]) };
    assert_eq!((t.text.as_str(), t.message_id.as_str()), ("Now delete it", "u-0003"));

    // Unknown lines are kept verbatim; the malformed one also gets a decode error.
    let lines: Vec<&str> = CLAUDE_TRANSCRIPT.lines().collect();
    let EventKind::Raw(raw) = &events[3].kind else { panic!("{:?}", events[3]) };
    assert_eq!(raw.native.as_str(), lines[2]);
    let EventKind::Raw(bad) = &events[16].kind else { panic!("{:?}", events[16]) };
    assert_eq!(bad.native.to_value(), json!(lines[12]));
    let EventKind::Error(e) = &events[17].kind else { panic!("{:?}", events[17]) };
    assert_eq!(e.code, ErrorCode::Decode);
    assert!(e.message.starts_with("transcript line 13 is not a JSON object"), "{}", e.message);

    // `at` comes from the line, or from the event before it when the line has none.
    assert_eq!(events[13].at, Timestamp::parse("2026-07-01T09:00:04.010Z").unwrap());
    assert_eq!(events[14].at, events[13].at); // last-prompt has no timestamp
    assert_eq!(events[16].at, events[15].at); // nor has the malformed line
}

#[test]
fn meta_keeps_the_backend_session_and_model() {
    let m = import::claude_transcript(CLAUDE_TRANSCRIPT, SESSION).unwrap().meta;
    assert_eq!(m.session_id.as_deref(), Some(SESSION));
    assert_eq!(m.backend, Some(Backend::ClaudeCode));
    assert_eq!(m.backend_session_id.as_deref(), Some(BACKEND_SESSION));
    assert_eq!(m.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(m.branch.as_deref(), Some("master"));
    assert_eq!(m.cwd.as_deref(), Some("/home/dev/ws/hello"));
    assert_eq!(m.agent_version.as_deref(), Some("2.1.332"));
    assert_eq!(m.last_seq, Some(25));
    assert_eq!(m.updated_at, Some(Timestamp::parse("2026-07-01T09:00:40.010Z").unwrap()));
}

#[test]
fn a_torn_last_line_is_ignored() {
    let text = format!("{CLAUDE_TRANSCRIPT}{{\"type\":\"cost-state\",\"tot");
    let imported = import::claude_transcript(&text, SESSION).unwrap();
    assert!(imported.torn_tail);
    let whole = import::claude_transcript(CLAUDE_TRANSCRIPT, SESSION).unwrap();
    assert_eq!(imported.events, whole.events);
}

#[test]
fn imported_sessions_export_and_come_back() {
    let imported = import::claude_transcript(CLAUDE_TRANSCRIPT, SESSION).unwrap();
    let back = import::nucleic_export(&export::jsonl(&imported.events)).unwrap();
    assert_eq!(back.events, imported.events);
    assert_eq!(back.meta.title, imported.meta.title);
}

#[test]
fn not_a_claude_transcript() {
    let err = import::claude_transcript("", SESSION).unwrap_err();
    assert!(matches!(err, TransferError::NotAClaudeTranscript { .. }), "{err}");
    let err = import::claude_transcript("hello\nworld\n", SESSION).unwrap_err();
    assert!(matches!(err, TransferError::NotAClaudeTranscript { .. }), "{err}");
    let nucleic = crate::support::SEED_RAW;
    let err = import::claude_transcript(nucleic, SESSION).unwrap_err();
    assert!(err.to_string().contains("Nucleic events"), "{err}");
}

#[test]
fn reads_a_transcript_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{BACKEND_SESSION}.jsonl"));
    std::fs::write(&path, CLAUDE_TRANSCRIPT).unwrap();
    let imported = import::claude_transcript_file(&path, SESSION).unwrap();
    assert_eq!(imported.events.len(), 25);
}
