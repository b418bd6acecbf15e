//! A scriptable mock of the Gemini API on loopback, for driving the real `gemini` CLI.
//!
//! Endpoints: `POST /v1beta/models/{model}:generateContent` (JSON; Gemini CLI's model router
//! and its other side questions, answered with a JSON text that names the `flash` model) and
//! `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (a turn: the scripted reply as
//! server-sent events); anything else is a recorded 404. Which reply answers a turn request is
//! decided by [`Script::reply_index`] from the function responses it carries after its last
//! user text. Point Gemini CLI at it with `GOOGLE_GEMINI_BASE_URL` (see
//! [`crate::agents::gemini_offline_env`]).

mod server;

use std::time::Duration;

use serde_json::{Value, json};

pub use crate::mock_http::RecordedRequest;

use crate::mock_http::{MockServer, Scenario};

/// What the mock answers, step by step.
#[derive(Clone, Debug)]
pub struct Script {
    /// Replies in order (see [`Script::reply_index`]); past the end, the last text (or "done").
    pub replies: Vec<Reply>,
    /// Pause between two SSE events (zero by default).
    pub chunk_delay: Duration,
}

/// One model turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Text, streamed as one event per chunk.
    Text(Vec<String>),
    /// A thought part (`thought: true`), then text.
    ThoughtThenText { thought: String, text: String },
    /// One function call (`write_file`, `run_shell_command`, …) with its `args`.
    Call { name: String, args: Value },
}

impl Scenario for Script {
    type FaultKind = ();

    fn fault(&self) -> Option<((), Option<u32>)> {
        None
    }
}

impl Script {
    /// These replies, no delay.
    pub fn new(replies: Vec<Reply>) -> Script {
        Script { replies, chunk_delay: Duration::ZERO }
    }

    /// Every turn answers `chunks`, streamed one event each.
    pub fn text(chunks: &[&str]) -> Script {
        Script::new(vec![Reply::Text(chunks.iter().map(|c| (*c).to_owned()).collect())])
    }

    /// Step 1: `write_file {file_path, content}`; step 2: "done".
    pub fn write_then_done(file_path: &str, content: &str) -> Script {
        Script::new(vec![
            Reply::Call {
                name: "write_file".into(),
                args: json!({"file_path": file_path, "content": content}),
            },
            Reply::Text(vec!["done".into()]),
        ])
    }

    /// Step 1: `run_shell_command {command}`; step 2: "done".
    pub fn shell_then_done(command: &str) -> Script {
        Script::new(vec![
            Reply::Call {
                name: "run_shell_command".into(),
                args: json!({"command": command, "description": "mock command"}),
            },
            Reply::Text(vec!["done".into()]),
        ])
    }

    /// The reply for a turn whose `contents` are these: one step per function response sent
    /// back since the last user text (Gemini CLI re-sends the whole history every time).
    pub fn reply_index(contents: &[Value]) -> usize {
        function_responses_since_prompt(contents)
    }

    /// The reply a turn request with `contents` gets.
    pub fn reply_for(&self, contents: &[Value]) -> Reply {
        if let Some(reply) = self.replies.get(Self::reply_index(contents)) {
            return reply.clone();
        }
        match self.replies.last() {
            Some(last @ Reply::Text(_)) => last.clone(),
            _ => Reply::Text(vec!["done".into()]),
        }
    }
}

/// Parts with a `functionResponse` after the last user content that holds text.
pub fn function_responses_since_prompt(contents: &[Value]) -> usize {
    let parts = |c: &Value| c.get("parts").and_then(Value::as_array).cloned().unwrap_or_default();
    let is_prompt = |c: &Value| {
        c.get("role").and_then(Value::as_str) == Some("user")
            && parts(c).iter().any(|p| p.get("text").is_some())
    };
    let start = contents.iter().rposition(is_prompt).map_or(0, |i| i + 1);
    contents[start..].iter().flat_map(parts).filter(|p| p.get("functionResponse").is_some()).count()
}

/// The function responses (`{name, response}`) of a recorded turn request, in order.
pub fn function_responses(body: &Value) -> Vec<Value> {
    let contents = body.get("contents").and_then(Value::as_array).cloned().unwrap_or_default();
    contents
        .iter()
        .filter_map(|c| c.get("parts").and_then(Value::as_array))
        .flatten()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockGemini {
    server: MockServer<Script>,
}

impl MockGemini {
    /// Bind `127.0.0.1:0` and serve `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockGemini> {
        Ok(MockGemini { server: MockServer::start(script, server::handle).await? })
    }

    /// `http://127.0.0.1:PORT`, for `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Replace the scenario.
    pub fn set_script(&self, script: Script) {
        self.server.set_script(script);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The turn requests (`:streamGenerateContent`) received so far.
    pub fn turns(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|r| r.path.contains(":streamGenerateContent")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_follow_the_function_responses_since_the_prompt() {
        let prompt = json!({"role": "user", "parts": [{"text": "go"}]});
        let call = json!({"role": "model", "parts": [{"functionCall": {"name": "write_file"}}]});
        let answer =
            json!({"role": "user", "parts": [{"functionResponse": {"name": "write_file"}}]});
        assert_eq!(Script::reply_index(std::slice::from_ref(&prompt)), 0);
        let after = [prompt.clone(), call.clone(), answer.clone()];
        assert_eq!(Script::reply_index(&after), 1);
        let next_prompt =
            [prompt, call, answer, json!({"role": "user", "parts": [{"text": "again"}]})];
        assert_eq!(Script::reply_index(&next_prompt), 0);
        let s = Script::write_then_done("/w/a.txt", "x");
        assert!(matches!(s.reply_for(&after), Reply::Text(_)));
    }
}
