//! A codex thread item (exec's snake_case or app-server's camelCase), and its tool-call mapping.
//!
//! Items are read by a hand-written map visitor rather than a derive: exec's `web_search` item
//! carries the key `id` twice (`item_0`, then `ws_…`), which a derived struct rejects as a
//! duplicate field. The first occurrence wins, so started/completed pairs keep the same id.

use std::fmt;

use nucleic_protocol::{ToolCall, ToolResult};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value, json};

/// Tool name of command executions.
pub const SHELL_TOOL: &str = "shell";
/// Tool name of file changes.
pub const PATCH_TOOL: &str = "apply_patch";
/// Tool name of web searches.
const WEB_SEARCH_TOOL: &str = "web_search";

/// The fields of every item type Nucleic reads; everything else is skipped.
#[derive(Debug, Default)]
pub(crate) struct Item {
    pub id: Option<String>,
    pub kind: Option<String>,
    pub text: Option<String>,
    pub summary: Option<Value>,
    pub content: Option<Value>,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub aggregated_output: Option<String>,
    pub exit_code: Option<i64>,
    pub status: Option<String>,
    pub changes: Option<Value>,
    pub server: Option<String>,
    pub tool: Option<String>,
    pub arguments: Option<Value>,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub query: Option<String>,
    pub action: Option<Value>,
    pub message: Option<String>,
}

/// Keys of [`Item`], in both spellings.
enum Field {
    Id,
    Kind,
    Text,
    Summary,
    Content,
    Command,
    Cwd,
    AggregatedOutput,
    ExitCode,
    Status,
    Changes,
    Server,
    Tool,
    Arguments,
    Result,
    Error,
    Query,
    Action,
    Message,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an item key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                Ok(match key {
                    "id" => Field::Id,
                    "type" => Field::Kind,
                    "text" => Field::Text,
                    "summary" => Field::Summary,
                    "content" => Field::Content,
                    "command" => Field::Command,
                    "cwd" => Field::Cwd,
                    "aggregated_output" | "aggregatedOutput" => Field::AggregatedOutput,
                    "exit_code" | "exitCode" => Field::ExitCode,
                    "status" => Field::Status,
                    "changes" => Field::Changes,
                    "server" => Field::Server,
                    "tool" => Field::Tool,
                    "arguments" => Field::Arguments,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    "query" => Field::Query,
                    "action" => Field::Action,
                    "message" => Field::Message,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

/// Reads the next value into `slot` unless an earlier key already filled it.
fn fill<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        map.next_value::<IgnoredAny>()?;
    } else {
        *slot = map.next_value()?;
    }
    Ok(())
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a thread item object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                let mut it = Item::default();
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Id => fill(&mut it.id, &mut map)?,
                        Field::Kind => fill(&mut it.kind, &mut map)?,
                        Field::Text => fill(&mut it.text, &mut map)?,
                        Field::Summary => fill(&mut it.summary, &mut map)?,
                        Field::Content => fill(&mut it.content, &mut map)?,
                        Field::Command => fill(&mut it.command, &mut map)?,
                        Field::Cwd => fill(&mut it.cwd, &mut map)?,
                        Field::AggregatedOutput => fill(&mut it.aggregated_output, &mut map)?,
                        Field::ExitCode => fill(&mut it.exit_code, &mut map)?,
                        Field::Status => fill(&mut it.status, &mut map)?,
                        Field::Changes => fill(&mut it.changes, &mut map)?,
                        Field::Server => fill(&mut it.server, &mut map)?,
                        Field::Tool => fill(&mut it.tool, &mut map)?,
                        Field::Arguments => fill(&mut it.arguments, &mut map)?,
                        Field::Result => fill(&mut it.result, &mut map)?,
                        Field::Error => fill(&mut it.error, &mut map)?,
                        Field::Query => fill(&mut it.query, &mut map)?,
                        Field::Action => fill(&mut it.action, &mut map)?,
                        Field::Message => fill(&mut it.message, &mut map)?,
                        Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(it)
            }
        }
        d.deserialize_map(ItemVisitor)
    }
}

/// The tool-like item types, whatever the spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    Command,
    FileChange,
    Mcp,
    WebSearch,
}

impl ToolKind {
    pub(crate) fn of(kind: &str) -> Option<ToolKind> {
        match kind {
            "command_execution" | "commandExecution" => Some(ToolKind::Command),
            "file_change" | "fileChange" => Some(ToolKind::FileChange),
            "mcp_tool_call" | "mcpToolCall" => Some(ToolKind::Mcp),
            "web_search" | "webSearch" => Some(ToolKind::WebSearch),
            _ => None,
        }
    }

    /// The call's input is complete when the item starts (a web search's query only arrives
    /// with its completion).
    pub(crate) fn input_final_at_start(self) -> bool {
        self != ToolKind::WebSearch
    }
}

/// `{"command": …, "cwd": …}`, without the fields codex did not send.
pub(crate) fn command_input(command: Option<&str>, cwd: Option<&str>) -> Value {
    let mut input = Map::new();
    if let Some(command) = command {
        input.insert("command".to_owned(), Value::String(command.to_owned()));
    }
    if let Some(cwd) = cwd {
        input.insert("cwd".to_owned(), Value::String(cwd.to_owned()));
    }
    Value::Object(input)
}

/// `{"changes": …}` (paths and kinds; app-server adds each file's diff).
pub(crate) fn patch_input(changes: Option<&Value>) -> Value {
    json!({ "changes": changes.cloned().unwrap_or_else(|| Value::Array(Vec::new())) })
}

impl Item {
    pub(crate) fn id(&self) -> String {
        self.id.clone().unwrap_or_default()
    }

    /// The tool call this item stands for.
    pub(crate) fn tool_call(&self, kind: ToolKind) -> ToolCall {
        let (name, input) = match kind {
            ToolKind::Command => {
                (SHELL_TOOL.to_owned(), command_input(self.command.as_deref(), self.cwd.as_deref()))
            }
            ToolKind::FileChange => (PATCH_TOOL.to_owned(), patch_input(self.changes.as_ref())),
            ToolKind::Mcp => (
                format!(
                    "mcp__{}__{}",
                    self.server.as_deref().unwrap_or_default(),
                    self.tool.as_deref().unwrap_or_default()
                ),
                self.arguments.clone().unwrap_or(Value::Null),
            ),
            ToolKind::WebSearch => {
                let mut input = Map::new();
                if let Some(query) = self.query.as_ref().filter(|q| !q.is_empty()) {
                    input.insert("query".to_owned(), Value::String(query.clone()));
                }
                if let Some(action) = &self.action {
                    input.insert("action".to_owned(), action.clone());
                }
                (WEB_SEARCH_TOOL.to_owned(), Value::Object(input))
            }
        };
        ToolCall { tool_call_id: self.id(), name, input, parent_tool_call_id: None }
    }

    /// The result of a completed tool item. `streamed_output` stands in for a command's
    /// `aggregatedOutput` when codex left it null (it does for unified-exec commands).
    pub(crate) fn tool_result(&self, kind: ToolKind, streamed_output: Option<&str>) -> ToolResult {
        let status = self.status.as_deref().unwrap_or("completed");
        let ok = status == "completed";
        let (content, is_error) = match kind {
            ToolKind::Command => {
                let output = self.aggregated_output.as_deref().or(streamed_output);
                let text = match (status, self.exit_code) {
                    ("declined", _) => "Command declined.".to_owned(),
                    (_, Some(code)) => {
                        format!("Exit code: {code}\nOutput:\n{}", output.unwrap_or_default())
                    }
                    (_, None) if ok => format!("Output:\n{}", output.unwrap_or_default()),
                    (_, None) => match output.filter(|o| !o.is_empty()) {
                        Some(output) => format!("Command {status}.\nOutput:\n{output}"),
                        None => format!("Command {status}."),
                    },
                };
                (Value::String(text), !ok || self.exit_code.is_some_and(|c| c != 0))
            }
            ToolKind::FileChange => {
                let text = if ok {
                    let mut text = "Success. Updated the following files:\n".to_owned();
                    for change in
                        self.changes.as_ref().and_then(Value::as_array).into_iter().flatten()
                    {
                        let path = change.get("path").and_then(Value::as_str).unwrap_or_default();
                        text.push_str(change_letter(change.get("kind")));
                        text.push(' ');
                        text.push_str(path);
                        text.push('\n');
                    }
                    text
                } else {
                    format!("Patch {status}.")
                };
                (Value::String(text), !ok)
            }
            ToolKind::Mcp => {
                let error = self.error.as_ref().filter(|e| !e.is_null());
                match (error, self.result.as_ref().filter(|r| !r.is_null())) {
                    (Some(e), _) => {
                        let message = e
                            .get("message")
                            .and_then(Value::as_str)
                            .map_or_else(|| e.to_string(), str::to_owned);
                        (Value::String(message), true)
                    }
                    (None, Some(r)) => {
                        (r.get("content").cloned().unwrap_or_else(|| r.clone()), !ok)
                    }
                    (None, None) => (Value::String(format!("MCP call {status}.")), !ok),
                }
            }
            ToolKind::WebSearch => (self.action.clone().unwrap_or(Value::Null), false),
        };
        ToolResult { tool_call_id: self.id(), content, is_error }
    }

    /// Reasoning text: exec's `text`, or app-server's summary parts (then raw content).
    pub(crate) fn reasoning_text(&self) -> String {
        if let Some(text) = &self.text {
            return text.clone();
        }
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|p| {
                            p.as_str().or_else(|| p.get("text").and_then(Value::as_str))
                        })
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let summary = strings(self.summary.as_ref());
        if summary.is_empty() { strings(self.content.as_ref()) } else { summary }.join("\n\n")
    }
}

/// `A`/`M`/`D` for a change kind: exec's `"add"` or app-server's `{"type": "add"}`.
fn change_letter(kind: Option<&Value>) -> &'static str {
    let kind = kind.and_then(|k| k.as_str().or_else(|| k.get("type").and_then(Value::as_str)));
    match kind {
        Some("add") => "A",
        Some("delete") => "D",
        _ => "M",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_id_keeps_the_first_and_unknown_keys_are_skipped() {
        let item: Item = serde_json::from_str(
            r#"{"id":"item_0","type":"web_search","id":"ws_1","query":"q","extra":{"a":[1]}}"#,
        )
        .unwrap();
        assert_eq!(item.id.as_deref(), Some("item_0"));
        assert_eq!(item.query.as_deref(), Some("q"));
    }

    #[test]
    fn both_spellings_fill_the_same_fields() {
        let exec: Item =
            serde_json::from_str(r#"{"aggregated_output":"x","exit_code":2}"#).unwrap();
        let app: Item = serde_json::from_str(r#"{"aggregatedOutput":"x","exitCode":2}"#).unwrap();
        assert_eq!(
            (exec.aggregated_output, exec.exit_code),
            (app.aggregated_output, app.exit_code)
        );
    }

    #[test]
    fn command_results_carry_exit_code_and_error_flag() {
        let item: Item = serde_json::from_str(
            r#"{"id":"c","type":"commandExecution","status":"failed","exitCode":1,"aggregatedOutput":null}"#,
        )
        .unwrap();
        let result = item.tool_result(ToolKind::Command, Some("boom\n"));
        assert_eq!(result.content, Value::String("Exit code: 1\nOutput:\nboom\n".into()));
        assert!(result.is_error);
    }
}
