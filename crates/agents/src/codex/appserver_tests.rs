//! Unit tests of the app-server decoder against the verbatim codex 0.171.0 samples.

use super::*;
use crate::codex::exec::tests::{samples, snapshot_value};
use pretty_assertions::assert_eq;

const SAMPLES: &str = include_str!("../../tests/fixtures/codex-app-server.samples.jsonl");

fn sample(name: &str) -> String {
    samples(SAMPLES).into_iter().find(|(n, _)| n == name).unwrap().1
}

/// A `thread/start` result as codex 0.171.0 sends it (thread fields trimmed).
const THREAD_START_RESULT: &str = r#"{"id":2,"result":{"thread":{"id":"01a22965-bc8c-71e3-9eda-ae414c2133a5","sessionId":"01a22965-bc8c-71e3-9eda-ae414c2133a5","modelProvider":"mock","model":"gpt-5.5","status":{"type":"idle"},"cwd":"/ws","cliVersion":"0.171.0","source":"vscode","turns":[]},"model":"gpt-5.5","modelProvider":"mock","serviceTier":null,"cwd":"/ws","approvalPolicy":"on-request","approvalsReviewer":"user","sandbox":{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":true,"excludeSlashTmp":true},"reasoningEffort":null}}"#;

fn usage_line(turn: &str, total_in: u64, total_out: u64) -> String {
    format!(
        r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"T","turnId":"{turn}","tokenUsage":{{"total":{{"totalTokens":0,"inputTokens":{total_in},"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":{total_out},"reasoningOutputTokens":0}},"last":{{"totalTokens":0,"inputTokens":123,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":45,"reasoningOutputTokens":0}},"modelContextWindow":258400}}}},"emittedAtMs":1}}"#
    )
}

fn turn_started(turn: &str) -> String {
    format!(
        r#"{{"method":"turn/started","params":{{"threadId":"T","turn":{{"id":"{turn}","items":[],"status":"inProgress","error":null}}}}}}"#
    )
}

#[test]
fn every_sample_decodes_to_known_kinds_and_snapshot_holds() {
    let mut decoded = serde_json::Map::new();
    let mut unknown = 0;
    for (name, line) in samples(SAMPLES) {
        let mut decoder = AppServerDecoder::new();
        let d = decoder.decode(&line);
        assert!(!d.events.is_empty(), "{name} produced no event");
        unknown += decoder.unknown_lines();
        decoded.insert(name, snapshot_value(&d));
    }
    assert_eq!(unknown, 0, "every sample is a line codex really writes");
    insta::assert_json_snapshot!("codex_app_server_samples_decoded", decoded);
}

#[test]
fn file_change_approval_takes_the_diff_from_the_started_item() {
    let mut d = AppServerDecoder::new();
    let started = d.decode(&sample("item/started:fileChange:inProgress"));
    assert!(matches!(&started.events[0], EventKind::ToolCallStarted(c) if c.name == "apply_patch"));
    let asked = d.decode(&sample("item/fileChange/requestApproval"));
    let [EventKind::ApprovalRequested(a)] = asked.events.as_slice() else { panic!("{asked:?}") };
    assert_eq!(a.request_id, "0");
    assert_eq!(a.tool_name, "apply_patch");
    assert_eq!(a.tool_call_id.as_deref(), Some("call_c9a48e3a80ad"));
    assert_eq!(a.input["changes"][0]["diff"], "hello from apply_patch\n");
    assert_eq!(a.input["changes"][0]["kind"]["type"], "add");
    assert_eq!(
        asked.control,
        Some(ControlIn::ApprovalAsked {
            request_id: RequestId::Number(0),
            kind: ApprovalKind::FileChange,
            item_id: "call_c9a48e3a80ad".into(),
            thread_id: Some("01a228e0-6019-7ce3-8c9b-c53054e9bfbb".into()),
            turn_id: Some("01a228e0-6033-7350-a718-e9c6d3b93c74".into()),
        })
    );
    // Without the started item the request still reaches the adapter, with no changes.
    let cold = AppServerDecoder::new().decode(&sample("item/fileChange/requestApproval"));
    let EventKind::ApprovalRequested(a) = &cold.events[0] else { panic!() };
    assert_eq!(a.input, serde_json::json!({"changes": []}));
}

#[test]
fn command_approval_carries_command_cwd_and_reason() {
    let out = AppServerDecoder::new().decode(&sample("item/commandExecution/requestApproval"));
    let EventKind::ApprovalRequested(a) = &out.events[0] else { panic!() };
    assert_eq!(a.tool_name, "shell");
    assert_eq!(a.input["command"], "/bin/bash -lc 'touch $WORK/outside_approval_cmd_accept.txt'");
    assert_eq!(a.input["cwd"], "$WORK/ws_app_approval_cmd_accept");
    assert_eq!(a.description.as_deref(), Some("need to write outside workspace"));
    assert!(matches!(
        &out.control,
        Some(ControlIn::ApprovalAsked {
            request_id: RequestId::Number(0),
            kind: ApprovalKind::Command,
            ..
        })
    ));
    let resolved = AppServerDecoder::new().decode(&sample("serverRequest/resolved"));
    assert_eq!(
        resolved.control,
        Some(ControlIn::RequestResolved { request_id: RequestId::Number(0) })
    );
}

#[test]
fn thread_start_result_starts_the_session_once() {
    let mut d = AppServerDecoder::new();
    let out = d.decode(THREAD_START_RESULT);
    let EventKind::SessionStarted(s) = &out.events[0] else { panic!("{out:?}") };
    assert_eq!(s.backend_session_id, "01a22965-bc8c-71e3-9eda-ae414c2133a5");
    assert_eq!((s.cwd.as_str(), s.model.as_str()), ("/ws", "gpt-5.5"));
    assert_eq!(s.permission_mode.as_deref(), Some("on-request"));
    assert_eq!(s.agent_version.as_deref(), Some("0.171.0"));
    let Some(ControlIn::Response { id: RequestId::Number(2), outcome: Ok(result) }) = &out.control
    else {
        panic!()
    };
    assert_eq!(result["thread"]["id"], "01a22965-bc8c-71e3-9eda-ae414c2133a5");
    // The thread/started notification of the same thread adds nothing.
    let again = r#"{"method":"thread/started","params":{"thread":{"id":"01a22965-bc8c-71e3-9eda-ae414c2133a5","cwd":"/ws"}}}"#;
    assert!(matches!(d.decode(again).events[0], EventKind::Raw(_)));
    assert_eq!(d.unknown_lines(), 0);
}

#[test]
fn error_responses_are_protocol_errors_with_their_id() {
    let out = AppServerDecoder::new().decode(&sample("error-response:no active turn to interrupt"));
    assert_eq!(out.native_type, "response/error");
    assert!(matches!(&out.events[0], EventKind::Error(e) if e.code == ErrorCode::Protocol));
    assert_eq!(
        out.control,
        Some(ControlIn::Response {
            id: RequestId::Number(7),
            outcome: Err(RpcError { code: -32600, message: "no active turn to interrupt".into() })
        })
    );
    let text_id = AppServerDecoder::new().decode(r#"{"id":"abc","result":{}}"#);
    assert!(
        matches!(&text_id.control, Some(ControlIn::Response { id: RequestId::Text(t), .. }) if t == "abc")
    );
}

#[test]
fn turn_usage_is_the_thread_total_spent_during_the_turn() {
    let mut d = AppServerDecoder::new();
    // thread/resume reports the restored total (tagged with the previous turn) before the turn.
    d.decode(&usage_line("old", 246, 90));
    let started = d.decode(&turn_started("U"));
    assert_eq!(
        started.control,
        Some(ControlIn::TurnStarted { thread_id: Some("T".into()), turn_id: "U".into() })
    );
    assert_eq!(d.turn_id(), Some("U"));
    d.decode(&usage_line("U", 369, 135));
    d.decode(&usage_line("U", 492, 180));
    let done = d.decode(&sample("turn/completed"));
    let EventKind::Usage(u) = &done.events[0] else { panic!() };
    assert_eq!((u.input_tokens, u.output_tokens), (246, 90));
    let EventKind::TurnCompleted(t) = &done.events[1] else { panic!() };
    assert_eq!(t.result.as_deref(), None, "no agent message was decoded in this turn");
    assert_eq!(
        (t.terminal_reason.as_deref(), t.duration_ms, t.is_error),
        (Some("completed"), Some(763), false)
    );
    assert_eq!(done.control, Some(ControlIn::TurnEnded { status: "completed".into() }));
    assert_eq!(d.turn_id(), None);
}

#[test]
fn streamed_output_stands_in_for_a_null_aggregated_output() {
    let mut d = AppServerDecoder::new();
    let started = d.decode(&sample("item/started:commandExecution:inProgress"));
    assert_eq!(started.events.len(), 2);
    let delta = r#"{"method":"item/commandExecution/outputDelta","params":{"threadId":"T","turnId":"U","itemId":"call_d6a366326a74","delta":"made it\n"}}"#;
    assert!(matches!(d.decode(delta).events[0], EventKind::Raw(_)));
    let done = d.decode(&sample("item/completed:commandExecution:completed"));
    let [EventKind::ToolResult(r)] = done.events.as_slice() else { panic!("{done:?}") };
    assert_eq!(r.content, Value::String("Exit code: 0\nOutput:\nmade it\n".into()));
    assert!(!r.is_error);
}

#[test]
fn errors_with_will_retry_are_retries_and_the_rest_api_errors() {
    let retry = AppServerDecoder::new().decode(&sample("error"));
    let EventKind::ApiRetry(r) = &retry.events[0] else { panic!("{retry:?}") };
    assert_eq!((r.attempt, r.max_retries, r.error.as_str()), (1, 1, "stream_disconnected"));
    let fatal = r#"{"method":"error","params":{"error":{"message":"exceeded retry limit, last status: 429 Too Many Requests","codexErrorInfo":{"responseTooManyFailedAttempts":{"httpStatusCode":429}},"additionalDetails":null},"willRetry":false,"threadId":"T","turnId":"U"}}"#;
    let out = AppServerDecoder::new().decode(fatal);
    assert!(
        matches!(&out.events[0], EventKind::Error(e) if e.code == ErrorCode::ApiError && e.http_status == Some(429))
    );
    let failed = r#"{"method":"turn/completed","params":{"threadId":"T","turn":{"id":"U","items":[],"status":"failed","error":{"message":"boom","codexErrorInfo":"internalServerError","additionalDetails":null}}}}"#;
    let out = AppServerDecoder::new().decode(failed);
    let EventKind::TurnCompleted(t) = &out.events[1] else { panic!() };
    assert!(t.is_error);
    assert_eq!(t.result.as_deref(), Some("boom"));
}

#[test]
fn unsupported_server_requests_must_be_answered() {
    let mut d = AppServerDecoder::new();
    let out =
        d.decode(r#"{"method":"item/tool/requestUserInput","id":3,"params":{"questions":[]}}"#);
    assert!(matches!(out.events[0], EventKind::Raw(_)));
    assert_eq!(
        out.control,
        Some(ControlIn::Unsupported {
            request_id: RequestId::Number(3),
            method: "item/tool/requestUserInput".into()
        })
    );
    assert_eq!(d.unknown_lines(), 1);
}

#[test]
fn malformed_and_unknown_lines_become_raw_and_are_counted() {
    let mut d = AppServerDecoder::new();
    let bad = d.decode(r#"{"jsonrpc":"2.0","id":99,"method":"thread/start","#);
    assert_eq!(bad.native_type, "invalid");
    assert!(matches!(&bad.events[1], EventKind::Error(e) if e.code == ErrorCode::Decode));
    let unknown = d.decode(r#"{"method":"thread/hologram","params":{}}"#);
    assert_eq!(unknown.native_type, "thread/hologram");
    assert_eq!(unknown.events.len(), 1);
    let item =
        d.decode(r#"{"method":"item/completed","params":{"item":{"type":"hologram","id":"h"}}}"#);
    assert_eq!(item.native_type, "item/completed:hologram");
    let wrong = d.decode(r#"{"method":"item/started","params":{"item":7}}"#);
    assert!(matches!(wrong.events[0], EventKind::Raw(_)));
    assert_eq!(wrong.events.len(), 1);
    let neither = d.decode(r#"{"jsonrpc":"2.0"}"#);
    assert_eq!(neither.native_type, "unknown");
    assert_eq!(d.unknown_lines(), 5);
}

#[test]
fn decoding_never_panics_on_arbitrary_input() {
    let mut d = AppServerDecoder::new();
    for line in [
        "",
        "null",
        "[]",
        "{}",
        r#"{"id":null,"result":null}"#,
        r#"{"id":1.5,"result":{}}"#,
        r#"{"id":-1,"error":{}}"#,
        r#"{"method":"turn/completed"}"#,
        r#"{"method":"turn/completed","params":{"turn":{"id":"U","status":7}}}"#,
        r#"{"method":"item/fileChange/requestApproval","id":0,"params":"x"}"#,
        r#"{"method":"error","params":{}}"#,
        r#"{"method":7}"#,
        "\u{0}",
    ] {
        let out = d.decode(line);
        assert!(!out.events.is_empty(), "{line:?}");
    }
}
