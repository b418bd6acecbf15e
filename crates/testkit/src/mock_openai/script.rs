//! Scenario description for the mock Responses API: scripted replies, faults, and reply selection.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

/// What the mock answers, step by step, plus an optional fault injected before normal replies.
#[derive(Clone, Debug)]
pub struct Script {
    /// Replies in order: which one answers a request is decided by [`Script::reply_index`] from
    /// the tool outputs the request carries after its last user message.
    pub replies: Vec<Reply>,
    /// A fault applied to `POST /v1/responses` requests before the scripted replies.
    pub fault: Option<Fault>,
    /// Pause between two SSE frames (zero by default).
    pub chunk_delay: Duration,
}

/// What makes a [`Computed`] reply from a request's `input`.
pub type MakeReply = std::sync::Arc<dyn Fn(&[Value]) -> Reply + Send + Sync>;

/// A response made from the request's `input` (e.g. a tool call quoting an id an earlier tool
/// output carried), declaring how many tool calls it makes (the script's step count needs it
/// before the reply is made).
#[derive(Clone)]
pub struct Computed {
    /// How many tool calls the computed reply makes.
    pub calls: usize,
    /// Makes the reply from the request's `input` array.
    pub make: MakeReply,
}

impl std::fmt::Debug for Computed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Computed({} calls)", self.calls)
    }
}

impl Computed {
    /// A reply of `calls` tool calls computed by `make` from the request's `input`.
    pub fn reply(calls: usize, make: impl Fn(&[Value]) -> Reply + Send + Sync + 'static) -> Reply {
        Reply::Computed(Computed { calls, make: std::sync::Arc::new(make) })
    }
}

/// The text of the last tool output (`function_call_output`) of a request's `input`: what a
/// tool answered the model (an MCP tool's content blocks joined).
pub fn last_tool_output(input: &[Value]) -> Option<String> {
    let item = input.iter().rev().find(|i| i["type"] == "function_call_output")?;
    match &item["output"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            Some(parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"))
        }
        other => Some(other.to_string()),
    }
}

/// One model response.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A single assistant `message` item.
    Text(String),
    /// Optional leading assistant message, then one or more tool calls in the SAME response.
    ToolCalls {
        /// Message item sent before the calls.
        text: Option<String>,
        /// The tool calls, in order.
        calls: Vec<ToolCall>,
    },
    /// A `reasoning` item (streamed as a reasoning summary), then a message.
    ReasoningThenText {
        /// The reasoning summary text.
        reasoning: String,
        /// The message text.
        text: String,
    },
    /// A reply made from the request (see [`Computed`]).
    Computed(Computed),
}

/// One tool call as the Responses API carries it.
#[derive(Clone, Debug)]
pub enum ToolCall {
    /// A `function_call` item; `arguments` is sent JSON-encoded, as the API does.
    Function {
        /// Tool name (`exec_command`, `shell`, `update_plan`, …).
        name: String,
        /// MCP tools: `mcp__<server>`, with `name` the tool.
        namespace: Option<String>,
        /// The arguments object.
        arguments: Value,
    },
    /// A `custom_tool_call` item with freeform input (codex's `apply_patch`).
    Custom {
        /// Tool name.
        name: String,
        /// The raw input text.
        input: String,
    },
}

/// A failure injected on `POST /v1/responses`.
#[derive(Clone, Debug)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// How many requests get the fault before normal replies resume; `None` = every request.
    pub count: Option<u32>,
}

/// The kinds of injected failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// HTTP 500 `server_error` (codex retries it and reports "high demand").
    Http500,
    /// HTTP 429 `rate_limit_exceeded` with `retry-after: 1`.
    Http429,
    /// HTTP 400 `invalid_request_error` (not retried; codex passes the body through).
    Http400,
    /// A 200 stream that ends with `response.failed`.
    ResponseFailed,
    /// Start a 200 stream, send part of it, then break the connection.
    DropMidStream,
    /// Start a 200 stream, send part of it, then go silent (codex's `stream_idle_timeout_ms`
    /// fires) until the server is dropped.
    StallMidStream,
    /// Accept the request and never answer (until the server is dropped).
    Hang,
}

impl ToolCall {
    /// A `function_call` with no namespace.
    pub fn function(name: impl Into<String>, arguments: Value) -> Self {
        Self::Function { name: name.into(), namespace: None, arguments }
    }

    /// A `custom_tool_call` with freeform input.
    pub fn custom(name: impl Into<String>, input: impl Into<String>) -> Self {
        Self::Custom { name: name.into(), input: input.into() }
    }

    /// `exec_command {cmd}`: the shell tool codex 0.171.0 advertises for catalog models (gpt-5.5).
    pub fn exec_command(cmd: impl Into<String>) -> Self {
        Self::function("exec_command", json!({ "cmd": cmd.into() }))
    }

    /// `exec_command {cmd, sandbox_permissions: "require_escalated", justification}`: asks to run
    /// outside the sandbox, which makes codex request an approval under `on-request`.
    pub fn exec_command_escalated(
        cmd: impl Into<String>,
        justification: impl Into<String>,
    ) -> Self {
        Self::function(
            "exec_command",
            json!({
                "cmd": cmd.into(),
                "sandbox_permissions": "require_escalated",
                "justification": justification.into(),
            }),
        )
    }

    /// The freeform `apply_patch` tool with a `*** Begin Patch` … `*** End Patch` body.
    pub fn apply_patch(patch: impl Into<String>) -> Self {
        Self::custom("apply_patch", patch)
    }
}

/// An apply_patch body that adds `path` with `content` (each line prefixed with `+`).
pub fn add_file_patch(path: impl AsRef<Path>, content: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Add File: {}\n", path.as_ref().display());
    for line in content.lines() {
        patch.push('+');
        patch.push_str(line);
        patch.push('\n');
    }
    patch.push_str("*** End Patch");
    patch
}

impl Reply {
    /// How many tool outputs the CLI sends back after this reply.
    fn calls(&self) -> usize {
        match self {
            Reply::ToolCalls { calls, .. } => calls.len(),
            Reply::Computed(computed) => computed.calls,
            Reply::Text(_) | Reply::ReasoningThenText { .. } => 0,
        }
    }
}

impl Script {
    /// A script with these replies, no fault and no delay.
    pub fn new(replies: Vec<Reply>) -> Self {
        Self { replies, fault: None, chunk_delay: Duration::ZERO }
    }

    /// Always answer with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Reply::Text(text.into())])
    }

    /// Step 1: these calls in one response; step 2: "done".
    pub fn tools_then_done(calls: Vec<ToolCall>) -> Self {
        Self::new(vec![Reply::ToolCalls { text: None, calls }, Reply::Text("done".to_owned())])
    }

    /// Step 1: "I'll run the command." + `exec_command {cmd}`; step 2: "done".
    pub fn shell_then_done(cmd: impl Into<String>) -> Self {
        Self::new(vec![
            Reply::ToolCalls {
                text: Some("I'll run the command.".to_owned()),
                calls: vec![ToolCall::exec_command(cmd)],
            },
            Reply::Text("done".to_owned()),
        ])
    }

    /// Step 1: "I'll create the file." + `apply_patch` adding `path`; step 2: "done".
    pub fn patch_then_done(path: impl AsRef<Path>, content: &str) -> Self {
        Self::new(vec![
            Reply::ToolCalls {
                text: Some("I'll create the file.".to_owned()),
                calls: vec![ToolCall::apply_patch(add_file_patch(path, content))],
            },
            Reply::Text("done".to_owned()),
        ])
    }

    /// Step 1: `exec_command {cmd}` and `apply_patch` adding `path`, in one response; step 2:
    /// "done".
    pub fn shell_and_patch_then_done(
        cmd: impl Into<String>,
        path: impl AsRef<Path>,
        content: &str,
    ) -> Self {
        Self::tools_then_done(vec![
            ToolCall::exec_command(cmd),
            ToolCall::apply_patch(add_file_patch(path, content)),
        ])
    }

    /// A reasoning summary followed by a message.
    pub fn reasoning(reasoning: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(vec![Reply::ReasoningThenText { reasoning: reasoning.into(), text: text.into() }])
    }

    /// Inject `kind` on the first `count` requests (`None` = on every request).
    #[must_use]
    pub fn with_fault(mut self, kind: FaultKind, count: Option<u32>) -> Self {
        self.fault = Some(Fault { kind, count });
        self
    }

    /// Pause `delay` between SSE frames.
    #[must_use]
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Which reply answers a request whose `input` array is `input`: walk the replies, each one
    /// consuming as many tool outputs as it made calls, until the outputs run out. Stateless, so
    /// a retried or resumed request gets the same answer.
    pub fn reply_index(&self, input: &[Value]) -> usize {
        let mut outputs = tool_outputs_since_prompt(input);
        let mut index = 0;
        while let Some(reply) = self.replies.get(index) {
            let calls = reply.calls();
            if calls == 0 || outputs < calls {
                break;
            }
            outputs -= calls;
            index += 1;
        }
        index
    }

    /// The reply for a request whose `input` array is `input`.
    ///
    /// Past the end of the script: the last reply if it is text, else `Text("done")`.
    pub fn reply_for(&self, input: &[Value]) -> Reply {
        if let Some(reply) = self.replies.get(self.reply_index(input)) {
            return match reply {
                // Made now; a computed reply that makes another is not made again.
                Reply::Computed(computed) => match (computed.make)(input) {
                    Reply::Computed(_) => Reply::Text("(computed twice)".to_owned()),
                    made => made,
                },
                other => other.clone(),
            };
        }
        match self.replies.last() {
            Some(last @ Reply::Text(_)) => last.clone(),
            _ => Reply::Text("done".to_owned()),
        }
    }
}

/// Tool outputs (`function_call_output`, `custom_tool_call_output`, …) after the last
/// `message` with role `user` (codex re-sends the whole history on every request).
pub fn tool_outputs_since_prompt(input: &[Value]) -> usize {
    let is_user_message = |item: &Value| {
        item.get("role").and_then(Value::as_str) == Some("user")
            && item.get("type").and_then(Value::as_str).is_none_or(|t| t == "message")
    };
    let start = input.iter().rposition(is_user_message).map_or(0, |i| i + 1);
    input[start..]
        .iter()
        .filter(|item| {
            item.get("type").and_then(Value::as_str).is_some_and(|t| t.ends_with("_output"))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }
    fn developer() -> Value {
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]})
    }
    fn call(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": "{}"})
    }
    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": "ok"})
    }
    fn custom_output(id: &str) -> Value {
        json!({"type": "custom_tool_call_output", "call_id": id, "output": "ok"})
    }

    #[test]
    fn outputs_are_counted_after_the_last_user_message() {
        assert_eq!(tool_outputs_since_prompt(&[]), 0);
        assert_eq!(tool_outputs_since_prompt(&[developer(), user("hi")]), 0);
        let turn = [developer(), user("hi"), call("a"), output("a")];
        assert_eq!(tool_outputs_since_prompt(&turn), 1);
        let mut two = turn.to_vec();
        two.extend([json!({"type": "message", "role": "assistant", "content": []}), user("again")]);
        assert_eq!(tool_outputs_since_prompt(&two), 0);
        two.extend([call("b"), output("b"), call("c"), custom_output("c")]);
        assert_eq!(tool_outputs_since_prompt(&two), 2);
    }

    #[test]
    fn multi_call_replies_consume_all_their_outputs() {
        let script = Script::shell_and_patch_then_done("true", "a.txt", "x");
        let first = [user("go")];
        assert!(
            matches!(script.reply_for(&first), Reply::ToolCalls { calls, .. } if calls.len() == 2)
        );
        // One output back (should not happen, but must not skip ahead).
        let partial = [user("go"), call("a"), output("a")];
        assert_eq!(script.reply_index(&partial), 0);
        let both = [user("go"), call("a"), call("b"), output("a"), custom_output("b")];
        assert!(matches!(script.reply_for(&both), Reply::Text(t) if t == "done"));
    }

    #[test]
    fn past_the_end_repeats_text_or_says_done() {
        let many = [user("x"), output("a"), output("b"), output("c")];
        assert!(
            matches!(Script::shell_then_done("ls").reply_for(&many), Reply::Text(t) if t == "done")
        );
        assert!(matches!(Script::text("hello").reply_for(&many), Reply::Text(t) if t == "hello"));
        let only_calls = Script::new(vec![Reply::ToolCalls { text: None, calls: vec![] }]);
        assert_eq!(only_calls.reply_index(&many), 0);
        let one_call = Script::new(vec![Reply::ToolCalls {
            text: None,
            calls: vec![ToolCall::exec_command("ls")],
        }]);
        assert!(matches!(one_call.reply_for(&many), Reply::Text(t) if t == "done"));
    }

    #[test]
    fn add_file_patch_prefixes_every_line() {
        assert_eq!(
            add_file_patch("dir/new.txt", "one\ntwo\n"),
            "*** Begin Patch\n*** Add File: dir/new.txt\n+one\n+two\n*** End Patch"
        );
    }
}
