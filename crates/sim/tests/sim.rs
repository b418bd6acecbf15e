//! End-to-end tests of the `fake-claude` binary over real pipes, in a temp dir.

// Test helpers outside #[test] fns may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{BIN, HOST_ARGS, Sim, is_can_use_tool, tool_result};

#[test]
fn write_allowed_creates_the_file() {
    let mut sim = Sim::start(&[], None);
    sim.control("req_init", json!({"subtype": "initialize", "hooks": null}));
    let init = sim.last_until_type("control_response");
    assert_eq!(init["response"]["response"]["claude_code_version"], "0.1.0-sim");
    sim.prompt("write notes.txt containing hi");
    let lines = sim.until(is_can_use_tool);
    assert_eq!(lines[0]["subtype"], "init");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "assistant" && l["message"]["content"][0]["type"] == "tool_use")
    );
    let req = lines.last().unwrap().clone();
    assert_eq!(req["request"]["tool_name"], "Write");
    assert_eq!(
        req["request"]["input"]["file_path"],
        sim.path("notes.txt").to_string_lossy().as_ref()
    );
    assert_eq!(req["request"]["permission_suggestions"][0]["mode"], "acceptEdits");
    sim.answer(&req, json!({"behavior": "allow"}));
    let lines = sim.until_type("result");
    let tr = tool_result(&lines);
    assert!(tr["message"]["content"][0].get("is_error").is_none());
    assert_eq!(tr["tool_use_result"]["type"], "create");
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Done.");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(std::fs::read_to_string(sim.path("notes.txt")).unwrap(), "hi\n");
    let (_, code, _) = sim.finish();
    assert_eq!(code, 0);
}

#[test]
fn allow_with_updated_input_writes_the_edited_content() {
    let mut sim = Sim::start(&[], None);
    sim.prompt("create hello.txt containing hello");
    let req = sim.until(is_can_use_tool).pop().unwrap();
    let mut input = req["request"]["input"].clone();
    input["content"] = json!("hello (rewritten by orchestrator)\n");
    sim.answer(&req, json!({"behavior": "allow", "updatedInput": input}));
    let tr = tool_result(&sim.until_type("result"));
    let text = tr["message"]["content"][0]["content"].as_str().unwrap();
    assert!(
        text.ends_with(" The user modified your proposed content before accepting it."),
        "{text}"
    );
    assert_eq!(tr["tool_use_result"]["userModified"], true);
    assert_eq!(
        std::fs::read_to_string(sim.path("hello.txt")).unwrap(),
        "hello (rewritten by orchestrator)\n"
    );
}

#[test]
fn deny_leaves_no_file_and_reports_the_denial() {
    let mut sim = Sim::start(&[], None);
    sim.prompt("write secret.txt");
    let req = sim.until(is_can_use_tool).pop().unwrap();
    sim.answer(&req, json!({"behavior": "deny", "message": "orchestrator says no"}));
    let lines = sim.until_type("result");
    let block = &tool_result(&lines)["message"]["content"][0];
    assert_eq!(block["content"], "orchestrator says no");
    assert_eq!(block["is_error"], true);
    let result = lines.last().unwrap();
    assert_eq!(result["is_error"], false);
    assert_eq!(result["permission_denials"][0]["tool_name"], "Write");
    assert!(result["result"].as_str().unwrap().starts_with("Done, with 1 denied."));
    assert!(!sim.path("secret.txt").exists());
    assert_eq!(sim.finish().1, 0);
}

#[test]
fn deny_with_interrupt_aborts_the_turn() {
    let mut sim = Sim::start(&[], None);
    sim.prompt("write a.txt then run echo never");
    let req = sim.until(is_can_use_tool).pop().unwrap();
    sim.answer(&req, json!({"behavior": "deny", "message": "stop", "interrupt": true}));
    let lines = sim.until_type("result");
    let block = &tool_result(&lines)["message"]["content"][0];
    assert!(block["content"].as_str().unwrap().starts_with("The user doesn't want to proceed"));
    assert!(lines.iter().any(
        |l| l["message"]["content"][0]["text"] == "[Request interrupted by user for tool use]"
    ));
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "aborted_tools");
    assert!(!lines.iter().any(is_can_use_tool));
    assert_eq!(sim.finish().1, 1);
}

#[test]
fn malformed_stdin_line_exits_1_without_result() {
    let mut sim = Sim::start(&[], None);
    sim.send_raw("{this is not json");
    let (rest, code, err) = sim.finish();
    assert_eq!(code, 1);
    assert!(rest.iter().all(|l| l["type"] != "result"));
    assert!(
        err.contains("Error parsing streaming input line (type=unknown, 17 chars): SyntaxError"),
        "{err}"
    );

    let mut sim = Sim::start(&[], None);
    sim.send(&json!({"type": "user"}));
    let (_, code, err) = sim.finish();
    assert_eq!(code, 1);
    assert!(err.contains("Error: Expected message role 'user', got 'undefined'"), "{err}");
}

#[test]
fn interrupt_during_a_slow_turn_then_continue() {
    let mut sim = Sim::start(&["--include-partial-messages"], None);
    sim.prompt("slow: tell me a long story about the sea and the sky and the wind");
    sim.until(|l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "text_delta");
    sim.control("req_int", json!({"subtype": "interrupt"}));
    let lines = sim.until_type("result");
    let ack = lines.iter().find(|l| l["type"] == "control_response").unwrap();
    assert_eq!(ack["response"]["request_id"], "req_int");
    assert_eq!(ack["response"]["response"]["still_queued"], json!([]));
    let aborted = lines.iter().find(|l| l["type"] == "assistant").unwrap();
    assert_eq!(aborted["aborted"], true);
    assert!(
        lines.iter().any(|l| l["message"]["content"][0]["text"] == "[Request interrupted by user]")
    );
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["terminal_reason"], "aborted_streaming");

    sim.prompt("hello again");
    let result = sim.last_until_type("result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(sim.finish().1, 0);
}

#[test]
fn two_turns_share_the_session_and_rules() {
    let sid = "4a0e0f5e-3c2b-4c5e-9f5e-0c6c2a1d9b11";
    let mut sim = Sim::start(&["--session-id", sid, "--model", "m-test"], None);
    sim.prompt("write one.txt");
    let mut first = sim.until(is_can_use_tool);
    let req = first.last().unwrap().clone();
    sim.answer(
        &req,
        json!({"behavior": "allow", "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Write"}], "behavior": "allow", "destination": "session"}]}),
    );
    first.extend(sim.until_type("result"));
    sim.prompt("write two.txt");
    let second = sim.until_type("result");
    assert!(!second.iter().any(is_can_use_tool), "asked again: {second:#?}");
    for lines in [&first, &second] {
        assert_eq!(lines[0]["subtype"], "init");
        assert_eq!(lines[0]["model"], "m-test");
        assert_eq!(lines.last().unwrap()["session_id"], sid);
    }
    assert!(sim.path("one.txt").exists() && sim.path("two.txt").exists());
    assert_eq!(sim.finish().1, 0);
}

#[test]
fn control_requests_and_modes() {
    let mut sim = Sim::start(&[], None);
    sim.control("r1", json!({"subtype": "definitely_not_a_subtype"}));
    let err = sim.last_until_type("control_response");
    assert_eq!(err["response"]["subtype"], "error");
    assert_eq!(
        err["response"]["error"],
        "Unsupported control request subtype: definitely_not_a_subtype"
    );
    assert_eq!(err["response"]["error_code"], "unsupported_request");
    sim.control("r2", json!({"subtype": "set_permission_mode", "mode": "acceptEdits"}));
    assert_eq!(
        sim.last_until_type("control_response")["response"]["response"]["mode"],
        "acceptEdits"
    );
    let status = sim.until_type("system").pop().unwrap();
    assert_eq!(status["permissionMode"], "acceptEdits");
    sim.control("r3", json!({"subtype": "mcp_status"}));
    assert_eq!(
        sim.last_until_type("control_response")["response"]["response"]["mcpServers"],
        json!([])
    );
    sim.prompt("write a.txt containing x then edit a.txt: x -> y");
    let lines = sim.until_type("result");
    assert!(!lines.iter().any(is_can_use_tool));
    assert_eq!(std::fs::read_to_string(sim.path("a.txt")).unwrap(), "y\n");
    assert_eq!(sim.finish().1, 0);
}

#[test]
fn eof_while_permission_pending_denies_and_exits_0() {
    let mut sim = Sim::start(&[], None);
    sim.prompt("run touch x.txt");
    let req = sim.until(is_can_use_tool).pop().unwrap();
    assert!(req["request"]["blocked_path"].is_string());
    let (rest, code, _) = sim.finish();
    assert_eq!(code, 0);
    let block = &tool_result(&rest)["message"]["content"][0];
    assert_eq!(
        block["content"],
        "Tool permission request failed: AbortError: Tool permission stream closed before response received"
    );
    assert_eq!(rest.last().unwrap()["type"], "result");
}

#[test]
fn bash_runs_in_cwd_without_an_approver_in_bypass_mode() {
    let mut sim = Sim::start(&["--permission-mode", "bypassPermissions"], None);
    sim.prompt("run echo hi > out.txt && echo ok");
    let lines = sim.until_type("result");
    assert_eq!(tool_result(&lines)["message"]["content"][0]["content"], "ok");
    assert_eq!(std::fs::read_to_string(sim.path("out.txt")).unwrap(), "hi\n");
    sim.prompt("write ../escape.txt");
    let lines = sim.until_type("result");
    assert_eq!(tool_result(&lines)["message"]["content"][0]["is_error"], true);
}

#[test]
fn fault_crash_mid_turn() {
    let mut sim = Sim::start(&[], Some("crash_mid_turn"));
    sim.prompt("hello");
    sim.until_type("assistant");
    let (rest, code, _) = sim.finish();
    assert_eq!(code, 3);
    assert!(rest.iter().all(|l| l["type"] != "result"));
}

#[test]
fn fault_api_error() {
    let mut sim = Sim::start(&[], Some("api_error"));
    sim.prompt("hello");
    let lines = sim.until_type("result");
    assert!(lines.iter().any(|l| l["subtype"] == "api_retry" && l["error_status"] == 500));
    let synthetic = lines.iter().find(|l| l["type"] == "assistant").unwrap();
    assert_eq!(synthetic["is_api_error_message"], true);
    assert_eq!(synthetic["message"]["model"], "<synthetic>");
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "api_error");
    assert_eq!(result["api_error_status"], 500);
    assert!(result["result"].as_str().unwrap().starts_with("API Error: 500 Internal server error"));
    assert_eq!(sim.finish().1, 1);
}

#[test]
fn fault_unknown_lines_and_malformed_stdout() {
    let mut sim = Sim::start(&[], Some("unknown_lines,malformed_stdout"));
    sim.prompt("hello");
    let lines = sim.until_type("result");
    assert_eq!(lines[0]["unparsed"], "{this is not json");
    assert!(lines.iter().any(|l| l["type"] == "brand_new_kind"));
    assert!(lines.iter().any(|l| l["type"] == "system" && l["subtype"] == "mystery"));
    assert_eq!(lines.last().unwrap()["is_error"], false);
    assert_eq!(sim.finish().1, 0);
}

#[test]
fn cli_checks_like_the_real_one() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0.1.0 (Nucleic simulated agent)");
    let out = Command::new(BIN)
        .args(["-p", "--output-format", "stream-json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("requires --verbose"));
    let out = Command::new(BIN)
        .args(HOST_ARGS)
        .args(["--resume", "missing"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("No conversation found with session ID: missing")
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["subtype"], "error_during_execution");
    let out = Command::new(BIN).args(HOST_ARGS).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn interrupt_while_permission_pending_abandons_the_call() {
    let mut sim = Sim::start(&[], None);
    sim.prompt("write never.txt");
    let req = sim.until(is_can_use_tool).pop().unwrap();
    sim.control("req_int", json!({"subtype": "interrupt"}));
    let lines = sim.until_type("result");
    assert_eq!(lines.last().unwrap()["terminal_reason"], "aborted_tools");
    // A late answer for the abandoned request is ignored.
    sim.answer(&req, json!({"behavior": "allow"}));
    sim.prompt("hi");
    assert_eq!(sim.last_until_type("result")["is_error"], false);
    assert!(!sim.path("never.txt").exists());
}

#[test]
fn fault_hang_still_answers_control_requests() {
    let mut sim = Sim::start(&[], Some("hang"));
    sim.prompt("hello");
    sim.until(|l| l["subtype"] == "init");
    sim.control("req_int", json!({"subtype": "interrupt"}));
    assert_eq!(sim.last_until_type("control_response")["response"]["subtype"], "success");
    assert!(sim.lines.recv_timeout(Duration::from_millis(200)).is_err());
    assert!(sim.child.try_wait().unwrap().is_none());
}

#[test]
fn library_entry_point_runs_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = HOST_ARGS.iter().map(|s| (*s).to_owned()).collect();
    let input =
        b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n".to_vec();
    let mut out = Vec::new();
    let code = nucleic_sim::run_with_faults(
        &args,
        std::io::Cursor::new(input),
        &mut out,
        dir.path(),
        Default::default(),
    );
    assert_eq!(code, 0);
    let lines: Vec<Value> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines[0]["subtype"], "init");
    assert!(
        lines[1]["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Simulated agent here. You said: hi.")
    );
    assert_eq!(lines.last().unwrap()["type"], "result");
}

#[test]
fn stream_n_streams_paced_text_deltas_and_can_be_interrupted() {
    let mut sim = Sim::start(&["--include-partial-messages"], None);
    let started = std::time::Instant::now();
    sim.prompt("stream 8");
    let lines = sim.until_type("result");
    let deltas = lines
        .iter()
        .filter(|l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "text_delta")
        .count();
    assert_eq!(deltas, 8);
    let paced = nucleic_sim::stream::STREAM_DELTA_DELAY * u32::try_from(deltas - 1).unwrap();
    assert!(started.elapsed() >= paced, "{:?} < {paced:?}", started.elapsed());
    let text = lines.iter().find(|l| l["type"] == "assistant").unwrap();
    assert!(text["message"]["content"][0]["text"].as_str().unwrap().starts_with("1. Reading"));
    assert_eq!(lines.last().unwrap()["subtype"], "success");

    // `fast`: many deltas, no pauses.
    let started = std::time::Instant::now();
    sim.prompt("stream 2000 fast");
    let lines = sim.until_type("result");
    let deltas = lines
        .iter()
        .filter(|l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "text_delta")
        .count();
    assert_eq!(deltas, 2000);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());

    // A long one stops at an interrupt.
    sim.prompt("stream 100000");
    sim.until(|l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "text_delta");
    sim.control("req_int", json!({"subtype": "interrupt"}));
    let result = sim.last_until_type("result");
    assert_eq!(result["terminal_reason"], "aborted_streaming");
    // Like the real CLI, the exit code follows the last result (an error here).
    let (_, code, stderr) = sim.finish();
    assert_eq!(code, 1, "{stderr}");
}
