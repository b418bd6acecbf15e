//! Turns a scripted reply into a Messages API message: complete JSON or SSE event frames.

use serde_json::{Value, json};

use super::script::Reply;

/// Input tokens reported for every request.
pub(crate) const INPUT_TOKENS: u64 = 100;

/// One content block with its ids already assigned.
#[derive(Clone, Debug)]
enum Block {
    Text(String),
    Thinking { thinking: String, signature: String },
    ToolUse { id: String, name: String, input: Value },
}

/// A reply made concrete: message id, blocks, stop reason, model.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    id: String,
    model: String,
    blocks: Vec<Block>,
    stop_reason: &'static str,
}

/// One SSE frame: `event: <event>\ndata: <data>\n\n`.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub(crate) event: &'static str,
    pub(crate) data: Value,
}

impl Frame {
    fn new(event: &'static str, data: Value) -> Self {
        Self { event, data }
    }

    /// The frame as it goes on the wire.
    pub(crate) fn to_wire(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event, self.data)
    }
}

fn simple_uuid() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A fresh `msg_mock_…` id.
pub(crate) fn message_id() -> String {
    format!("msg_mock_{}", simple_uuid())
}

fn tool_use_id() -> String {
    let mut id = simple_uuid();
    id.truncate(24);
    format!("toolu_{id}")
}

/// Split `text` into `parts` pieces on char boundaries (fewer if it is too short; at least one).
fn split(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let parts = parts.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(parts).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

impl Message {
    /// Assign ids to `reply` for a request that asked for `model`.
    pub(crate) fn from_reply(reply: &Reply, model: &str) -> Self {
        let (blocks, stop_reason) = match reply {
            // Resolved against the request by the server; without one, the default file.
            Reply::WriteNamedFile | Reply::WritePlanFile(_) | Reply::Computed(_) => {
                return Self::from_reply(
                    &super::prompted::resolve(reply, &serde_json::Value::Null),
                    model,
                );
            }
            Reply::Text(text) => (vec![Block::Text(text.clone())], "end_turn"),
            Reply::ToolUses { text, calls } => {
                let mut blocks: Vec<Block> = text.iter().cloned().map(Block::Text).collect();
                blocks.extend(calls.iter().map(|c| Block::ToolUse {
                    id: tool_use_id(),
                    name: c.name.clone(),
                    input: c.input.clone(),
                }));
                (blocks, "tool_use")
            }
            Reply::ThinkingThenText { thinking, text } => (
                vec![
                    Block::Thinking {
                        thinking: thinking.clone(),
                        signature: format!("bW9jay1zaWduYXR1cmU{}", simple_uuid()),
                    },
                    Block::Text(text.clone()),
                ],
                "end_turn",
            ),
        };
        Self { id: message_id(), model: model.to_owned(), blocks, stop_reason }
    }

    fn output_tokens(&self) -> u64 {
        let chars: usize = self
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.len(),
                Block::Thinking { thinking, .. } => thinking.len(),
                Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            })
            .sum();
        (chars as u64).div_ceil(4).max(1)
    }

    fn block_json(block: &Block) -> Value {
        match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Thinking { thinking, signature } => {
                json!({"type": "thinking", "thinking": thinking, "signature": signature})
            }
            Block::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        }
    }

    /// The complete (non-streaming) message.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks.iter().map(Self::block_json).collect::<Vec<_>>(),
            "stop_reason": self.stop_reason,
            "stop_sequence": null,
            "usage": usage(self.output_tokens()),
        })
    }

    /// `message_start` + `ping`.
    fn head_frames(&self) -> Vec<Frame> {
        vec![
            Frame::new(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": self.id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage(1),
                }}),
            ),
            Frame::new("ping", json!({"type": "ping"})),
        ]
    }

    /// The full SSE event sequence for this message.
    pub(crate) fn frames(&self) -> Vec<Frame> {
        let mut frames = self.head_frames();
        for (index, block) in self.blocks.iter().enumerate() {
            frames.push(block_start(index, block));
            frames.extend(block_deltas(index, block));
            frames.push(Frame::new(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        frames.push(Frame::new(
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": self.output_tokens()},
            }),
        ));
        frames.push(Frame::new("message_stop", json!({"type": "message_stop"})));
        frames
    }

    /// What a dropped stream gets out before the break: `message_start`, a text block start and
    /// one text delta.
    pub(crate) fn truncated_frames(&self) -> Vec<Frame> {
        let mut frames = self.head_frames();
        let block = Block::Text(String::new());
        frames.push(block_start(0, &block));
        frames.push(delta(0, json!({"type": "text_delta", "text": "Partial ans"})));
        frames
    }
}

fn usage(output_tokens: u64) -> Value {
    json!({
        "input_tokens": INPUT_TOKENS,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

fn block_start(index: usize, block: &Block) -> Frame {
    let content_block = match block {
        Block::Text(_) => json!({"type": "text", "text": ""}),
        Block::Thinking { .. } => json!({"type": "thinking", "thinking": "", "signature": ""}),
        Block::ToolUse { id, name, .. } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": {}})
        }
    };
    Frame::new(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": content_block}),
    )
}

fn delta(index: usize, delta: Value) -> Frame {
    Frame::new(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_deltas(index: usize, block: &Block) -> Vec<Frame> {
    match block {
        Block::Text(text) => split(text, 3)
            .into_iter()
            .map(|t| delta(index, json!({"type": "text_delta", "text": t})))
            .collect(),
        Block::Thinking { thinking, signature } => {
            let mut frames: Vec<Frame> = split(thinking, 2)
                .into_iter()
                .map(|t| delta(index, json!({"type": "thinking_delta", "thinking": t})))
                .collect();
            frames.push(delta(index, json!({"type": "signature_delta", "signature": signature})));
            frames
        }
        Block::ToolUse { input, .. } => split(&input.to_string(), 3)
            .into_iter()
            .map(|p| delta(index, json!({"type": "input_json_delta", "partial_json": p})))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_anthropic::ToolCall;

    #[test]
    fn split_keeps_text_and_char_boundaries() {
        assert_eq!(split("", 3), vec![String::new()]);
        assert_eq!(split("a", 3), vec!["a".to_owned()]);
        assert_eq!(split("héllo wörld", 3).concat(), "héllo wörld");
        assert_eq!(split("héllo wörld", 3).len(), 3);
        assert_eq!(split("ab", 3).len(), 2);
    }

    #[test]
    fn tool_frames_reassemble_input() {
        let input = json!({"file_path": "/tmp/x", "content": "hello"});
        let reply = Reply::ToolUses {
            text: Some("hi".to_owned()),
            calls: vec![ToolCall::new("Write", input.clone())],
        };
        let msg = Message::from_reply(&reply, "m");
        let frames = msg.frames();
        let partial: String = frames
            .iter()
            .filter(|f| f.data["delta"]["type"] == "input_json_delta")
            .map(|f| f.data["delta"]["partial_json"].as_str().unwrap_or_default())
            .collect();
        assert!(
            frames.iter().filter(|f| f.data["delta"]["type"] == "input_json_delta").count() >= 2
        );
        assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), input);
        assert_eq!(frames.last().map(|f| f.event), Some("message_stop"));
        assert_eq!(msg.to_json()["stop_reason"], "tool_use");
        let id = msg.to_json()["content"][1]["id"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), "toolu_".len() + 24);
    }
}
