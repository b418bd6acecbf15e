//! The decoder on Gemini CLI 0.61.0's recorded lines (`tests/fixtures/gemini-acp.samples.jsonl`,
//! the agent→client lines of `acp-agents.samples.txt`).

use super::*;
use crate::acp::GEMINI;
use pretty_assertions::assert_eq;

const SAMPLES: &str = include_str!("../../tests/fixtures/gemini-acp.samples.jsonl");

fn find(needle: &str) -> &'static str {
    SAMPLES
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no sample with {needle}"))
}

/// `native_type: event kinds` of a decoded line.
fn summary(d: &DecodedLine) -> String {
    let kinds: Vec<String> = d
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["type"].as_str().unwrap_or("?").to_owned())
        .collect();
    format!("{}: {}", d.native_type, kinds.join(", "))
}

#[test]
fn every_gemini_sample_decodes_with_nothing_unknown_and_the_snapshot_holds() {
    let mut decoder = AcpDecoder::new(&GEMINI);
    let mut seen = Vec::new();
    for line in SAMPLES.lines() {
        let d = decoder.decode(line);
        assert!(!d.events.is_empty(), "{line}");
        seen.push(summary(&d));
    }
    assert_eq!(decoder.unknown_lines(), 0, "every sample is a line Gemini CLI really writes");
    insta::assert_json_snapshot!("gemini_acp_samples_decoded", seen);
}

#[test]
fn chunks_are_text_and_thinking_and_the_mode_notice_is_hidden() {
    let mut d = AcpDecoder::new(&GEMINI);
    let text = d.decode(find(r#""text": "Hello from the mock model. ""#));
    let [EventKind::AssistantText(block)] = text.events.as_slice() else { panic!("{text:?}") };
    assert_eq!((block.is_partial, block.text.as_str()), (true, "Hello from the mock model. "));
    let thought = d.decode(find("agent_thought_chunk"));
    assert!(matches!(thought.events.as_slice(), [EventKind::Thinking(_)]), "{thought:?}");
    let mode = d.decode(find("[MODE_UPDATE]"));
    assert!(matches!(mode.events.as_slice(), [EventKind::Raw(_)]), "{mode:?}");
}

#[test]
fn a_permission_request_opens_the_card_asks_and_maps_to_write() {
    let mut d = AcpDecoder::new(&GEMINI);
    let asked = d.decode(find("session/request_permission"));
    let [EventKind::ToolCallStarted(call), EventKind::ApprovalRequested(ask)] =
        asked.events.as_slice()
    else {
        panic!("{asked:?}")
    };
    assert_eq!(call.tool_call_id, "write_file__write_file_1796285000616_0");
    assert_eq!((ask.tool_name.as_str(), ask.request_id.as_str()), ("Write", "0"));
    assert_eq!(ask.input["file_path"], "/home/user/project/a.txt");
    assert_eq!(ask.input["content"], "written by mock\n");
    let Some(AcpControl::PermissionAsked { id, options }) = asked.control else { panic!() };
    assert_eq!(id, RequestId::Number(0));
    let kinds: Vec<&str> = options.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["allow_always", "allow_once", "reject_once"]);
    // Its completion closes the same card, once.
    let done = d.decode(find(
        r#""toolCallId": "write_file__write_file_1796285000616_0", "status": "completed""#,
    ));
    let [EventKind::ToolResult(result)] = done.events.as_slice() else { panic!("{done:?}") };
    assert!(!result.is_error && result.content[0]["type"] == "diff");
}

#[test]
fn a_rejected_call_the_agent_says_nothing_about_is_closed_at_the_end_of_the_turn() {
    let mut d = AcpDecoder::new(&GEMINI);
    d.decode(find("session/request_permission"));
    let end = d.decode(find(r#""stopReason": "end_turn""#));
    let [EventKind::ToolResult(closed), EventKind::TurnCompleted(turn)] = end.events.as_slice()
    else {
        panic!("{end:?}")
    };
    assert!(closed.is_error);
    assert_eq!(turn.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (100, 1));
    // Nothing is left open for the next turn.
    let next = d.decode(find(r#""stopReason": "cancelled""#));
    assert!(matches!(next.events.as_slice(), [EventKind::TurnCompleted(_)]), "{next:?}");
}

#[test]
fn file_calls_and_unknown_requests_reach_the_adapter() {
    let mut d = AcpDecoder::new(&GEMINI);
    let read = d.decode(find("fs/read_text_file"));
    assert!(
        matches!(read.control, Some(AcpControl::ReadFile { ref path, .. }) if path == "/home/user/project/a.txt")
    );
    let write = d.decode(find("fs/write_text_file"));
    let Some(AcpControl::WriteFile { content, .. }) = write.control else { panic!("{write:?}") };
    assert_eq!(content, "written by mock\n");
    let ext =
        d.decode(r#"{"jsonrpc":"2.0","id":"u-1","method":"craft/drainMidTurnQueue","params":{}}"#);
    assert_eq!(
        ext.control,
        Some(AcpControl::Unsupported {
            id: RequestId::Text("u-1".into()),
            method: "craft/drainMidTurnQueue".into()
        })
    );
    assert_eq!(d.unknown_lines(), 1);
}

#[test]
fn bad_input_is_kept_raw_and_counted_never_dropped() {
    let mut d = AcpDecoder::new(&GEMINI);
    for line in [
        "not json",
        r#"{"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"brand_new"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"vendor/notice","params":{}}"#,
    ] {
        let out = d.decode(line);
        assert!(matches!(out.events.first(), Some(EventKind::Raw(_))), "{line}: {out:?}");
    }
    assert_eq!(d.unknown_lines(), 5);
    let err = d.decode(find("Incomplete JSON segment"));
    assert!(matches!(err.events.as_slice(), [EventKind::Error(_)]));
    assert!(matches!(
        err.control,
        Some(AcpControl::Response { outcome: Err(RpcError { code: 500, .. }), .. })
    ));
    let started = d.decode(find(r#""id": 2, "result": {"sessionId""#));
    let [EventKind::SessionStarted(s)] = started.events.as_slice() else { panic!("{started:?}") };
    assert_eq!(
        (s.backend_session_id.as_str(), s.model.as_str()),
        ("a90faa20-7331-4fdd-b0bf-1949c03b31e0", "auto")
    );
}

#[test]
fn cut_and_mangled_samples_never_panic_and_always_give_an_event() {
    // A small deterministic stand-in for the fuzz campaign (kept light: it shares the cores
    // with the supervisor's timing tests): prefix cuts of every sample, and each sample with
    // one character replaced by a JSON-significant one, at spread positions.
    let mut d = AcpDecoder::new(&GEMINI);
    for line in SAMPLES.lines() {
        let cuts = line.char_indices().map(|(i, _)| &line[..i]);
        for cut in cuts.step_by(61) {
            assert!(!d.decode(cut).events.is_empty(), "{cut}");
        }
        for (i, _) in line.char_indices().step_by(37) {
            for b in ['"', '}'] {
                let mut mangled = line.to_owned();
                let end = i + mangled[i..].chars().next().map_or(0, char::len_utf8);
                mangled.replace_range(i..end, &b.to_string());
                assert!(!d.decode(&mangled).events.is_empty(), "{mangled}");
            }
        }
    }
}

#[test]
fn qwen_usage_rides_on_empty_chunks_and_is_the_turns_when_the_result_has_none() {
    // Qwen Code 0.24.4's lines (`acp-agents.samples.txt`): the empty chunk closing each model
    // reply, twice in a turn with a tool call, then the result without `usage`.
    let chunk = r#"{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}, "_meta": {"usage": {"inputTokens": 100, "outputTokens": 3, "totalTokens": 103, "thoughtTokens": 0, "cachedReadTokens": 7}, "durationMs": 1503}}}}"#;
    let result = r#"{"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn", "_meta": {"qwen.branchPoint": {"assistantRecordUuid": "a", "checkpointUuid": "c"}}}}"#;
    let mut d = AcpDecoder::new(&crate::acp::QWEN);
    for _ in 0..2 {
        let empty = d.decode(chunk);
        assert!(
            !empty.events.iter().any(|e| matches!(e, EventKind::AssistantText(_))),
            "no empty text: {empty:?}"
        );
    }
    let end = d.decode(result);
    let Some(EventKind::TurnCompleted(turn)) = end.events.last() else { panic!("{end:?}") };
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (200, 6));
    assert_eq!(turn.usage.cached_input_tokens, 14);
    // The next turn starts from nothing.
    let end = d.decode(&result.replace(r#""id": 3"#, r#""id": 4"#));
    let Some(EventKind::TurnCompleted(turn)) = end.events.last() else { panic!("{end:?}") };
    assert_eq!(turn.usage.input_tokens, 0);
}
