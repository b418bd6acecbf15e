//! A Nucleic event as ACP session updates: text and thoughts as chunks (a message streamed in
//! parts is not sent again whole), tool calls with their kind, title, locations, diffs and
//! status, Claude's `TodoWrite` as a plan, mode switches; the permission options and what
//! each one decides; the stop reason of a turn. Pure: the follower sends what this returns.

use std::collections::{HashMap, HashSet};

use agent_client_protocol::v1::schema as acp;
use nucleic_protocol::{Decision, DecisionKind, EventKind, ToolCall, TurnCompleted};
use serde_json::{Value, json};

/// The longest tool output sent as a tool call's content (the rest is cut, saying so).
pub(crate) const MAX_OUTPUT_CHARS: usize = 64 * 1024;

/// Claude Code's task list tool: its input is the plan.
const TODO_WRITE: &str = "TodoWrite";

/// What the translation remembers between events of one session.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    /// Messages (by id) whose text or thoughts came in parts: their whole copy is not resent.
    streamed: HashSet<String>,
    /// The tool call of each approval request.
    call_of_request: HashMap<String, String>,
    /// `TodoWrite` calls: a plan, not a tool call.
    plans: HashSet<String>,
}

fn text(chunk: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::from(chunk.to_owned()))
}

impl Translator {
    /// The updates `kind` makes (none for most of the host's own events).
    pub(crate) fn updates(&mut self, kind: &EventKind) -> Vec<acp::SessionUpdate> {
        use acp::SessionUpdate as U;
        match kind {
            EventKind::UserText(t) => vec![U::UserMessageChunk(text(&t.text))],
            EventKind::AssistantText(t) => self
                .chunk(t.is_partial, &t.message_id, &t.text)
                .map(|c| vec![U::AgentMessageChunk(c)])
                .unwrap_or_default(),
            EventKind::Thinking(t) => self
                .chunk(t.is_partial, &format!("thinking:{}", t.message_id), &t.text)
                .map(|c| vec![U::AgentThoughtChunk(c)])
                .unwrap_or_default(),
            EventKind::ToolCallStarted(call) => {
                if call.name == TODO_WRITE {
                    self.plans.insert(call.tool_call_id.clone());
                    return plan(&call.input).map(|p| vec![U::Plan(p)]).unwrap_or_default();
                }
                vec![U::ToolCall(tool_call(call))]
            }
            EventKind::ToolCallCompleted(call) => {
                if self.plans.contains(&call.tool_call_id) {
                    return plan(&call.input).map(|p| vec![U::Plan(p)]).unwrap_or_default();
                }
                vec![U::ToolCallUpdate(acp::ToolCallUpdate::new(
                    call.tool_call_id.clone(),
                    call_fields(call),
                ))]
            }
            EventKind::ToolResult(r) => {
                if self.plans.contains(&r.tool_call_id) {
                    return Vec::new();
                }
                let status = if r.is_error {
                    acp::ToolCallStatus::Failed
                } else {
                    acp::ToolCallStatus::Completed
                };
                let output = output_text(&r.content);
                let mut fields =
                    acp::ToolCallUpdateFields::new().status(status).raw_output(r.content.clone());
                if !output.is_empty() {
                    let block = acp::ContentBlock::from(output);
                    fields = fields
                        .content(vec![acp::ToolCallContent::Content(acp::Content::new(block))]);
                }
                vec![U::ToolCallUpdate(acp::ToolCallUpdate::new(r.tool_call_id.clone(), fields))]
            }
            EventKind::ApprovalRequested(a) => {
                if let Some(call) = &a.tool_call_id {
                    self.call_of_request.insert(a.request_id.clone(), call.clone());
                }
                Vec::new()
            }
            EventKind::ApprovalResolved(r) => {
                let Some(call) = self.call_of_request.remove(&r.request_id) else {
                    return Vec::new();
                };
                let status = match r.decision {
                    DecisionKind::Allow
                    | DecisionKind::AllowEdited
                    | DecisionKind::AllowAlways
                    | DecisionKind::ApprovePlan
                    | DecisionKind::Answered => acp::ToolCallStatus::InProgress,
                    DecisionKind::Deny | DecisionKind::DenyAndStop | DecisionKind::Cancelled => {
                        acp::ToolCallStatus::Failed
                    }
                };
                let fields = acp::ToolCallUpdateFields::new().status(status);
                vec![U::ToolCallUpdate(acp::ToolCallUpdate::new(call, fields))]
            }
            EventKind::SessionUpdated(u) => u
                .mode
                .as_ref()
                .map(|m| vec![U::CurrentModeUpdate(acp::CurrentModeUpdate::new(m.clone()))])
                .unwrap_or_default(),
            EventKind::SessionStarted(_)
            | EventKind::ToolInputDelta(_)
            | EventKind::Usage(_)
            | EventKind::TurnCompleted(_)
            | EventKind::RunFinished(_)
            | EventKind::RateLimit(_)
            | EventKind::ApiRetry(_)
            | EventKind::PermissionDenied(_)
            | EventKind::Confinement(_)
            | EventKind::EgressRefused(_)
            | EventKind::StatusChanged(_)
            | EventKind::SettingsChanged(_)
            | EventKind::InterruptRequested(_)
            | EventKind::Error(_)
            | EventKind::Stderr(_)
            | EventKind::SessionCreated(_)
            | EventKind::WorktreeFinished(_)
            | EventKind::WorktreeReclaimed(_)
            | EventKind::WorktreeRestored(_)
            | EventKind::CheckStarted(_)
            | EventKind::CheckOutput(_)
            | EventKind::CheckFinished(_)
            | EventKind::Report(_)
            | EventKind::PullRequestOpened(_)
            | EventKind::ReviewSent(_)
            | EventKind::Raw(_) => Vec::new(),
        }
    }

    /// A part, or a whole message not already sent in parts.
    fn chunk(&mut self, partial: bool, message: &str, body: &str) -> Option<acp::ContentChunk> {
        if partial {
            self.streamed.insert(message.to_owned());
        } else if self.streamed.contains(message) {
            return None;
        }
        (!body.is_empty()).then(|| text(body))
    }
}

fn str_field<'a>(input: &'a Value, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| input.get(*n).and_then(Value::as_str))
}

/// The ACP kind of a tool, by its name (Claude Code's; Codex's as Nucleic names them:
/// `shell`, `apply_patch`).
pub(crate) fn tool_kind(name: &str) -> acp::ToolKind {
    match name {
        "Read" | "NotebookRead" => acp::ToolKind::Read,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "apply_patch" => acp::ToolKind::Edit,
        "Bash" | "BashOutput" | "KillShell" | "shell" => acp::ToolKind::Execute,
        "Grep" | "Glob" | "LS" => acp::ToolKind::Search,
        "WebFetch" | "WebSearch" => acp::ToolKind::Fetch,
        "Task" => acp::ToolKind::Think,
        "ExitPlanMode" => acp::ToolKind::SwitchMode,
        _ => acp::ToolKind::Other,
    }
}

/// A short title: the command, the file, or the tool's name.
pub(crate) fn title(name: &str, input: &Value) -> String {
    if let Some(command) = str_field(input, &["command"]) {
        return command.chars().take(200).collect();
    }
    match str_field(input, &["file_path", "path", "notebook_path", "pattern", "url", "query"]) {
        Some(target) => format!("{name} {target}"),
        None => name.to_owned(),
    }
}

fn locations(input: &Value) -> Vec<acp::ToolCallLocation> {
    str_field(input, &["file_path", "notebook_path", "path"])
        .map(|p| vec![acp::ToolCallLocation::new(p.to_owned())])
        .unwrap_or_default()
}

/// The diffs a file tool's input proposes (`Write`, `Edit`, `MultiEdit`).
pub(crate) fn diffs(name: &str, input: &Value) -> Vec<acp::ToolCallContent> {
    let Some(path) = str_field(input, &["file_path"]) else { return Vec::new() };
    let diff = |old: Option<&str>, new: &str| {
        let diff = acp::Diff::new(path.to_owned(), new.to_owned()).old_text(old.map(str::to_owned));
        acp::ToolCallContent::Diff(diff)
    };
    match name {
        "Write" => str_field(input, &["content"]).map(|c| vec![diff(None, c)]).unwrap_or_default(),
        "Edit" => match (str_field(input, &["old_string"]), str_field(input, &["new_string"])) {
            (Some(old), Some(new)) => vec![diff(Some(old), new)],
            _ => Vec::new(),
        },
        "MultiEdit" => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| {
                edits
                    .iter()
                    .filter_map(|e| {
                        Some(diff(
                            Some(str_field(e, &["old_string"])?),
                            str_field(e, &["new_string"])?,
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A tool call's fields as an update (title, kind, locations, diffs, input).
pub(crate) fn call_fields(call: &ToolCall) -> acp::ToolCallUpdateFields {
    let content = diffs(&call.name, &call.input);
    acp::ToolCallUpdateFields::new()
        .title(title(&call.name, &call.input))
        .kind(tool_kind(&call.name))
        .locations(locations(&call.input))
        .content((!content.is_empty()).then_some(content))
        .raw_input(call.input.clone())
}

fn tool_call(call: &ToolCall) -> acp::ToolCall {
    acp::ToolCall::new(call.tool_call_id.clone(), title(&call.name, &call.input))
        .name(call.name.clone())
        .kind(tool_kind(&call.name))
        .status(acp::ToolCallStatus::Pending)
        .locations(locations(&call.input))
        .content(diffs(&call.name, &call.input))
        .raw_input(call.input.clone())
}

/// `TodoWrite`'s `todos` as a plan.
fn plan(input: &Value) -> Option<acp::Plan> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|t| {
            let content = str_field(t, &["content"])?;
            let status = match str_field(t, &["status"]) {
                Some("completed") => acp::PlanEntryStatus::Completed,
                Some("in_progress") => acp::PlanEntryStatus::InProgress,
                _ => acp::PlanEntryStatus::Pending,
            };
            Some(acp::PlanEntry::new(content.to_owned(), acp::PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(acp::Plan::new(entries))
}

/// A tool result's text (a string, or text blocks), cut at [`MAX_OUTPUT_CHARS`].
fn output_text(content: &Value) -> String {
    let whole = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| str_field(b, &["text"])).collect::<Vec<_>>().join("\n")
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if whole.chars().count() <= MAX_OUTPUT_CHARS {
        return whole;
    }
    let mut cut: String = whole.chars().take(MAX_OUTPUT_CHARS).collect();
    cut.push_str("\n… (cut; the whole output is in the Nucleic transcript)");
    cut
}

/// The options a permission request offers, by id.
pub(crate) fn permission_options() -> Vec<acp::PermissionOption> {
    use acp::PermissionOptionKind as K;
    vec![
        acp::PermissionOption::new("allow", "Allow", K::AllowOnce),
        acp::PermissionOption::new(
            "allow-always",
            "Allow this tool for the session",
            K::AllowAlways,
        ),
        acp::PermissionOption::new("deny", "Deny", K::RejectOnce),
        acp::PermissionOption::new("deny-and-stop", "Deny and stop the turn", K::RejectOnce),
    ]
}

/// The decision an option chosen in the editor makes; `None` for an id never offered.
pub(crate) fn decision_for(option_id: &str) -> Option<Decision> {
    match option_id {
        "allow" => Some(Decision::Allow),
        "allow-always" => Some(Decision::AllowAlways { scope: None }),
        "deny" => Some(Decision::Deny { message: "denied in the editor".to_owned() }),
        "deny-and-stop" => {
            Some(Decision::DenyAndStop { message: "denied in the editor".to_owned() })
        }
        _ => None,
    }
}

/// Why a turn ended, for `session/prompt`'s answer.
pub(crate) fn stop_reason(turn: &TurnCompleted, cancelled: bool) -> acp::StopReason {
    if cancelled {
        return acp::StopReason::Cancelled;
    }
    match turn.stop_reason.as_deref() {
        Some("max_tokens") => acp::StopReason::MaxTokens,
        Some("refusal") => acp::StopReason::Refusal,
        _ => acp::StopReason::EndTurn,
    }
}

/// The `_meta` of a notification: the Nucleic event's seq (a client can check for gaps).
pub(crate) fn meta(seq: u64) -> acp::Meta {
    match json!({ "nucleic": { "seq": seq } }) {
        Value::Object(map) => map,
        _ => acp::Meta::new(),
    }
}

#[cfg(test)]
mod tests;
