//! Unit tests of the exec decoder against the verbatim codex 0.171.0 samples.

use super::*;
use nucleic_protocol::{ToolCall, ToolResult};
use pretty_assertions::assert_eq;

const SAMPLES: &str = include_str!("../../tests/fixtures/codex-exec.samples.jsonl");

pub(crate) fn samples(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["sample"].as_str().unwrap().to_owned(), v["line"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The decoded kinds as JSON, with raw payloads (the verbatim line) blanked for readability.
pub(crate) fn snapshot_value(d: &DecodedLine) -> Value {
    let kinds: Vec<Value> = d
        .events
        .iter()
        .map(|k| {
            let mut v = serde_json::to_value(k).unwrap();
            if let Some(native) = v.get_mut("native") {
                *native = Value::String("<verbatim>".into());
            }
            v
        })
        .collect();
    serde_json::json!({"nativeType": d.native_type, "kinds": kinds, "control": format!("{:?}", d.control)})
}

fn sample(name: &str) -> String {
    samples(SAMPLES).into_iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn every_sample_decodes_to_known_kinds_and_snapshot_holds() {
    let mut decoded = serde_json::Map::new();
    let mut unknown = 0;
    for (name, line) in samples(SAMPLES) {
        // One decoder per sample: each shows what it decodes to on its own.
        let mut decoder = ExecDecoder::new().with_session_info("/ws", "gpt-5.5");
        let d = decoder.decode(&line);
        assert!(!d.events.is_empty(), "{name} produced no event");
        unknown += decoder.unknown_lines();
        decoded.insert(name, snapshot_value(&d));
    }
    assert_eq!(unknown, 0, "every sample is a line codex really writes");
    insta::assert_json_snapshot!("codex_exec_samples_decoded", decoded);
}

#[test]
fn a_command_is_started_once_and_completed_with_its_result() {
    let mut d = ExecDecoder::new();
    let started = d.decode(&sample("item.started:command_execution:in_progress"));
    let call = ToolCall {
        tool_call_id: "item_0".into(),
        name: "shell".into(),
        input: serde_json::json!({"command": "/bin/bash -lc 'touch $WORK/outside_approve_for_me.txt'"}),
        parent_tool_call_id: None,
    };
    assert_eq!(
        started.events,
        vec![EventKind::ToolCallStarted(call.clone()), EventKind::ToolCallCompleted(call)]
    );
    let failed = d.decode(&sample("item.completed:command_execution:failed"));
    let [EventKind::ToolResult(ToolResult { tool_call_id, content, is_error })] =
        failed.events.as_slice()
    else {
        panic!("{failed:?}")
    };
    assert_eq!(tool_call_id, "item_0");
    assert!(is_error);
    assert!(content.as_str().unwrap().starts_with("Exit code: 2\nOutput:\npyenv"));
    // A declined command is an error result with no exit code.
    let declined = ExecDecoder::new().decode(&sample("item.completed:command_execution:declined"));
    assert!(matches!(&declined.events[2], EventKind::ToolResult(r) if r.is_error));
}

#[test]
fn web_search_with_a_duplicate_id_key_keeps_the_item_id() {
    let mut d = ExecDecoder::new();
    let started = d.decode(&sample("item.started:web_search"));
    assert_eq!(started.events.len(), 1, "input not final yet: {started:?}");
    let EventKind::ToolCallStarted(c) = &started.events[0] else { panic!() };
    assert_eq!((c.tool_call_id.as_str(), c.name.as_str()), ("item_0", "web_search"));
    let done = d.decode(&sample("item.completed:web_search"));
    let EventKind::ToolCallCompleted(c) = &done.events[0] else { panic!("{done:?}") };
    assert_eq!(c.input["query"], "codex cli mock");
    assert!(matches!(&done.events[1], EventKind::ToolResult(r) if !r.is_error));
}

#[test]
fn turn_usage_is_the_running_total_minus_the_resumed_baseline() {
    let line = sample("turn.completed");
    let fresh = ExecDecoder::new().decode(&line);
    let EventKind::Usage(u) = &fresh.events[0] else { panic!() };
    assert_eq!((u.input_tokens, u.cached_input_tokens, u.output_tokens), (246, 46, 90));
    let baseline =
        Usage { input_tokens: 200, output_tokens: 80, cached_input_tokens: 40, cost_usd: None };
    let mut resumed = ExecDecoder::new().with_usage_baseline(baseline);
    let out = resumed.decode(&line);
    let EventKind::TurnCompleted(t) = &out.events[1] else { panic!() };
    assert_eq!(
        (t.usage.input_tokens, t.usage.cached_input_tokens, t.usage.output_tokens),
        (46, 6, 10)
    );
    assert_eq!(resumed.thread_usage().unwrap().input_tokens, 246);
    assert_eq!(out.control, Some(ControlIn::TurnEnded { status: "completed".into() }));
}

#[test]
fn the_final_message_becomes_the_turn_result_and_failures_are_errors() {
    let mut d = ExecDecoder::new();
    let started = d.decode(&sample("thread.started"));
    assert_eq!(d.backend_session_id(), Some("01a228e5-5c18-7740-b9f8-2c0a540f0996"));
    assert!(
        matches!(&started.events[0], EventKind::SessionStarted(s) if s.backend_session_id == "01a228e5-5c18-7740-b9f8-2c0a540f0996")
    );
    d.decode(&sample("turn.started"));
    d.decode(&sample("item.completed:agent_message"));
    let done = d.decode(&sample("turn.completed"));
    let EventKind::TurnCompleted(t) = &done.events[1] else { panic!() };
    assert_eq!(t.result.as_deref(), Some("Escalated command finished."));
    let failed = d.decode(&sample("turn.failed"));
    let EventKind::TurnCompleted(t) = &failed.events[0] else { panic!() };
    assert!(t.is_error);
    assert_eq!(t.terminal_reason.as_deref(), Some("failed"));
    assert!(t.result.as_deref().unwrap().starts_with("stream disconnected"));
    let retry = d.decode(&sample("error"));
    assert!(
        matches!(&retry.events[0], EventKind::ApiRetry(r) if r.attempt == 1 && r.max_retries == 1 && r.error == "stream_disconnected")
    );
}

#[test]
fn malformed_and_unknown_lines_become_raw_and_are_counted() {
    let mut d = ExecDecoder::new();
    let bad = d.decode("{this is not json");
    assert_eq!(bad.native_type, "invalid");
    assert!(matches!(bad.events[0], EventKind::Raw(_)));
    assert!(matches!(&bad.events[1], EventKind::Error(e) if e.code == ErrorCode::Decode));
    let unknown = d.decode(r#"{"type":"thread.archived","x":1}"#);
    assert_eq!(unknown.native_type, "thread.archived");
    let EventKind::Raw(raw) = &unknown.events[0] else { panic!() };
    assert_eq!(raw.native.as_str(), r#"{"type":"thread.archived","x":1}"#);
    assert_eq!(unknown.events.len(), 1);
    let item = d.decode(r#"{"type":"item.completed","item":{"id":"i","type":"hologram"}}"#);
    assert_eq!(item.native_type, "item.completed:hologram");
    assert!(matches!(item.events[0], EventKind::Raw(_)));
    // Valid JSON of a known type but the wrong shape is unknown too, never a panic.
    let broken = d.decode(r#"{"type":"item.completed","item":42}"#);
    assert!(matches!(broken.events[0], EventKind::Raw(_)));
    assert_eq!(broken.events.len(), 1);
    assert_eq!(d.unknown_lines(), 4);
}

#[test]
fn decoding_never_panics_on_arbitrary_input() {
    let mut d = ExecDecoder::new();
    for line in [
        "",
        " ",
        "null",
        "[1,2]",
        "\"str\"",
        "{}",
        r#"{"type":null}"#,
        r#"{"type":"turn.completed","usage":"x"}"#,
        r#"{"type":"item.started"}"#,
        r#"{"type":"item.started","item":{"type":"command_execution","exit_code":"x"}}"#,
        r#"{"type":"error"}"#,
        "\u{0}",
    ] {
        let out = d.decode(line);
        assert!(!out.events.is_empty(), "{line:?}");
    }
}
