//! Unit tests of the Claude decoder against the verbatim 2.1.332 samples.

use super::*;
use pretty_assertions::assert_eq;

const SAMPLES: &str = include_str!("../../tests/fixtures/claude-2.1.332.samples.jsonl");

fn samples() -> Vec<(String, String)> {
    SAMPLES
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["sample"].as_str().unwrap().to_owned(), v["line"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn every_sample_decodes_to_known_kinds_and_snapshot_holds() {
    let mut decoder = ClaudeDecoder::new();
    let mut decoded = serde_json::Map::new();
    for (name, line) in samples() {
        let d = decoder.decode(&line);
        assert!(!d.events.is_empty(), "{name} produced no event");
        decoded.insert(
            name,
            serde_json::json!({"nativeType": d.native_type, "kinds": d.events.iter().map(|k| {
                let mut v = serde_json::to_value(k).unwrap();
                // Raw payloads are the verbatim line: keep the snapshot readable.
                if let Some(native) = v.get_mut("native") { *native = Value::String("<verbatim>".into()); }
                v
            }).collect::<Vec<_>>()}),
        );
    }
    // Every sample is a kind the CLI really emits: none of them counts as unknown, except the
    // mcp_message control request we never register for (a PreToolUse hook_callback is an
    // approval request: the host's pre-check).
    assert_eq!(decoder.unknown_lines(), 1);
    insta::assert_json_snapshot!("claude_samples_decoded", decoded);
}

#[test]
fn result_with_is_error_but_subtype_success_is_a_failed_turn() {
    let line = samples().into_iter().find(|(n, _)| n == "result/success/is_error").unwrap().1;
    let mut d = ClaudeDecoder::new();
    let out = d.decode(&line);
    let EventKind::TurnCompleted(t) = &out.events[1] else { panic!("{out:?}") };
    assert!(t.is_error);
    assert_eq!(t.terminal_reason.as_deref(), Some("api_error"));
    assert!(d.last_turn().unwrap().is_error);
    assert_eq!(out.control, Some(ControlIn::TurnEnded));
}

#[test]
fn can_use_tool_becomes_an_approval_request_with_its_id() {
    let line = samples().into_iter().find(|(n, _)| n == "control_request/can_use_tool").unwrap().1;
    let out = ClaudeDecoder::new().decode(&line);
    let Some(ControlIn::PermissionAsked { request_id, tool_name, .. }) = &out.control else {
        panic!("{out:?}")
    };
    assert_eq!(request_id, "dd2de678-4e93-4776-bd7e-1aeebbcb2840");
    assert_eq!(tool_name, "Bash");
    let EventKind::ApprovalRequested(a) = &out.events[0] else { panic!() };
    assert_eq!(a.blocked_path.as_deref(), Some("$WORK/ws/bash_stdio/bash_out.txt"));
}

#[test]
fn malformed_and_unknown_lines_become_raw_and_are_counted() {
    let mut d = ClaudeDecoder::new();
    let bad = d.decode("{this is not json");
    assert_eq!(bad.native_type, "invalid");
    assert!(matches!(bad.events[0], EventKind::Raw(_)));
    assert!(matches!(&bad.events[1], EventKind::Error(e) if e.code == ErrorCode::Decode));
    let unknown = d.decode(r#"{"type":"brand_new_kind","x":1}"#);
    assert_eq!(unknown.native_type, "brand_new_kind");
    let EventKind::Raw(raw) = &unknown.events[0] else { panic!() };
    assert_eq!(raw.native.as_str(), r#"{"type":"brand_new_kind","x":1}"#);
    let sub = d.decode(r#"{"type":"system","subtype":"mystery"}"#);
    assert_eq!(sub.native_type, "system/mystery");
    // Valid JSON of a known type but the wrong shape is unknown too, never a panic.
    let broken = d.decode(r#"{"type":"assistant","message":42}"#);
    assert!(matches!(broken.events[0], EventKind::Raw(_)));
    let not_object = d.decode("[1,2,3]");
    assert!(matches!(not_object.events[0], EventKind::Raw(_)));
    assert_eq!(d.unknown_lines(), 5);
}

#[test]
fn partial_tool_input_is_tied_to_its_call_and_not_started_twice() {
    let mut d = ClaudeDecoder::new();
    d.decode(r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"api_message_id":"m1"}"#);
    let start = d.decode(r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Write","input":{}}},"api_message_id":"m1"}"#);
    assert!(
        matches!(&start.events[0], EventKind::ToolCallStarted(c) if c.tool_call_id == "toolu_1")
    );
    let delta = d.decode(r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}},"api_message_id":"m1"}"#);
    assert!(
        matches!(&delta.events[0], EventKind::ToolInputDelta(t) if t.tool_call_id == "toolu_1")
    );
    let whole = d.decode(r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"a":1}}]},"parent_tool_use_id":null}"#);
    assert_eq!(whole.events.len(), 1, "{whole:?}");
    assert!(matches!(&whole.events[0], EventKind::ToolCallCompleted(_)));
}

#[test]
fn turn_cost_is_per_turn_even_though_the_cli_total_accumulates() {
    let mut d = ClaudeDecoder::new();
    let first = d.decode(r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.1126,"usage":{"input_tokens":10,"output_tokens":5}}"#);
    let second = d.decode(r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.2263,"usage":{"input_tokens":10,"output_tokens":5}}"#);
    let cost = |o: &DecodedLine| match &o.events[0] {
        EventKind::Usage(u) => u.cost_usd.unwrap(),
        other => panic!("{other:?}"),
    };
    assert!((cost(&first) - 0.1126).abs() < 1e-9);
    assert!((cost(&second) - 0.1137).abs() < 1e-9);
}

#[test]
fn decoding_never_panics_on_arbitrary_input() {
    let mut d = ClaudeDecoder::new();
    for line in [
        "",
        " ",
        "null",
        "\"str\"",
        "{}",
        r#"{"type":null}"#,
        r#"{"type":"result","usage":"x"}"#,
        r#"{"type":"control_request"}"#,
        "\u{0}",
    ] {
        let out = d.decode(line);
        assert!(!out.events.is_empty(), "{line:?}");
    }
}
