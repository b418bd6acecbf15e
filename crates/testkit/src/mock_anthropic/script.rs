//! Scenario description for the mock Messages API: scripted replies, faults, and reply selection.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

/// What the mock answers, turn by turn, plus an optional fault injected before normal replies.
#[derive(Clone, Debug)]
pub struct Script {
    /// Replies in order: reply `i` answers the request that already holds `i` assistant messages
    /// for the current prompt (see [`reply_index`]).
    pub replies: Vec<Reply>,
    /// A fault applied to `/v1/messages` requests before the scripted replies.
    pub fault: Option<Fault>,
    /// Pause between two SSE frames (zero by default).
    pub chunk_delay: Duration,
}

/// A reply made from the request itself (e.g. a tool call quoting an id the last tool result
/// carried): given the request body, answers the reply.
#[derive(Clone)]
pub struct Computed(pub std::sync::Arc<dyn Fn(&Value) -> Reply + Send + Sync>);

impl std::fmt::Debug for Computed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Computed(..)")
    }
}

impl Computed {
    /// A reply computed by `f` from the request body.
    pub fn reply(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Reply {
        Reply::Computed(Computed(std::sync::Arc::new(f)))
    }
}

/// The text of the last `tool_result` block of the request `body` since the model's last
/// message, if any: what a tool answered the model. (Claude Code may add messages of its own
/// after the result, e.g. a reminder.)
pub fn last_tool_result(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    let since_model = messages.iter().rev().take_while(|m| m["role"] != "assistant");
    let result = since_model
        .filter_map(|m| m["content"].as_array())
        .find_map(|blocks| blocks.iter().rev().find(|b| b["type"] == "tool_result"))?;
    match &result["content"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            Some(parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"))
        }
        _ => None,
    }
}

/// One assistant message.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A single text block, `stop_reason: "end_turn"`.
    Text(String),
    /// optional leading text, then one or more tool_use blocks in ONE assistant message (stop_reason "tool_use")
    ToolUses {
        /// Text block sent before the tool calls.
        text: Option<String>,
        /// The tool_use blocks, in order.
        calls: Vec<ToolCall>,
    },
    /// A `Write` of the file the conversation's prompt names (see [`named_file`]), made absolute
    /// under the agent's working directory from the system prompt; stop_reason "tool_use".
    ///
    /// [`named_file`]: super::named_file
    WriteNamedFile,
    /// A `Write` of Claude Code's plan file (plan mode names it in the conversation:
    /// `<home>/.claude/plans/<slug>.md`) with this content; stop_reason "tool_use".
    WritePlanFile(String),
    /// a thinking block (with a signature) then a text block
    ThinkingThenText {
        /// Content of the thinking block.
        thinking: String,
        /// Content of the text block.
        text: String,
    },
    /// A reply made from the request (see [`Computed`]).
    Computed(Computed),
}

/// One `tool_use` block: the tool name and its input object.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// Tool name as the CLI knows it (`Write`, `Edit`, `Bash`, …).
    pub name: String,
    /// The tool input (a JSON object).
    pub input: Value,
}

/// A failure injected on `/v1/messages`.
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
    /// HTTP 500 `api_error`.
    Http500,
    /// HTTP 429 `rate_limit_error` with `retry-after: 1`.
    Http429,
    /// HTTP 529 `overloaded_error`.
    Http529,
    /// Start a 200 response, send part of it, then break the connection.
    DropMidStream,
    /// Accept the request and never answer (until the server is dropped).
    Hang,
}

impl ToolCall {
    /// A tool call with the given name and input.
    pub fn new(name: impl Into<String>, input: Value) -> Self {
        Self { name: name.into(), input }
    }
}

fn path_string(path: impl AsRef<Path>) -> String {
    path.as_ref().to_string_lossy().into_owned()
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

    /// Turn 1: `Write{file_path, content}` (after "I'll write the file."); turn 2: "done".
    pub fn write_then_done(path: impl AsRef<Path>, content: impl Into<String>) -> Self {
        let call = ToolCall::new(
            "Write",
            json!({ "file_path": path_string(path), "content": content.into() }),
        );
        Self::new(vec![
            Reply::ToolUses { text: Some("I'll write the file.".to_owned()), calls: vec![call] },
            Reply::Text("done".to_owned()),
        ])
    }

    /// Turn 1: `Write` the file the prompt names (`hello.txt` when it names none) with the text
    /// after "containing" (or a greeting), in the agent's working directory; turn 2: `done`.
    pub fn write_named_file_then(done: impl Into<String>) -> Self {
        Self::new(vec![Reply::WriteNamedFile, Reply::Text(done.into())])
    }

    /// Turn 1: `Read{file_path}` (the CLI refuses an Edit of a file it has not read);
    /// turn 2: `Edit{file_path, old_string, new_string}`; turn 3: "done".
    pub fn edit_then_done(
        path: impl AsRef<Path>,
        old: impl Into<String>,
        new: impl Into<String>,
    ) -> Self {
        let file_path = path_string(path);
        let read = ToolCall::new("Read", json!({ "file_path": file_path }));
        let edit = ToolCall::new(
            "Edit",
            json!({ "file_path": file_path, "old_string": old.into(), "new_string": new.into() }),
        );
        Self::new(vec![
            Reply::ToolUses {
                text: Some("I'll read the file first.".to_owned()),
                calls: vec![read],
            },
            Reply::ToolUses { text: Some("I'll edit the file.".to_owned()), calls: vec![edit] },
            Reply::Text("done".to_owned()),
        ])
    }

    /// Turn 1: `Bash{command}`; turn 2: "done".
    pub fn bash_then_done(command: impl Into<String>) -> Self {
        let call = ToolCall::new(
            "Bash",
            json!({ "command": command.into(), "description": "Run the requested command" }),
        );
        Self::new(vec![
            Reply::ToolUses { text: Some("I'll run the command.".to_owned()), calls: vec![call] },
            Reply::Text("done".to_owned()),
        ])
    }

    /// Turn 1: all these calls in one assistant message; turn 2: "done".
    pub fn tools_then_done(calls: Vec<ToolCall>) -> Self {
        Self::new(vec![Reply::ToolUses { text: None, calls }, Reply::Text("done".to_owned())])
    }

    /// A thinking block followed by a text block.
    pub fn thinking(thinking: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(vec![Reply::ThinkingThenText { thinking: thinking.into(), text: text.into() }])
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

    /// The reply for a request whose `messages` array is `messages`.
    ///
    /// Past the end of the script: the last reply if it is text, else `Text("done")`.
    pub fn reply_for(&self, messages: &[Value]) -> Reply {
        let index = reply_index(messages);
        if let Some(reply) = self.replies.get(index) {
            return reply.clone();
        }
        match self.replies.last() {
            Some(last @ Reply::Text(_)) => last.clone(),
            _ => Reply::Text("done".to_owned()),
        }
    }
}

fn blocks(content: &Value) -> &[Value] {
    content.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn has_block(content: &Value, kind: &str) -> bool {
    blocks(content).iter().any(|b| b.get("type").and_then(Value::as_str) == Some(kind))
}

/// A fresh prompt: a user message whose content is a string, or holds a `text` block and no
/// `tool_result` block.
fn is_fresh_prompt(message: &Value) -> bool {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    match message.get("content") {
        Some(Value::String(_)) => true,
        Some(content @ Value::Array(_)) => {
            has_block(content, "text") && !has_block(content, "tool_result")
        }
        _ => false,
    }
}

/// Which scripted reply answers this conversation: the number of assistant messages after the
/// last fresh user prompt (all of them if there is none). Other roles (the CLI inserts a
/// `system` entry) are ignored.
pub fn reply_index(messages: &[Value]) -> usize {
    let start = messages.iter().rposition(is_fresh_prompt).map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_text(text: &str) -> Value {
        json!({"role": "user", "content": [{"type": "text", "text": text}]})
    }
    fn assistant_tool() -> Value {
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}]})
    }
    fn assistant_text(text: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
    }
    fn tool_result() -> Value {
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
            {"type": "text", "text": "<system-reminder>x</system-reminder>"}
        ]})
    }
    fn system() -> Value {
        json!({"role": "system", "content": "env"})
    }

    #[test]
    fn first_request_is_index_zero() {
        assert_eq!(reply_index(&[]), 0);
        assert_eq!(reply_index(&[user_text("hi")]), 0);
        assert_eq!(reply_index(&[user_text("hi"), system()]), 0);
        let plain = json!({"role": "user", "content": "hi"});
        assert_eq!(reply_index(&[plain]), 0);
    }

    #[test]
    fn tool_results_continue_the_prompt() {
        let msgs = [user_text("hi"), system(), assistant_tool(), tool_result()];
        assert_eq!(reply_index(&msgs), 1);
        let msgs =
            [user_text("hi"), assistant_tool(), tool_result(), assistant_tool(), tool_result()];
        assert_eq!(reply_index(&msgs), 2);
    }

    #[test]
    fn a_new_prompt_restarts_the_script() {
        let msgs = [
            user_text("one"),
            system(),
            assistant_tool(),
            tool_result(),
            assistant_text("done"),
            user_text("two"),
        ];
        assert_eq!(reply_index(&msgs), 0);
        let mut more = msgs.to_vec();
        more.extend([assistant_tool(), tool_result()]);
        assert_eq!(reply_index(&more), 1);
    }

    #[test]
    fn no_fresh_prompt_counts_every_assistant_message() {
        let msgs = [assistant_tool(), tool_result(), assistant_tool(), tool_result()];
        assert_eq!(reply_index(&msgs), 2);
    }

    #[test]
    fn past_the_end_repeats_text_or_says_done() {
        let msgs =
            [user_text("x"), assistant_tool(), tool_result(), assistant_tool(), tool_result()];
        let script = Script::write_then_done("/tmp/a", "b");
        assert!(matches!(script.reply_for(&msgs), Reply::Text(t) if t == "done"));
        let script = Script::text("hello");
        assert!(matches!(script.reply_for(&msgs), Reply::Text(t) if t == "hello"));
        let script = Script::tools_then_done(vec![]);
        assert!(matches!(script.reply_for(&msgs[..1]), Reply::ToolUses { .. }));
        let script = Script::new(vec![Reply::ToolUses { text: None, calls: vec![] }]);
        assert!(matches!(script.reply_for(&msgs), Reply::Text(t) if t == "done"));
    }
}
