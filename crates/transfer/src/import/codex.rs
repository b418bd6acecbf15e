//! Converting a Codex rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`) into events.

use nucleic_protocol::{
    Backend, ErrorCode, ErrorEvent, Event, EventKind, RawJson, SessionCreated, SessionStarted,
    TextBlock, Timestamp, ToolCall, ToolResult, TurnCompleted, Usage,
};
use serde_json::{Map, Value, json};

use super::claude::short_title;
use super::{ImportedSession, numbered_lines};
use crate::error::{Result, TransferError};
use crate::meta::ImportedMeta;

/// One input line: number, text, the object it parsed to, or why it did not.
type Line<'a> = (usize, &'a str, Option<Map<String, Value>>, Option<String>);

/// Converts a Codex rollout into events of the read-only Nucleic session `session_id`. Each line
/// is `{"timestamp", "type", "payload"}`; the conversation is read from the `response_item`
/// lines (the Responses API items codex sent and received), turn ends and usage from `event_msg`:
///
/// - `session_meta` → `sessionStarted` (thread id, cwd, CLI version; model from `turn_context`);
/// - `response_item/message`: a person's text → `userText` (codex's own `<environment_context>`
///   and similar wrappers, and developer messages, stay raw), assistant text → `assistantText`;
/// - `response_item/reasoning` → `thinking` (its summary);
/// - `function_call` / `custom_tool_call` / `web_search_call` → `toolCallStarted` +
///   `toolCallCompleted` (`exec_command` is tool `shell` with input `{command}`, as live; MCP
///   calls `mcp__<server>__<tool>`; `apply_patch` keeps its patch text as `{patch}`);
/// - `*_call_output` → `toolResult` (an error when the output reports a non-zero exit or a
///   rejection);
/// - `event_msg/task_complete` → `turnCompleted`, `event_msg/turn_aborted` → `turnCompleted`
///   (`interrupted`), `event_msg/token_count` → `usage` of that model request,
///   `event_msg/error` → `error`;
/// - everything else (`turn_context`, `world_state`, `token_usage_record`, other `event_msg`s)
///   → `raw`, verbatim. A line that is not a JSON object becomes `raw` + `error` (decode); a torn
///   last line is skipped. `at` is the line's `timestamp`; `nativeType` is `type[/payload.type]`.
pub fn codex_rollout(text: &str, session_id: &str) -> Result<ImportedSession> {
    let (numbered, ends_with_newline) = numbered_lines(text);
    let mut lines: Vec<Line<'_>> = Vec::new();
    let mut torn_tail = false;
    for (i, &(number, line)) in numbered.iter().enumerate() {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => lines.push((number, line, Some(obj), None)),
            Ok(_) => lines.push((number, line, None, Some("not a JSON object".into()))),
            Err(_) if i + 1 == numbered.len() && !ends_with_newline => torn_tail = true,
            Err(e) => lines.push((number, line, None, Some(e.to_string()))),
        }
    }
    let objects = || lines.iter().filter_map(|l| l.2.as_ref());
    let Some(meta_line) = objects().find(|o| str_at(o, "type") == Some("session_meta")) else {
        return Err(TransferError::NotACodexRollout { why: "no session_meta line".into() });
    };
    let session = meta_line.get("payload").cloned().unwrap_or(Value::Null);
    let model = objects()
        .filter(|o| str_at(o, "type") == Some("turn_context"))
        .find_map(|o| o.get("payload").and_then(|p| p.get("model")).and_then(Value::as_str))
        .map(str::to_owned);
    let title = objects()
        .find_map(|o| person_text(o.get("payload")?))
        .map_or_else(|| "Imported Codex session".to_owned(), |p| short_title(&p));
    let first_at = objects().find_map(timestamp).unwrap_or(Timestamp::from_unix_millis(0));
    let cwd = session.get("cwd").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut b = Builder { session_id, events: Vec::new(), at: first_at };
    b.push(
        None,
        EventKind::SessionCreated(SessionCreated {
            title: title.clone(),
            project_id: None,
            project_root: None,
            cwd: cwd.clone(),
            worktree: None,
            model: model.clone(),
            permission_mode: None,
            read_only: true,
            continues_session_id: None,
            created_by: None,
            parent_session_id: None,
            mode: None,
        }),
    );
    for (number, line, obj, error) in &lines {
        let Some(obj) = obj else {
            b.push(Some("invalid".into()), EventKind::raw(RawJson::from_any_text(line)));
            let detail = error.as_deref().unwrap_or("unreadable");
            b.push(
                Some("invalid".into()),
                EventKind::Error(ErrorEvent {
                    code: ErrorCode::Decode,
                    message: format!("rollout line {number} is not a JSON object: {detail}"),
                    http_status: None,
                }),
            );
            continue;
        };
        if let Some(at) = timestamp(obj) {
            b.at = at;
        }
        let payload = obj.get("payload").unwrap_or(&Value::Null);
        let line_type = str_at(obj, "type").unwrap_or_default();
        let payload_type = payload.get("type").and_then(Value::as_str);
        let native = match payload_type {
            Some(t) if line_type != "session_meta" => format!("{line_type}/{t}"),
            _ => line_type.to_owned(),
        };
        let raw = || vec![EventKind::raw(RawJson::from_any_text(line))];
        let kinds = match (line_type, payload_type) {
            ("session_meta", _) => vec![EventKind::SessionStarted(SessionStarted {
                backend_session_id: str_of(&session, "id"),
                cwd: cwd.clone(),
                model: model.clone().unwrap_or_default(),
                tool_names: Vec::new(),
                permission_mode: None,
                agent_version: session.get("cli_version").and_then(Value::as_str).map(Into::into),
            })],
            ("response_item", Some(t)) => response_item(t, payload).unwrap_or_else(raw),
            ("event_msg", Some(t)) => event_msg(t, payload).unwrap_or_else(raw),
            _ => raw(),
        };
        for kind in kinds {
            b.push(Some(native.clone()), kind);
        }
    }
    let mut meta = ImportedMeta {
        title: Some(title),
        backend_session_id: session.get("id").and_then(Value::as_str).map(Into::into),
        agent_version: session.get("cli_version").and_then(Value::as_str).map(Into::into),
        model,
        cwd: Some(cwd),
        ..ImportedMeta::default()
    };
    meta.session_id = Some(session_id.to_owned());
    meta.backend = Some(Backend::Codex);
    meta.fill_from_events(&b.events);
    Ok(ImportedSession { meta, events: b.events, source_lines: lines.len(), torn_tail })
}

struct Builder<'a> {
    session_id: &'a str,
    events: Vec<Event>,
    at: Timestamp,
}

impl Builder<'_> {
    fn push(&mut self, native_type: Option<String>, kind: EventKind) {
        self.events.push(Event {
            seq: self.events.len() as u64 + 1,
            at: self.at,
            session_id: self.session_id.to_owned(),
            backend: Backend::Codex,
            native_type,
            origin: None,
            kind,
        });
    }
}

/// A Responses API item; `None` keeps the line raw.
fn response_item(item_type: &str, p: &Value) -> Option<Vec<EventKind>> {
    let id = str_of(p, "id");
    let block = |text: String| TextBlock { is_partial: false, message_id: id.clone(), text };
    match item_type {
        "message" => match p.get("role").and_then(Value::as_str) {
            Some("user") => person_text(p).map(|t| vec![EventKind::UserText(block(t))]),
            Some("assistant") => {
                let text = texts(p.get("content"), "output_text");
                (!text.is_empty()).then(|| vec![EventKind::AssistantText(block(text))])
            }
            _ => None,
        },
        "reasoning" => {
            let text = texts(p.get("summary"), "summary_text");
            (!text.is_empty()).then(|| vec![EventKind::Thinking(block(text))])
        }
        "function_call" | "custom_tool_call" | "web_search_call" => {
            let call = tool_call(item_type, p);
            Some(vec![EventKind::ToolCallStarted(call.clone()), EventKind::ToolCallCompleted(call)])
        }
        "function_call_output" | "custom_tool_call_output" => {
            let output = p.get("output").cloned().unwrap_or(Value::Null);
            let text = output.as_str().unwrap_or_default();
            Some(vec![EventKind::ToolResult(ToolResult {
                tool_call_id: str_of(p, "call_id"),
                is_error: output_is_error(text),
                content: output,
            })])
        }
        _ => None,
    }
}

fn tool_call(item_type: &str, p: &Value) -> ToolCall {
    let name = str_of(p, "name");
    let (name, input) = match item_type {
        "function_call" => {
            let args: Value = p
                .get("arguments")
                .and_then(Value::as_str)
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null);
            match (p.get("namespace").and_then(Value::as_str), name.as_str()) {
                (Some(ns), _) => (format!("{ns}__{name}"), args),
                (None, "exec_command") => ("shell".to_owned(), json!({"command": args["cmd"]})),
                (None, "shell") => ("shell".to_owned(), json!({"command": args["command"]})),
                _ => (name, args),
            }
        }
        "custom_tool_call" => (name, json!({"patch": p.get("input").cloned().unwrap_or_default()})),
        _ => ("web_search".to_owned(), p.get("action").cloned().unwrap_or(Value::Null)),
    };
    let id = p.get("call_id").or_else(|| p.get("id"));
    ToolCall {
        tool_call_id: id.and_then(Value::as_str).unwrap_or_default().to_owned(),
        name,
        input,
        parent_tool_call_id: None,
    }
}

/// An `event_msg`; `None` keeps the line raw.
fn event_msg(msg_type: &str, p: &Value) -> Option<Vec<EventKind>> {
    let turn = |reason: &str, result: Option<String>, is_error: bool| {
        EventKind::TurnCompleted(TurnCompleted {
            stop_reason: None,
            usage: Usage::default(),
            is_error,
            terminal_reason: Some(reason.to_owned()),
            result,
            duration_ms: p.get("duration_ms").and_then(Value::as_u64),
        })
    };
    match msg_type {
        "task_complete" => {
            let last = p.get("last_agent_message").and_then(Value::as_str).map(Into::into);
            Some(vec![turn("completed", last, false)])
        }
        "turn_aborted" => Some(vec![turn("interrupted", None, false)]),
        "token_count" => {
            let last = p.get("info")?.get("last_token_usage")?;
            let n = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
            Some(vec![EventKind::Usage(Usage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                cached_input_tokens: n("cached_input_tokens"),
                cost_usd: None,
            })])
        }
        "error" => Some(vec![EventKind::Error(ErrorEvent {
            code: ErrorCode::ApiError,
            message: str_of(p, "message"),
            http_status: None,
        })]),
        _ => None,
    }
}

/// What a person typed, if this item is a user message that is not one of codex's own wrappers
/// (`<environment_context>`, `<turn_aborted>`, …).
fn person_text(p: &Value) -> Option<String> {
    if p.get("type").and_then(Value::as_str) != Some("message")
        || p.get("role").and_then(Value::as_str) != Some("user")
    {
        return None;
    }
    let text = texts(p.get("content"), "input_text");
    let trimmed = text.trim_start();
    (!trimmed.is_empty() && !trimmed.starts_with('<')).then_some(text)
}

/// The `text` of every part of type `part_type`, joined.
fn texts(parts: Option<&Value>, part_type: &str) -> String {
    parts
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some(part_type))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// codex's tool output text: "Process exited with code N" / "Exit code: N", or a rejection.
fn output_is_error(text: &str) -> bool {
    let code = ["Process exited with code ", "Exit code: "].iter().find_map(|prefix| {
        let (_, rest) = text.split_once(prefix)?;
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse::<i64>().ok()
    });
    match code {
        Some(code) => code != 0,
        None => text.contains("rejected") || text.starts_with("failed"),
    }
}

fn timestamp(obj: &Map<String, Value>) -> Option<Timestamp> {
    str_at(obj, "timestamp").and_then(|t| Timestamp::parse(t).ok())
}

fn str_at<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

fn str_of(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, payload: Value) -> String {
        json!({"timestamp": "2026-11-29T19:52:44.404Z", "type": kind, "payload": payload})
            .to_string()
    }

    #[test]
    fn a_small_rollout_maps_to_the_live_kinds() {
        let text = [
            line("session_meta", json!({"id": "t1", "cwd": "/w", "cli_version": "0.171.0"})),
            line("turn_context", json!({"model": "gpt-5.5", "approval_policy": "untrusted"})),
            line("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]})),
            line("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make a file"}]})),
            line("response_item", json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"touch a\"}", "call_id": "c1"})),
            line("response_item", json!({"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 1\nOutput:\nnope"})),
            line("response_item", json!({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c2"})),
            line("response_item", json!({"type": "custom_tool_call_output", "call_id": "c2", "output": "Exit code: 0\nOutput:\nSuccess."})),
            line("response_item", json!({"type": "message", "role": "assistant", "id": "m1", "content": [{"type": "output_text", "text": "done"}]})),
            line("event_msg", json!({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 5, "output_tokens": 2, "cached_input_tokens": 1}}})),
            line("event_msg", json!({"type": "task_complete", "last_agent_message": "done", "duration_ms": 9})),
            "{\"type\": \"torn".to_owned(),
        ]
        .join("\n");
        let imported = codex_rollout(&text, "s1").unwrap();
        assert!(imported.torn_tail);
        let kinds: Vec<&str> = imported.events.iter().map(|e| e.kind.type_name()).collect();
        assert_eq!(
            kinds,
            [
                "sessionCreated",
                "sessionStarted",
                "raw",
                "raw",
                "userText",
                "toolCallStarted",
                "toolCallCompleted",
                "toolResult",
                "toolCallStarted",
                "toolCallCompleted",
                "toolResult",
                "assistantText",
                "usage",
                "turnCompleted"
            ]
        );
        let EventKind::ToolCallStarted(call) = &imported.events[5].kind else { unreachable!() };
        assert_eq!((call.name.as_str(), &call.input), ("shell", &json!({"command": "touch a"})));
        let results: Vec<bool> = imported
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolResult(r) => Some(r.is_error),
                _ => None,
            })
            .collect();
        assert_eq!(results, [true, false]);
        assert_eq!(imported.meta.title.as_deref(), Some("make a file"));
        assert_eq!(imported.meta.backend_session_id.as_deref(), Some("t1"));
        assert_eq!(imported.meta.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(imported.meta.backend, Some(Backend::Codex));
        assert!(imported.events.iter().all(|e| e.backend == Backend::Codex));
    }

    #[test]
    fn text_without_session_meta_is_refused() {
        let err = codex_rollout("{\"type\":\"user\"}\n", "s").unwrap_err();
        assert!(err.to_string().contains("session_meta"), "{err}");
    }
}
