#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Bad input the real CLI cannot be made to produce, from a scripted stand-in for
//! `codex app-server`: a torn JSON-RPC line, a line that is not JSON, an approval request for an
//! item codex never announced, and the process dying in the middle of a turn; and a stand-in for
//! `codex exec` writing a line over the cap.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use nucleic_agents::AgentControl;
use nucleic_agents::codex::{CodexExecOptions, CodexOptions, spawn_codex, spawn_codex_exec};
use nucleic_agents::supervisor::MAX_LINE_BYTES;
use nucleic_protocol::{Decision, ErrorCode, EventKind, RunOutcome};

/// Answers the handshake, plays one turn with bad lines and an approval for an unknown item
/// (writing our reply to `$REPLY_FILE`), then dies in the middle of the next turn.
const FAKE_APP_SERVER: &str = r#"#!/bin/sh
read -r line
echo '{"id":1,"result":{"userAgent":"fake"}}'
read -r line
read -r line
echo '{"id":2,"result":{"thread":{"id":"t1","cwd":"/","cliVersion":"fake-1"},"model":"m","cwd":"/","approvalPolicy":"untrusted"}}'
read -r line
echo '{"id":3,"result":{"turn":{"id":"u1"}}}'
echo '{"method":"turn/started","params":{"threadId":"t1","turn":{"id":"u1"}}}'
echo '{"method":"item/agentMessage/delta","params":{"threadId":"t1","turnId":"u1","itemId":"m1","delta":"hel'
echo 'this is not json'
echo '{"method":"item/fileChange/requestApproval","id":0,"params":{"threadId":"t1","turnId":"u1","itemId":"ghost","reason":null,"grantRoot":null}}'
read -r reply
echo "$reply" > "$REPLY_FILE"
echo '{"method":"serverRequest/resolved","params":{"threadId":"t1","requestId":0}}'
echo '{"method":"turn/completed","params":{"threadId":"t1","turn":{"id":"u1","status":"completed","error":null}}}'
read -r line
echo '{"id":4,"result":{"turn":{"id":"u2"}}}'
echo '{"method":"turn/started","params":{"threadId":"t1","turn":{"id":"u2"}}}'
echo 'fatal: the fake codex dies' >&2
exit 3
"#;

/// `script` as an executable `codex` in a new temporary directory.
fn fake_codex(script: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("codex");
    std::fs::write(&program, script).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, program)
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_lines_unknown_items_and_a_death_mid_turn() {
    let (dir, program) = fake_codex(FAKE_APP_SERVER);
    let reply_file = dir.path().join("reply.json");
    let mut o = CodexOptions::new(program, dir.path().to_owned());
    o.common.env = vec![("REPLY_FILE".into(), reply_file.clone().into())];
    let (handle, mut rx) = spawn_codex(&o).unwrap();
    handle.send_user_text("go").await.unwrap();
    let mut seen = Vec::new();
    let asked = until(&mut rx, &mut seen, |k| matches!(k, EventKind::ApprovalRequested(_))).await;
    let EventKind::ApprovalRequested(ask) = asked else { unreachable!() };
    // Both bad lines are kept raw with a decode error each; the session goes on.
    let decode_errors = seen
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Error(x) if x.code == ErrorCode::Decode))
        .count();
    assert_eq!(decode_errors, 2, "{seen:#?}");
    // The unknown item's approval still reaches a person (codex waits on it), with no diff.
    assert_eq!(ask.tool_name, "apply_patch");
    assert_eq!(ask.tool_call_id.as_deref(), Some("ghost"));
    assert!(ask.input.get("changes").is_none_or(|c| c.is_null() || c == &serde_json::json!([])));
    handle.respond(&ask.request_id, &Decision::Deny { message: "no".into() }).await.unwrap();
    until(&mut rx, &mut seen, is_turn_completed).await;
    let reply: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&reply_file).unwrap()).unwrap();
    assert_eq!(reply, serde_json::json!({"id": 0, "result": {"decision": "decline"}}));
    // The next turn: the process dies in the middle of it.
    handle.send_user_text("again").await.unwrap();
    let finished = exited(&mut rx).await;
    assert_eq!(finished.outcome, RunOutcome::Crashed, "{finished:?}");
    let message = finished.message.unwrap();
    assert!(message.contains("in the middle of a turn"), "{message}");
    assert!(message.contains("fatal: the fake codex dies"), "{message}");
    assert_eq!(finished.unknown_lines, 2);
}

/// A line 100,000 bytes over the cap, then a good one.
const FAKE_EXEC_OVERSIZED: &str = r#"#!/bin/sh
head -c $((64 * 1024 * 1024 + 100000)) /dev/zero | tr '\0' x
echo
echo '{"type":"thread.started","thread_id":"t-after"}'
"#;

#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_keeps_a_preview_of_an_oversized_line_and_says_so() {
    let (dir, program) = fake_codex(FAKE_EXEC_OVERSIZED);
    let mut o = CodexExecOptions::new(program, dir.path().to_owned());
    o.provider_timeout = None;
    let (_handle, mut rx) = spawn_codex_exec(&o).unwrap();
    let mut seen = Vec::new();
    until(&mut rx, &mut seen, |k| matches!(k, EventKind::SessionStarted(_))).await;
    let len = MAX_LINE_BYTES + 100_000;
    let kinds: Vec<&EventKind> = seen.iter().map(|e| &e.kind).collect();
    let [EventKind::Raw(preview), EventKind::Error(error), EventKind::SessionStarted(started)] =
        kinds[..]
    else {
        panic!("expected a preview, an error and the next line: {seen:#?}")
    };
    // Only the preview is kept, not the 64 MiB head, and the line is not decoded as bad JSON.
    let preview = serde_json::to_value(&preview.native).unwrap();
    assert_eq!(preview, serde_json::Value::String("x".repeat(200)));
    assert_eq!(error.code, ErrorCode::Decode);
    assert_eq!(
        error.message,
        format!(
            "agent wrote a {len}-byte line, over the {MAX_LINE_BYTES}-byte cap; kept its start only"
        )
    );
    assert_eq!(started.backend_session_id, "t-after");
    let finished = exited(&mut rx).await;
    assert_eq!(finished.unknown_lines, 0, "{finished:?}");
}
