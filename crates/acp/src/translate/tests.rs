//! The translation of each kind of event, and the permission options' decisions.

use super::*;
use nucleic_protocol::{ApprovalRequested, ApprovalResolved, TextBlock, ToolResult};

fn block(partial: bool, id: &str, text: &str) -> TextBlock {
    TextBlock { is_partial: partial, message_id: id.into(), text: text.into() }
}

fn call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall { tool_call_id: id.into(), name: name.into(), input, parent_tool_call_id: None }
}

fn wire(updates: Vec<acp::SessionUpdate>) -> Vec<Value> {
    updates.into_iter().map(|u| serde_json::to_value(u).unwrap()).collect()
}

#[test]
fn a_message_streamed_in_parts_is_not_sent_again_whole() {
    let mut t = Translator::default();
    let parts = wire(t.updates(&EventKind::AssistantText(block(true, "m1", "Hel"))));
    assert_eq!(parts[0]["sessionUpdate"], "agent_message_chunk");
    assert_eq!(parts[0]["content"]["text"], "Hel");
    assert!(t.updates(&EventKind::AssistantText(block(false, "m1", "Hello"))).is_empty());
    // A message that came whole is sent whole; thoughts are thought chunks.
    let whole = wire(t.updates(&EventKind::AssistantText(block(false, "m2", "Done."))));
    assert_eq!(whole[0]["content"]["text"], "Done.");
    let thought = wire(t.updates(&EventKind::Thinking(block(false, "m2", "hmm"))));
    assert_eq!(thought[0]["sessionUpdate"], "agent_thought_chunk");
}

#[test]
fn an_edit_is_a_tool_call_with_its_diff_and_its_result_completes_it() {
    let mut t = Translator::default();
    let input = json!({"file_path": "/w/a.txt", "old_string": "a", "new_string": "b"});
    let started = wire(t.updates(&EventKind::ToolCallStarted(call("t1", "Edit", input))));
    let c = &started[0];
    assert_eq!(c["sessionUpdate"], "tool_call");
    assert_eq!((c["toolCallId"].as_str(), c["kind"].as_str()), (Some("t1"), Some("edit")));
    // Pending is the default, which the SDK leaves out.
    assert!(c.get("status").is_none_or(|s| s == "pending"), "{c}");
    assert_eq!(c["locations"][0]["path"], "/w/a.txt");
    assert_eq!(c["content"][0]["type"], "diff");
    assert_eq!(
        (c["content"][0]["oldText"].as_str(), c["content"][0]["newText"].as_str()),
        (Some("a"), Some("b"))
    );
    let result = ToolResult { tool_call_id: "t1".into(), content: json!("ok"), is_error: false };
    let done = wire(t.updates(&EventKind::ToolResult(result)));
    assert_eq!(done[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(done[0]["status"], "completed");
    assert_eq!(done[0]["content"][0]["content"]["text"], "ok");
    let failed = ToolResult {
        tool_call_id: "t2".into(),
        content: json!([{"type": "text", "text": "no"}]),
        is_error: true,
    };
    assert_eq!(wire(t.updates(&EventKind::ToolResult(failed)))[0]["status"], "failed");
}

#[test]
fn a_resolution_moves_the_tool_call_and_todo_write_is_a_plan() {
    let mut t = Translator::default();
    let asked = ApprovalRequested {
        request_id: "r1".into(),
        tool_call_id: Some("t1".into()),
        tool_name: "Bash".into(),
        input: json!({"command": "ls"}),
        description: None,
        blocked_path: None,
        risk: None,
        risk_reasons: Vec::new(),
    };
    assert!(t.updates(&EventKind::ApprovalRequested(asked)).is_empty());
    let resolved = ApprovalResolved {
        request_id: "r1".into(),
        decision: DecisionKind::Deny,
        by: "cockpit".into(),
        updated_input: None,
        message: None,
        mode: None,
    };
    let moved = wire(t.updates(&EventKind::ApprovalResolved(resolved)));
    assert_eq!(
        (moved[0]["toolCallId"].as_str(), moved[0]["status"].as_str()),
        (Some("t1"), Some("failed"))
    );
    let todos = json!({"todos": [
        {"content": "read", "status": "completed"}, {"content": "fix", "status": "in_progress"},
        {"content": "test", "status": "pending"}]});
    let plan = wire(t.updates(&EventKind::ToolCallStarted(call("t9", "TodoWrite", todos))));
    assert_eq!(plan[0]["sessionUpdate"], "plan");
    let statuses: Vec<&str> = plan[0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "in_progress", "pending"]);
    let result = ToolResult { tool_call_id: "t9".into(), content: json!("ok"), is_error: false };
    assert!(
        t.updates(&EventKind::ToolResult(result)).is_empty(),
        "a plan's result is no tool call"
    );
}

#[test]
fn every_option_offered_decides_and_nothing_else_does() {
    for option in permission_options() {
        assert!(decision_for(&option.option_id.0).is_some(), "{:?}", option.option_id);
    }
    assert_eq!(decision_for("allow"), Some(Decision::Allow));
    assert!(matches!(decision_for("deny-and-stop"), Some(Decision::DenyAndStop { .. })));
    assert_eq!(decision_for("allow-everything"), None);
    assert_eq!(decision_for(""), None);
}

#[test]
fn long_output_is_cut_saying_so() {
    let long = "x".repeat(MAX_OUTPUT_CHARS + 10);
    let cut = output_text(&json!(long));
    assert!(cut.ends_with("(cut; the whole output is in the Nucleic transcript)"));
    assert!(cut.len() < MAX_OUTPUT_CHARS + 100);
}

fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z_]{0,8}".prop_map(Value::from),
        Just(json!("file_path")),
        Just(json!("/w/a.txt")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("file_path".to_owned()),
                    Just("old_string".to_owned()),
                    Just("new_string".to_owned()),
                    Just("content".to_owned()),
                    Just("command".to_owned()),
                    Just("edits".to_owned()),
                    Just("todos".to_owned()),
                    Just("status".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// Whatever input an agent gives a tool, its call, completion and result translate
    /// without a panic into updates that serialize.
    #[test]
    fn any_tool_input_translates(
        input in json_value(),
        output in json_value(),
        name in proptest::prop_oneof![
            proptest::prelude::Just("Write"), proptest::prelude::Just("Edit"),
            proptest::prelude::Just("MultiEdit"), proptest::prelude::Just("TodoWrite"),
            proptest::prelude::Just("Bash"), proptest::prelude::Just("mcp__x__y"),
        ],
    ) {
        let mut t = Translator::default();
        let c = call("t1", name, input);
        let mut updates = t.updates(&EventKind::ToolCallStarted(c.clone()));
        updates.extend(t.updates(&EventKind::ToolCallCompleted(c)));
        let result = ToolResult { tool_call_id: "t1".into(), content: output, is_error: false };
        updates.extend(t.updates(&EventKind::ToolResult(result)));
        for update in updates {
            serde_json::to_string(&update).unwrap();
        }
    }
}

#[test]
fn codex_tools_have_their_kinds() {
    assert_eq!(tool_kind("shell"), acp::ToolKind::Execute);
    assert_eq!(tool_kind("apply_patch"), acp::ToolKind::Edit);
    assert_eq!(tool_kind("Bash"), acp::ToolKind::Execute);
    assert_eq!(tool_kind("mcp__x__y"), acp::ToolKind::Other);
}
