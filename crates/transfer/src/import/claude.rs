//! Converting Claude Code's own transcript (`~/.claude/projects/<slug>/<id>.jsonl`) into events.

use std::collections::{HashMap, HashSet};

use nucleic_protocol::{
    Backend, ErrorCode, ErrorEvent, Event, EventKind, RawJson, SessionCreated, TextBlock,
    Timestamp, ToolCall, ToolResult, Usage,
};
use serde_json::{Map, Value};

use super::{ImportedSession, numbered_lines};
use crate::conversation::cut;
use crate::error::{Result, TransferError};
use crate::meta::ImportedMeta;

/// Longest title taken from the first prompt, in characters.
pub const TITLE_LIMIT: usize = 60;
/// Claude Code's model name on messages it made up itself (API errors, interruptions).
const SYNTHETIC_MODEL: &str = "<synthetic>";

type Object = Map<String, Value>;

/// Converts a Claude Code transcript into events of the read-only Nucleic session `session_id`:
/// a `sessionCreated` (title = first prompt, cwd, `readOnly`), then per line, in order: user text
/// → `userText`; assistant blocks → `assistantText` / `thinking` / `toolCallStarted` +
/// `toolCallCompleted` (as the live adapter does for a whole `tool_use`); `tool_result` blocks →
/// `toolResult`; the usage of each API message → `usage` (once, on its last line); any other line
/// (`attachment`, `queue-operation`, `tools-used`, `last-prompt`, `api-request*`, `cost-state`,
/// `atis-latch`, meta or sidechain user text, unknown blocks, …) → `raw`, verbatim. A line that is
/// not a JSON object becomes `raw` + `error` (decode); a torn last line is skipped. `at` is the
/// line's `timestamp`, else the previous event's; `nativeType` is the line's `type`.
pub fn claude_transcript(text: &str, session_id: &str) -> Result<ImportedSession> {
    let (numbered, ends_with_newline) = numbered_lines(text);
    let mut lines: Vec<(usize, &str, Option<Object>, Option<String>)> = Vec::new();
    let mut torn_tail = false;
    for (i, &(number, line)) in numbered.iter().enumerate() {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => lines.push((number, line, Some(obj), None)),
            Ok(_) => lines.push((number, line, None, Some("not a JSON object".into()))),
            Err(_) if i + 1 == numbered.len() && !ends_with_newline => torn_tail = true,
            Err(e) => lines.push((number, line, None, Some(e.to_string()))),
        }
    }
    let Some(first) = lines.iter().find_map(|l| l.2.as_ref()) else {
        return Err(TransferError::NotAClaudeTranscript { why: "no line is a JSON object".into() });
    };
    if first.contains_key("seq") && first.contains_key("kind") {
        return Err(TransferError::NotAClaudeTranscript {
            why: "these are Nucleic events; import them as a Nucleic export".into(),
        });
    }
    let objects = || lines.iter().filter_map(|l| l.2.as_ref());
    let meta = scan(objects());
    let first_at = objects().find_map(timestamp).unwrap_or(Timestamp::from_unix_millis(0));
    // The usage of an API message is reported once, on the last line carrying that message.
    let mut last_line_of: HashMap<&str, usize> = HashMap::new();
    for (i, obj) in lines.iter().enumerate().filter_map(|(i, l)| Some((i, l.2.as_ref()?))) {
        if str_at(obj, "type") == Some("assistant")
            && let Some(id) = obj.get("message").and_then(|m| str_at(m, "id"))
        {
            last_line_of.insert(id, i);
        }
    }

    let mut b = Builder { session_id, events: Vec::new(), at: first_at, started: HashSet::new() };
    let title = objects()
        .find_map(prompt_text)
        .map_or_else(|| "Imported Claude Code session".to_owned(), |p| short_title(&p));
    b.push(
        None,
        EventKind::SessionCreated(SessionCreated {
            title: title.clone(),
            project_id: None,
            project_root: None,
            cwd: meta.cwd.clone().unwrap_or_default(),
            worktree: None,
            model: meta.model.clone(),
            permission_mode: objects().find_map(|o| str_at(o, "permissionMode")).map(Into::into),
            read_only: true,
            continues_session_id: None,
            created_by: None,
            parent_session_id: None,
            mode: None,
        }),
    );
    for (i, (number, line, obj, error)) in lines.iter().enumerate() {
        let Some(obj) = obj else {
            b.push(Some("invalid".into()), EventKind::raw(RawJson::from_any_text(line)));
            let detail = error.as_deref().unwrap_or("unreadable");
            b.push(
                Some("invalid".into()),
                EventKind::Error(ErrorEvent {
                    code: ErrorCode::Decode,
                    message: format!("transcript line {number} is not a JSON object: {detail}"),
                    http_status: None,
                }),
            );
            continue;
        };
        if let Some(at) = timestamp(obj) {
            b.at = at;
        }
        let native_type = native_type(obj);
        let kinds = match str_at(obj, "type") {
            Some("user") => user(obj, line),
            Some("assistant") => {
                let is_last = obj
                    .get("message")
                    .and_then(|m| str_at(m, "id"))
                    .is_none_or(|id| last_line_of.get(id) == Some(&i));
                b.assistant(obj, line, is_last)
            }
            _ => vec![EventKind::raw(RawJson::from_any_text(line))],
        };
        for kind in kinds {
            b.push(native_type.clone(), kind);
        }
    }

    let mut meta = ImportedMeta { title: Some(title), ..meta };
    meta.session_id = Some(session_id.to_owned());
    meta.backend = Some(Backend::ClaudeCode);
    meta.fill_from_events(&b.events);
    Ok(ImportedSession { meta, events: b.events, source_lines: lines.len(), torn_tail })
}

struct Builder<'a> {
    session_id: &'a str,
    events: Vec<Event>,
    at: Timestamp,
    started: HashSet<String>,
}

impl Builder<'_> {
    fn push(&mut self, native_type: Option<String>, kind: EventKind) {
        self.events.push(Event {
            seq: self.events.len() as u64 + 1,
            at: self.at,
            session_id: self.session_id.to_owned(),
            backend: Backend::ClaudeCode,
            native_type,
            origin: None,
            kind,
        });
    }

    fn assistant(&mut self, obj: &Object, line: &str, is_last: bool) -> Vec<EventKind> {
        let message = obj.get("message");
        let message_id = message.and_then(|m| str_at(m, "id")).unwrap_or_default().to_owned();
        let api_error = obj.get("isApiErrorMessage").and_then(Value::as_bool).unwrap_or(false);
        let text = |text: &str| TextBlock {
            is_partial: false,
            message_id: message_id.clone(),
            text: text.to_owned(),
        };
        let mut kinds = Vec::new();
        let mut unmapped = false;
        for block in blocks(message.and_then(|m| m.get("content"))) {
            match (str_at(&block, "type"), api_error) {
                (Some("text"), true) => kinds.push(EventKind::Error(ErrorEvent {
                    code: ErrorCode::ApiError,
                    message: str_at(&block, "text").unwrap_or_default().to_owned(),
                    http_status: None,
                })),
                (Some("text"), false) => {
                    kinds.push(EventKind::AssistantText(text(str_at(&block, "text").unwrap_or(""))))
                }
                (Some("thinking"), _) => {
                    kinds.push(EventKind::Thinking(text(str_at(&block, "thinking").unwrap_or(""))))
                }
                (Some("tool_use"), _) => {
                    let call = ToolCall {
                        tool_call_id: str_at(&block, "id").unwrap_or_default().to_owned(),
                        name: str_at(&block, "name").unwrap_or_default().to_owned(),
                        input: block.get("input").cloned().unwrap_or(Value::Object(Map::new())),
                        parent_tool_call_id: None,
                    };
                    if self.started.insert(call.tool_call_id.clone()) {
                        kinds.push(EventKind::ToolCallStarted(call.clone()));
                    }
                    kinds.push(EventKind::ToolCallCompleted(call));
                }
                _ => unmapped = true,
            }
        }
        if unmapped || kinds.is_empty() {
            kinds.push(EventKind::raw(RawJson::from_any_text(line)));
        }
        let model = message.and_then(|m| str_at(m, "model"));
        if let Some(usage) = message.and_then(|m| m.get("usage")).filter(|_| is_last)
            && model != Some(SYNTHETIC_MODEL)
        {
            let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            kinds.push(EventKind::Usage(Usage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                cached_input_tokens: n("cache_read_input_tokens")
                    + n("cache_creation_input_tokens"),
                cost_usd: None,
            }));
        }
        kinds
    }
}

/// A `user` line: typed text → `userText`, tool results → `toolResult`; everything else (CLI-made
/// text: `isMeta`, sidechain prompts, interruption notes; images; unknown blocks) keeps the line raw.
fn user(obj: &Object, line: &str) -> Vec<EventKind> {
    let message_id = str_at(obj, "uuid").unwrap_or_default();
    let made_by_cli = ["isMeta", "isSidechain", "isCompactSummary"]
        .iter()
        .any(|k| obj.get(*k).and_then(Value::as_bool).unwrap_or(false));
    let mut kinds = Vec::new();
    let mut unmapped = false;
    for block in blocks(obj.get("message").and_then(|m| m.get("content"))) {
        match str_at(&block, "type") {
            Some("text") => match str_at(&block, "text") {
                Some(t) if !made_by_cli && !t.starts_with("[Request interrupted") => {
                    kinds.push(EventKind::UserText(TextBlock {
                        is_partial: false,
                        message_id: message_id.to_owned(),
                        text: t.to_owned(),
                    }));
                }
                _ => unmapped = true,
            },
            Some("tool_result") => kinds.push(EventKind::ToolResult(ToolResult {
                tool_call_id: str_at(&block, "tool_use_id").unwrap_or_default().to_owned(),
                content: block.get("content").cloned().unwrap_or(Value::Null),
                is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            })),
            _ => unmapped = true,
        }
    }
    if unmapped || kinds.is_empty() {
        kinds.push(EventKind::raw(RawJson::from_any_text(line)));
    }
    kinds
}

/// A message's content as blocks (a bare string is one text block).
fn blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => {
            vec![serde_json::json!({ "type": "text", "text": text })]
        }
        _ => Vec::new(),
    }
}

/// The text of the first prompt a person typed, if this line is one.
fn prompt_text(obj: &Object) -> Option<String> {
    if str_at(obj, "type") != Some("user") {
        return None;
    }
    user(obj, "{}").into_iter().find_map(|k| match k {
        EventKind::UserText(t) if !t.text.trim().is_empty() => Some(t.text),
        _ => None,
    })
}

/// One line of at most [`TITLE_LIMIT`] characters: whitespace collapsed, `…` when cut.
pub(super) fn short_title(prompt: &str) -> String {
    let flat = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= TITLE_LIMIT {
        return flat;
    }
    format!("{}…", cut(&flat, TITLE_LIMIT - 1).trim_end())
}

/// What the lines say about the session itself.
fn scan<'a>(objects: impl Iterator<Item = &'a Object>) -> ImportedMeta {
    let mut meta = ImportedMeta::default();
    for obj in objects {
        if let Some(id) = str_at(obj, "sessionId") {
            meta.backend_session_id.get_or_insert_with(|| id.to_owned());
        }
        if let Some(cwd) = str_at(obj, "cwd") {
            meta.cwd.get_or_insert_with(|| cwd.to_owned());
        }
        if let Some(branch) = str_at(obj, "gitBranch").filter(|b| !b.is_empty()) {
            meta.branch = Some(branch.to_owned());
        }
        if let Some(version) = str_at(obj, "version") {
            meta.agent_version = Some(version.to_owned());
        }
        let model = obj.get("message").and_then(|m| str_at(m, "model"));
        if let Some(model) = model.filter(|m| *m != SYNTHETIC_MODEL) {
            meta.model = Some(model.to_owned());
        }
    }
    meta
}

/// `type`, or `type/subtype` when the line has a subtype (as the live decoder names them).
fn native_type(obj: &Object) -> Option<String> {
    let t = str_at(obj, "type")?;
    Some(match str_at(obj, "subtype") {
        Some(sub) => format!("{t}/{sub}"),
        None => t.to_owned(),
    })
}

fn timestamp(obj: &Object) -> Option<Timestamp> {
    str_at(obj, "timestamp").and_then(|t| Timestamp::parse(t).ok())
}

fn str_at<'a>(value: &'a (impl Lookup + ?Sized), key: &str) -> Option<&'a str> {
    value.lookup(key).and_then(Value::as_str)
}

/// Field access shared by JSON objects and values.
trait Lookup {
    fn lookup(&self, key: &str) -> Option<&Value>;
}

impl Lookup for Object {
    fn lookup(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl Lookup for Value {
    fn lookup(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}
