//! Turns a scripted reply into a Responses API response: the final JSON object or SSE frames.

use serde_json::{Value, json};

use super::script::{Reply, ToolCall};

/// Token usage reported for every response (the reference capture's numbers).
pub(crate) const INPUT_TOKENS: u64 = 123;
const CACHED_TOKENS: u64 = 23;
const OUTPUT_TOKENS: u64 = 45;
const REASONING_TOKENS: u64 = 6;

/// One output item with its ids already assigned.
#[derive(Clone, Debug)]
enum Item {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
    },
    Function {
        id: String,
        call_id: String,
        name: String,
        namespace: Option<String>,
        arguments: String,
    },
    Custom {
        id: String,
        call_id: String,
        name: String,
        input: String,
    },
}

/// A reply made concrete: response id, model and output items.
#[derive(Clone, Debug)]
pub(crate) struct Response {
    id: String,
    model: String,
    created_at: u64,
    items: Vec<Item>,
}

/// One SSE frame: `event: <event>\ndata: <data>\n\n`.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub(crate) event: &'static str,
    pub(crate) data: Value,
}

impl Frame {
    fn new(event: &'static str, mut data: Value) -> Self {
        if let Some(obj) = data.as_object_mut() {
            obj.insert("type".to_owned(), Value::String(event.to_owned()));
        }
        Self { event, data }
    }

    /// The frame as it goes on the wire.
    pub(crate) fn to_wire(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event, self.data)
    }
}

/// `prefix` + `len` hex digits of a fresh uuid.
pub(crate) fn fresh_id(prefix: &str, len: usize) -> String {
    let mut hex = uuid::Uuid::new_v4().simple().to_string();
    hex.truncate(len);
    format!("{prefix}{hex}")
}

/// Split `text` into `parts` pieces on char boundaries (fewer if it is too short; at least one).
pub(crate) fn split(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let parts = parts.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(parts).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

fn message(text: &str) -> Item {
    Item::Message { id: fresh_id("msg_", 24), text: text.to_owned() }
}

fn call_item(call: &ToolCall) -> Item {
    let call_id = fresh_id("call_", 12);
    match call {
        ToolCall::Function { name, namespace, arguments } => Item::Function {
            id: fresh_id("fc_", 24),
            call_id,
            name: name.clone(),
            namespace: namespace.clone(),
            arguments: arguments.to_string(),
        },
        ToolCall::Custom { name, input } => Item::Custom {
            id: fresh_id("ctc_", 24),
            call_id,
            name: name.clone(),
            input: input.clone(),
        },
    }
}

impl Item {
    fn id(&self) -> &str {
        match self {
            Item::Message { id, .. }
            | Item::Reasoning { id, .. }
            | Item::Function { id, .. }
            | Item::Custom { id, .. } => id,
        }
    }

    /// The item as `output_item.done` and the final response carry it.
    fn done_json(&self) -> Value {
        match self {
            Item::Message { id, text } => json!({
                "type": "message", "id": id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            Item::Reasoning { id, text } => json!({
                "type": "reasoning", "id": id,
                "summary": [{"type": "summary_text", "text": text}],
            }),
            Item::Function { id, call_id, name, namespace, arguments } => {
                let mut item = json!({
                    "type": "function_call", "id": id, "call_id": call_id, "name": name,
                    "arguments": arguments, "status": "completed",
                });
                if let (Some(ns), Some(obj)) = (namespace, item.as_object_mut()) {
                    obj.insert("namespace".to_owned(), Value::String(ns.clone()));
                }
                item
            }
            Item::Custom { id, call_id, name, input } => json!({
                "type": "custom_tool_call", "id": id, "call_id": call_id, "name": name,
                "input": input, "status": "completed",
            }),
        }
    }

    /// The item as `output_item.added` announces it: no content yet.
    fn added_json(&self) -> Value {
        let mut item = self.done_json();
        if let Some(obj) = item.as_object_mut() {
            match self {
                Item::Message { .. } => {
                    obj.insert("content".to_owned(), json!([]));
                    obj.insert("status".to_owned(), json!("in_progress"));
                }
                Item::Reasoning { .. } => {
                    obj.insert("summary".to_owned(), json!([]));
                }
                Item::Function { .. } => {
                    obj.insert("arguments".to_owned(), json!(""));
                    obj.insert("status".to_owned(), json!("in_progress"));
                }
                Item::Custom { .. } => {
                    obj.insert("input".to_owned(), json!(""));
                    obj.insert("status".to_owned(), json!("in_progress"));
                }
            }
        }
        item
    }

    /// Frames between `added` and `done`.
    fn delta_frames(&self, index: usize) -> Vec<Frame> {
        match self {
            Item::Message { id, text } => split(text, 3)
                .into_iter()
                .map(|delta| {
                    Frame::new(
                        "response.output_text.delta",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta}),
                    )
                })
                .collect(),
            Item::Reasoning { id, text } => {
                let mut frames = vec![Frame::new(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}}),
                )];
                frames.extend(split(text, 2).into_iter().map(|delta| {
                    Frame::new(
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": delta}),
                    )
                }));
                frames
            }
            Item::Function { id, arguments, .. } => split(arguments, 2)
                .into_iter()
                .map(|delta| {
                    Frame::new(
                        "response.function_call_arguments.delta",
                        json!({"item_id": id, "output_index": index, "delta": delta}),
                    )
                })
                .collect(),
            Item::Custom { id, input, .. } => split(input, 2)
                .into_iter()
                .map(|delta| {
                    Frame::new(
                        "response.custom_tool_call_input.delta",
                        json!({"item_id": id, "output_index": index, "delta": delta}),
                    )
                })
                .collect(),
        }
    }
}

fn usage() -> Value {
    json!({
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    })
}

impl Response {
    /// Assign ids to `reply` for a request that asked for `model`.
    pub(crate) fn from_reply(reply: &Reply, model: &str) -> Self {
        let items = match reply {
            Reply::Text(text) => vec![message(text)],
            Reply::ToolCalls { text, calls } => {
                let mut items: Vec<Item> = text.iter().map(|t| message(t)).collect();
                items.extend(calls.iter().map(call_item));
                items
            }
            Reply::ReasoningThenText { reasoning, text } => vec![
                Item::Reasoning { id: fresh_id("rs_", 24), text: reasoning.clone() },
                message(text),
            ],
            // Made by `Script::reply_for` from the request; without one, made from nothing.
            Reply::Computed(computed) => match (computed.make)(&[]) {
                Reply::Computed(_) => vec![message("(computed twice)")],
                made => return Self::from_reply(&made, model),
            },
        };
        let created_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self { id: fresh_id("resp_mock_", 24), model: model.to_owned(), created_at, items }
    }

    /// The response object; `status` `in_progress` carries no output and no usage yet.
    fn object(&self, status: &str) -> Value {
        let done = status == "completed";
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "output": if done { self.items.iter().map(Item::done_json).collect() } else { Vec::new() },
            "usage": if done { usage() } else { Value::Null },
            "error": null,
        })
    }

    /// The complete (non-streaming) response.
    pub(crate) fn to_json(&self) -> Value {
        self.object("completed")
    }

    fn created(&self) -> Frame {
        Frame::new("response.created", json!({"response": self.object("in_progress")}))
    }

    /// The full SSE event sequence.
    pub(crate) fn frames(&self) -> Vec<Frame> {
        let mut frames = vec![self.created()];
        for (index, item) in self.items.iter().enumerate() {
            frames.push(Frame::new(
                "response.output_item.added",
                json!({"output_index": index, "item": item.added_json()}),
            ));
            frames.extend(item.delta_frames(index));
            frames.push(Frame::new(
                "response.output_item.done",
                json!({"output_index": index, "item": item.done_json()}),
            ));
        }
        frames.push(Frame::new("response.completed", json!({"response": self.to_json()})));
        frames
    }

    /// What a dropped stream gets out before the break: `response.created`, a message item
    /// announced and one text delta.
    pub(crate) fn truncated_frames(&self) -> Vec<Frame> {
        let item = message("");
        vec![
            self.created(),
            Frame::new(
                "response.output_item.added",
                json!({"output_index": 0, "item": item.added_json()}),
            ),
            Frame::new(
                "response.output_text.delta",
                json!({"item_id": item.id(), "output_index": 0, "content_index": 0, "delta": "Partial ans"}),
            ),
        ]
    }

    /// `response.created` then `response.failed` with a server error.
    pub(crate) fn failed_frames(&self) -> Vec<Frame> {
        let mut failed = self.object("failed");
        if let Some(obj) = failed.as_object_mut() {
            obj.insert(
                "error".to_owned(),
                json!({"code": "server_error", "message": "mock: the model failed to respond"}),
            );
        }
        vec![self.created(), Frame::new("response.failed", json!({"response": failed}))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_openai::script::add_file_patch;

    #[test]
    fn split_keeps_text_and_char_boundaries() {
        assert_eq!(split("", 3), vec![String::new()]);
        assert_eq!(split("héllo wörld", 3).concat(), "héllo wörld");
        assert_eq!(split("ab", 3).len(), 2);
    }

    #[test]
    fn tool_frames_carry_final_items_and_unique_call_ids() {
        let reply = Reply::ToolCalls {
            text: Some("hi".to_owned()),
            calls: vec![
                ToolCall::exec_command("touch a"),
                ToolCall::apply_patch(add_file_patch("b.txt", "x")),
            ],
        };
        let frames = Response::from_reply(&reply, "gpt-5.5").frames();
        let done: Vec<&Value> = frames
            .iter()
            .filter(|f| f.event == "response.output_item.done")
            .map(|f| &f.data["item"])
            .collect();
        assert_eq!(done.len(), 3);
        assert_eq!(done[1]["type"], "function_call");
        let args: Value = serde_json::from_str(done[1]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"cmd": "touch a"}));
        assert_eq!(done[2]["type"], "custom_tool_call");
        assert_ne!(done[1]["call_id"], done[2]["call_id"]);
        let last = frames.last().unwrap();
        assert_eq!(last.event, "response.completed");
        assert_eq!(last.data["response"]["output"].as_array().unwrap().len(), 3);
        assert_eq!(last.data["response"]["usage"]["total_tokens"], 168);
        assert!(frames.iter().all(|f| f.data["type"] == f.event));
    }
}
