//! Permissions: which tool calls need asking, the can_use_tool request, and the host's answers.

use serde_json::{Value, json};
use std::path::Path;

/// The tool_result text after a deny with `interrupt: true` (verbatim from the real CLI).
pub const REJECT_MESSAGE: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";
/// The tool_result text for an answer that is neither a valid allow nor a valid deny.
pub const INVALID_RESULT: &str = "The canUseTool callback returned an invalid permission result. Expected {behavior: 'allow', updatedInput?: object} or {behavior: 'deny', message: string}.";
/// The tool_result text when stdin closed while a request was pending.
pub const STREAM_CLOSED: &str = "Tool permission request failed: AbortError: Tool permission stream closed before response received";
/// The tool_result text when `--permission-prompt-tool stdio` is used without stream-json input.
pub const STREAM_CLOSED_TEXT_INPUT: &str =
    "Tool permission request failed: AbortError: Stream closed";

/// A session allow rule: a tool name and an optional rule content (`"echo hi *"`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    /// The tool the rule allows.
    pub tool: String,
    /// For Bash: a command pattern; `*` or `:*` at the end matches any suffix.
    pub content: Option<String>,
}

impl Rule {
    /// Parses `Write` or `Bash(echo *)`.
    pub fn parse(spec: &str) -> Self {
        match spec.split_once('(') {
            Some((tool, rest)) => Self {
                tool: tool.trim().to_owned(),
                content: Some(rest.trim_end_matches(')').to_owned()).filter(|c| !c.is_empty()),
            },
            None => Self { tool: spec.trim().to_owned(), content: None },
        }
    }

    /// Whether the rule allows this call.
    pub fn allows(&self, tool: &str, input: &Value) -> bool {
        if self.tool != tool {
            return false;
        }
        let Some(pattern) = &self.content else {
            return true;
        };
        let command = input.get("command").and_then(Value::as_str).unwrap_or_default();
        match pattern.strip_suffix(":*").or_else(|| pattern.strip_suffix('*')) {
            Some(prefix) => command.starts_with(prefix.trim_end()),
            None => command == pattern,
        }
    }
}

/// What to do with a tool call before running it.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Run it; the value is `tool_result_meta[].permission_decision`.
    Allow(Value),
    /// Send a can_use_tool request to the host.
    Ask,
    /// Refuse without asking. `announce` adds a `system/permission_denied` line.
    Deny {
        /// The tool_result text.
        message: String,
        /// Whether to emit `system/permission_denied`.
        announce: bool,
        /// `decision_reason_type`, if any.
        reason_type: Option<&'static str>,
    },
}

/// The inputs of the permission decision.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// Current permission mode.
    pub mode: &'a str,
    /// Session allow rules.
    pub rules: &'a [Rule],
    /// `--permission-prompt-tool` value.
    pub prompt_tool: Option<&'a str>,
    /// Whether stdin carries stream-json (needed for stdio prompts).
    pub stream_input: bool,
}

impl Policy<'_> {
    /// Decides for one call of `tool` (Write, Edit or Bash).
    pub fn gate(&self, tool: &str, input: &Value) -> Gate {
        let edit_tool = matches!(tool, "Write" | "Edit");
        // Plans and questions are always put to the person, whatever the mode or rules.
        let interactive = matches!(tool, "ExitPlanMode" | "AskUserQuestion");
        if !interactive
            && (matches!(self.mode, "bypassPermissions" | "auto")
                || (self.mode == "acceptEdits" && edit_tool))
        {
            return Gate::Allow(
                json!({"decision": "accept", "source": "config", "reason_type": "mode"}),
            );
        }
        if !interactive && self.rules.iter().any(|r| r.allows(tool, input)) {
            return Gate::Allow(
                json!({"decision": "accept", "source": "config", "reason_type": "rule"}),
            );
        }
        if self.mode == "dontAsk" {
            return Gate::Deny {
                message: format!(
                    "Permission to use {tool} has been denied because Claude Code is running in don't ask mode. Ask the user to allow it or to change the permission mode."
                ),
                announce: true,
                reason_type: Some("mode"),
            };
        }
        match self.prompt_tool {
            Some("stdio") if self.stream_input => Gate::Ask,
            Some("stdio") => Gate::Deny {
                message: STREAM_CLOSED_TEXT_INPUT.to_owned(),
                announce: false,
                reason_type: None,
            },
            _ => {
                let what = match input.get("file_path").and_then(Value::as_str) {
                    Some(path) if edit_tool => format!("write to {path}"),
                    _ => format!("use {tool}"),
                };
                Gate::Deny {
                    message: format!(
                        "Claude requested permissions to {what}, but you haven't granted it yet."
                    ),
                    announce: true,
                    reason_type: None,
                }
            }
        }
    }
}

/// Builds the `can_use_tool` control request for one call.
pub fn can_use_tool(
    request_id: &str,
    tool: &str,
    input: &Value,
    tool_use_id: &str,
    cwd: &Path,
    mode: &str,
) -> Value {
    let mut request = json!({
        "subtype": "can_use_tool",
        "tool_name": tool,
        "display_name": tool,
        "input": input,
        "tool_use_id": tool_use_id,
    });
    if tool == "Bash" {
        let command = input.get("command").and_then(Value::as_str).unwrap_or_default();
        let first = command.split_whitespace().next().unwrap_or_default();
        request["description"] =
            input.get("description").cloned().unwrap_or_else(|| json!(command));
        request["permission_suggestions"] = json!([
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": format!("{first} *")}], "behavior": "allow", "destination": "localSettings"},
            {"type": "addDirectories", "directories": [cwd.to_string_lossy()], "destination": "session"},
        ]);
        request["blocked_path"] = json!(cwd.to_string_lossy());
    } else {
        let path = input.get("file_path").and_then(Value::as_str).unwrap_or_default();
        let shown = Path::new(path)
            .strip_prefix(cwd)
            .map_or_else(|_| path.to_owned(), |p| p.to_string_lossy().into_owned());
        request["description"] = json!(shown);
        request["permission_suggestions"] =
            json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]);
    }
    if mode == "plan" {
        request["decision_reason_type"] = json!("mode");
    }
    json!({"type": "control_request", "request_id": request_id, "request": request})
}

/// The host's answer to a can_use_tool request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Run the call (with `updated_input` if given).
    Allow {
        /// `updatedInput`, when the host sent an object.
        updated_input: Option<Value>,
        /// `updatedPermissions` entries.
        updated_permissions: Vec<Value>,
    },
    /// Do not run it.
    Deny {
        /// The tool_result text.
        message: String,
        /// Abort the turn too.
        interrupt: bool,
    },
}

/// Reads the inner `response` object of a control_response. Failures become denials with
/// the real CLI's wording.
pub fn parse_answer(response: &Value) -> Answer {
    let deny = |message: String| Answer::Deny { message, interrupt: false };
    if response.get("subtype").and_then(Value::as_str) == Some("error") {
        let error = response.get("error").and_then(Value::as_str).unwrap_or("unknown error");
        return deny(format!("Tool permission request failed: Error: {error}"));
    }
    let payload = response.get("response").cloned().unwrap_or(Value::Null);
    match payload.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            let updated_input = payload.get("updatedInput").filter(|v| !v.is_null()).cloned();
            if updated_input.as_ref().is_some_and(|v| !v.is_object()) {
                return deny(INVALID_RESULT.to_owned());
            }
            let updated_permissions = payload
                .get("updatedPermissions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            Answer::Allow { updated_input, updated_permissions }
        }
        Some("deny") => match payload.get("message").and_then(Value::as_str) {
            Some(message) => Answer::Deny {
                message: message.to_owned(),
                interrupt: payload.get("interrupt").and_then(Value::as_bool).unwrap_or(false),
            },
            None => deny(INVALID_RESULT.to_owned()),
        },
        _ => deny(INVALID_RESULT.to_owned()),
    }
}

/// What `updatedPermissions` asks for: new allow rules and maybe a new mode.
pub fn apply_updates(updates: &[Value]) -> (Vec<Rule>, Option<String>) {
    let mut rules = Vec::new();
    let mut mode = None;
    for update in updates {
        match update.get("type").and_then(Value::as_str) {
            Some("addRules" | "replaceRules")
                if update.get("behavior").and_then(Value::as_str) == Some("allow") =>
            {
                for rule in update.get("rules").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(tool) = rule.get("toolName").and_then(Value::as_str) {
                        rules.push(Rule {
                            tool: tool.to_owned(),
                            content: rule
                                .get("ruleContent")
                                .and_then(Value::as_str)
                                .filter(|c| !c.is_empty())
                                .map(str::to_owned),
                        });
                    }
                }
            }
            Some("setMode") => {
                mode = update.get("mode").and_then(Value::as_str).map(str::to_owned);
            }
            _ => {}
        }
    }
    (rules, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy<'a>(mode: &'a str, rules: &'a [Rule], tool: Option<&'a str>) -> Policy<'a> {
        Policy { mode, rules, prompt_tool: tool, stream_input: true }
    }

    #[test]
    fn gate_follows_modes_and_rules() {
        let w = json!({"file_path": "/w/a.txt", "content": "x"});
        let b = json!({"command": "echo hi > f"});
        assert_eq!(policy("default", &[], Some("stdio")).gate("Write", &w), Gate::Ask);
        assert!(matches!(
            policy("acceptEdits", &[], Some("stdio")).gate("Write", &w),
            Gate::Allow(_)
        ));
        assert_eq!(policy("acceptEdits", &[], Some("stdio")).gate("Bash", &b), Gate::Ask);
        assert!(matches!(policy("bypassPermissions", &[], None).gate("Bash", &b), Gate::Allow(_)));
        assert!(matches!(
            policy("dontAsk", &[], Some("stdio")).gate("Write", &w),
            Gate::Deny { announce: true, reason_type: Some("mode"), .. }
        ));
        let Gate::Deny { message, .. } = policy("default", &[], None).gate("Write", &w) else {
            panic!("expected deny")
        };
        assert_eq!(
            message,
            "Claude requested permissions to write to /w/a.txt, but you haven't granted it yet."
        );
        let rules = [Rule::parse("Write"), Rule::parse("Bash(echo *)")];
        assert!(matches!(
            policy("default", &rules, Some("stdio")).gate("Write", &w),
            Gate::Allow(_)
        ));
        assert!(matches!(
            policy("default", &rules, Some("stdio")).gate("Bash", &b),
            Gate::Allow(_)
        ));
        assert_eq!(
            policy("default", &rules, Some("stdio")).gate("Bash", &json!({"command": "rm x"})),
            Gate::Ask
        );
    }

    #[test]
    fn answers_parse_like_the_real_cli() {
        let ok = |r: Value| json!({"subtype": "success", "request_id": "x", "response": r});
        assert_eq!(
            parse_answer(&ok(json!({"behavior": "allow"}))),
            Answer::Allow { updated_input: None, updated_permissions: vec![] }
        );
        assert_eq!(
            parse_answer(&ok(json!({"behavior": "deny", "message": "no", "interrupt": true}))),
            Answer::Deny { message: "no".into(), interrupt: true }
        );
        assert_eq!(
            parse_answer(&ok(json!({"behavior": "maybe"}))),
            Answer::Deny { message: INVALID_RESULT.into(), interrupt: false }
        );
        assert_eq!(
            parse_answer(&ok(json!({"behavior": "deny"}))),
            Answer::Deny { message: INVALID_RESULT.into(), interrupt: false }
        );
        assert_eq!(
            parse_answer(&json!({"subtype": "error", "request_id": "x", "error": "host exploded"})),
            Answer::Deny {
                message: "Tool permission request failed: Error: host exploded".into(),
                interrupt: false
            }
        );
        let (rules, mode) = apply_updates(&[
            json!({"type": "addRules", "rules": [{"toolName": "Write"}], "behavior": "allow", "destination": "session"}),
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
        ]);
        assert_eq!(rules, vec![Rule::parse("Write")]);
        assert_eq!(mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn bash_requests_carry_blocked_path_and_rules() {
        let r = can_use_tool(
            "id",
            "Bash",
            &json!({"command": "echo hi", "description": "say hi"}),
            "toolu_1",
            Path::new("/w"),
            "default",
        );
        assert_eq!(r["request"]["blocked_path"], "/w");
        assert_eq!(r["request"]["permission_suggestions"][0]["rules"][0]["ruleContent"], "echo *");
        let w = can_use_tool(
            "id",
            "Write",
            &json!({"file_path": "/w/d/a.txt"}),
            "toolu_2",
            Path::new("/w"),
            "plan",
        );
        assert_eq!(w["request"]["description"], "d/a.txt");
        assert_eq!(w["request"]["decision_reason_type"], "mode");
    }
}
