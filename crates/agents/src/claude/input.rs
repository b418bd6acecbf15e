//! Lines for the CLI's stdin, built from typed values and validated before they are written: one
//! malformed line makes Claude Code exit at once, mid-turn or not.

use nucleic_protocol::Decision;
use serde_json::{Value, json};

use crate::error::AgentError;

/// Permission modes the CLI accepts for `--permission-mode` and `set_permission_mode`.
pub const PERMISSION_MODES: &[&str] =
    &["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto", "manual"];

/// A user turn.
pub fn user_text(text: &str) -> Result<String, AgentError> {
    if text.trim().is_empty() {
        return Err(AgentError::InvalidInput("empty prompt".into()));
    }
    encode(&json!({
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
    }))
}

/// A host → CLI control request.
pub fn control_request(request_id: &str, request: Value) -> Result<String, AgentError> {
    encode(&json!({"type": "control_request", "request_id": request_id, "request": request}))
}

/// The answer to a `can_use_tool` request.
pub fn permission_reply(
    request_id: &str,
    tool_name: &str,
    decision: &Decision,
) -> Result<String, AgentError> {
    decision.validate().map_err(AgentError::InvalidInput)?;
    let response = match decision {
        Decision::Allow => json!({"behavior": "allow"}),
        Decision::AllowEdited { updated_input } => {
            json!({"behavior": "allow", "updatedInput": updated_input})
        }
        Decision::AllowAlways { .. } => json!({
            "behavior": "allow",
            "updatedPermissions": [{
                "type": "addRules",
                "rules": [{"toolName": tool_name}],
                "behavior": "allow",
                "destination": "session",
            }],
        }),
        Decision::Deny { message } => json!({"behavior": "deny", "message": message}),
        Decision::DenyAndStop { message } => {
            json!({"behavior": "deny", "message": message, "interrupt": true})
        }
        // The session controller switches the mode first; the CLI is then told plain allow.
        Decision::ApprovePlan { .. } => json!({"behavior": "allow"}),
        Decision::Answer { .. } => {
            return Err(AgentError::InvalidInput(
                "answers reach the CLI as the tool's edited input (the session builds it)".into(),
            ));
        }
    };
    control_success(request_id, response)
}

/// The `initialize` request that registers one PreToolUse hook for every tool (`matcher` null):
/// the CLI then asks the host about every tool call, including those its own rules allow.
pub fn initialize_with_hooks(request_id: &str) -> Result<String, AgentError> {
    control_request(
        request_id,
        json!({
            "subtype": "initialize",
            "hooks": {"PreToolUse": [{"matcher": null, "hookCallbackIds": [PRE_TOOL_HOOK]}]},
        }),
    )
}

/// The callback id of the host's PreToolUse hook.
pub const PRE_TOOL_HOOK: &str = "nucleic_pre_tool";

/// What the host says to a PreToolUse hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookVerdict {
    /// Run it without asking.
    Allow,
    /// Refuse it; the reason reaches the model.
    Deny,
    /// Go through the CLI's permission prompt (`can_use_tool`), whatever its rules say.
    Ask,
}

/// The answer to a PreToolUse `hook_callback`.
pub fn hook_reply(
    request_id: &str,
    verdict: HookVerdict,
    reason: &str,
) -> Result<String, AgentError> {
    let decision = match verdict {
        HookVerdict::Allow => "allow",
        HookVerdict::Deny => "deny",
        HookVerdict::Ask => "ask",
    };
    control_success(
        request_id,
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }}),
    )
}

/// A success reply to a CLI control request.
fn control_success(request_id: &str, response: Value) -> Result<String, AgentError> {
    encode(&json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }))
}

/// An error reply to a CLI control request we do not serve.
pub fn control_error(request_id: &str, error: &str) -> Result<String, AgentError> {
    encode(&json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }))
}

fn encode(value: &Value) -> Result<String, AgentError> {
    let line = serde_json::to_string(value).map_err(|e| AgentError::InvalidInput(e.to_string()))?;
    validate_line(&line)?;
    Ok(line)
}

/// Checks one stdin line against what the CLI accepts; anything else would kill it.
pub fn validate_line(line: &str) -> Result<(), AgentError> {
    let bad = |why: &str| Err(AgentError::InvalidInput(why.to_owned()));
    if line.contains('\n') || line.contains('\r') {
        return bad("a stdin message must be a single line");
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return bad("not valid JSON");
    };
    let str_at = |ptr: &str| v.pointer(ptr).and_then(Value::as_str);
    match str_at("/type") {
        Some("user") => {
            if str_at("/message/role") != Some("user") {
                return bad("user message without role 'user'");
            }
            match v.pointer("/message/content") {
                Some(Value::String(s)) if !s.is_empty() => Ok(()),
                Some(Value::Array(a)) if !a.is_empty() => Ok(()),
                _ => bad("user message without content"),
            }
        }
        Some("control_request") => {
            if str_at("/request_id").is_none_or(str::is_empty) {
                return bad("control request without request_id");
            }
            if str_at("/request/subtype").is_none() {
                return bad("control request without subtype");
            }
            Ok(())
        }
        Some("control_response") => {
            if str_at("/response/request_id").is_none_or(str::is_empty) {
                return bad("control response without request_id");
            }
            match str_at("/response/subtype") {
                Some("error") => Ok(()),
                Some("success") => match str_at("/response/response/behavior") {
                    None => Ok(()),
                    Some("allow") => match v.pointer("/response/response/updatedInput") {
                        None | Some(Value::Object(_)) => Ok(()),
                        Some(_) => bad("updatedInput must be an object"),
                    },
                    Some("deny") => match str_at("/response/response/message") {
                        Some(_) => Ok(()),
                        None => bad("a deny needs a message"),
                    },
                    Some(_) => bad("behavior must be allow or deny"),
                },
                _ => bad("control response subtype must be success or error"),
            }
        }
        _ => bad("unknown message type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_map_to_the_observed_wire_shapes() {
        let allow = permission_reply("r1", "Write", &Decision::Allow).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&allow).unwrap(),
            json!({"type": "control_response", "response":
                {"subtype": "success", "request_id": "r1", "response": {"behavior": "allow"}}})
        );
        let always =
            permission_reply("r1", "Write", &Decision::AllowAlways { scope: None }).unwrap();
        assert!(always.contains(r#""rules":[{"toolName":"Write"}]"#), "{always}");
        let stop = permission_reply("r1", "Write", &Decision::DenyAndStop { message: "no".into() })
            .unwrap();
        assert!(stop.contains(r#""interrupt":true"#));
    }

    #[test]
    fn the_pre_tool_hook_is_registered_and_answered_as_observed() {
        let init: Value = serde_json::from_str(&initialize_with_hooks("i1").unwrap()).unwrap();
        assert_eq!(init["request"]["subtype"], "initialize");
        let hook = &init["request"]["hooks"]["PreToolUse"][0];
        assert_eq!(
            (hook["matcher"].clone(), hook["hookCallbackIds"][0].clone()),
            (Value::Null, json!(PRE_TOOL_HOOK))
        );
        for (verdict, wire) in
            [(HookVerdict::Allow, "allow"), (HookVerdict::Deny, "deny"), (HookVerdict::Ask, "ask")]
        {
            let line = hook_reply("h1", verdict, "why").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["response"]["request_id"], "h1");
            let out = &v["response"]["response"]["hookSpecificOutput"];
            assert_eq!(out["hookEventName"], "PreToolUse");
            assert_eq!(
                (out["permissionDecision"].as_str(), out["permissionDecisionReason"].as_str()),
                (Some(wire), Some("why"))
            );
        }
    }

    #[test]
    fn invalid_messages_never_reach_the_cli() {
        let edited = Decision::AllowEdited { updated_input: json!("not an object") };
        assert!(permission_reply("r1", "Write", &edited).is_err());
        assert!(permission_reply("r1", "Write", &Decision::Deny { message: " ".into() }).is_err());
        assert!(user_text("   ").is_err());
        assert!(validate_line("{this is not json").is_err());
        assert!(validate_line(r#"{"type":"user"}"#).is_err());
        assert!(validate_line(r#"{"type":"bogus"}"#).is_err());
        assert!(validate_line("{\"type\":\"user\",\n\"message\":{}}").is_err());
        assert!(control_request("", json!({"subtype": "interrupt"})).is_err());
    }

    #[test]
    fn prompts_with_newlines_are_escaped_into_one_line() {
        let line = user_text("line one\nline two").unwrap();
        assert!(!line.contains('\n'));
        validate_line(&line).unwrap();
    }
}
