//! Shared builders: a synthetic session touching every event kind, and the seed's export.

use nucleic_protocol::{
    ApiRetry, ApprovalRequested, ApprovalResolved, Backend, DecisionKind, ErrorCode, ErrorEvent,
    Event, EventKind, InterruptRequested, PermissionDenied, RateLimit, RawJson, RunFinished,
    RunOutcome, SessionCreated, SessionStarted, SessionStatus, SessionUpdated, SettingsChanged,
    StatusChanged, StderrLine, TextBlock, Timestamp, ToolCall, ToolInputDelta, ToolResult,
    TurnCompleted, Usage, WorktreeAction, WorktreeFinished, WorktreeInfo,
};
use nucleic_transfer::{ExportMeta, ProjectMeta};
use serde_json::json;

pub const SEED_RAW: &str =
    include_str!("../../../protocol/tests/fixtures/seed-export-raw-events.jsonl");
pub const SEED_RENDERED: &str = include_str!("../fixtures/seed-export-rendered.txt");
pub const CLAUDE_TRANSCRIPT: &str = include_str!("../fixtures/claude-transcript.jsonl");

pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_782_000_000_000 + secs * 1000)
}

fn text(partial: bool, id: &str, text: &str) -> TextBlock {
    TextBlock { is_partial: partial, message_id: id.into(), text: text.into() }
}

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall { tool_call_id: "toolu_1".into(), name: name.into(), input, parent_tool_call_id: None }
}

fn status(status: SessionStatus, previous: SessionStatus) -> EventKind {
    EventKind::StatusChanged(StatusChanged { status, previous })
}

/// One small session with every kind (partials included), in a plausible order.
pub fn synthetic_events() -> Vec<Event> {
    let write_input =
        json!({"file_path": "/repo/.nucleic/worktrees/hello/hello.txt", "content": "hello"});
    let usage = Usage {
        input_tokens: 12,
        output_tokens: 240,
        cached_input_tokens: 9000,
        cost_usd: Some(0.0123),
    };
    let kinds: Vec<(Option<&str>, EventKind)> = vec![
        (
            None,
            EventKind::SessionCreated(SessionCreated {
                title: "Add a hello file".into(),
                project_id: Some("p1".into()),
                project_root: Some("/repo".into()),
                cwd: "/repo/.nucleic/worktrees/hello".into(),
                worktree: Some(WorktreeInfo {
                    path: "/repo/.nucleic/worktrees/hello".into(),
                    branch: "nucleic/hello".into(),
                    base_ref: "main".into(),
                    base_sha: "4b825dc642cb6eb9a060e54bf8d69288fbee4904".into(),
                }),
                model: Some("claude-sonnet-4-6".into()),
                permission_mode: Some("default".into()),
                read_only: false,
                continues_session_id: None,
                created_by: None,
                parent_session_id: None,
                mode: None,
            }),
        ),
        (None, status(SessionStatus::Running, SessionStatus::Idle)),
        (
            None,
            EventKind::UserText(text(
                false,
                "user-1",
                "Create hello.txt containing hello.\nThanks!",
            )),
        ),
        (
            Some("system/init"),
            EventKind::SessionStarted(SessionStarted {
                backend_session_id: "c29d82c3-3baa-4f88-b8d1-04151486ebe4".into(),
                cwd: "/repo/.nucleic/worktrees/hello".into(),
                model: "claude-sonnet-4-6".into(),
                tool_names: vec!["Bash".into(), "Write".into()],
                permission_mode: Some("default".into()),
                agent_version: Some("2.1.332".into()),
            }),
        ),
        (
            Some("rate_limit_event"),
            EventKind::RateLimit(RateLimit {
                status: "allowed".into(),
                rate_limit_type: Some("five_hour".into()),
                resets_at: None,
                is_using_overage: None,
                overage_status: None,
            }),
        ),
        (Some("assistant"), EventKind::Thinking(text(false, "msg_1", "They want a file."))),
        (Some("stream_event"), EventKind::AssistantText(text(true, "msg_1", "I'll"))),
        (
            Some("assistant"),
            EventKind::AssistantText(text(false, "msg_1", "I'll create the file.")),
        ),
        (Some("stream_event"), EventKind::ToolCallStarted(call("Write", json!({})))),
        (
            Some("stream_event"),
            EventKind::ToolInputDelta(ToolInputDelta {
                tool_call_id: "toolu_1".into(),
                partial_json: "{\"file_path\":".into(),
            }),
        ),
        (Some("assistant"), EventKind::ToolCallCompleted(call("Write", write_input.clone()))),
        (
            Some("control_request/can_use_tool"),
            EventKind::ApprovalRequested(ApprovalRequested {
                request_id: "req-1".into(),
                tool_call_id: Some("toolu_1".into()),
                tool_name: "Write".into(),
                input: write_input,
                description: None,
                blocked_path: None,
                risk: None,
                risk_reasons: Vec::new(),
            }),
        ),
        (None, status(SessionStatus::AwaitingApproval, SessionStatus::Running)),
        (
            None,
            EventKind::ApprovalResolved(ApprovalResolved {
                request_id: "req-1".into(),
                decision: DecisionKind::Allow,
                by: "phone".into(),
                updated_input: None,
                message: None,
                mode: None,
            }),
        ),
        (None, status(SessionStatus::Running, SessionStatus::AwaitingApproval)),
        (
            Some("user"),
            EventKind::ToolResult(ToolResult {
                tool_call_id: "toolu_1".into(),
                content: json!("File created successfully"),
                is_error: false,
            }),
        ),
        (
            Some("system/api_retry"),
            EventKind::ApiRetry(ApiRetry {
                attempt: 1,
                max_retries: 10,
                retry_delay_ms: 500,
                http_status: Some(529),
                error: "overloaded".into(),
            }),
        ),
        (
            Some("system/task_progress"),
            EventKind::raw(RawJson::from_any_text(&format!(
                r#"{{"type":"system","subtype":"task_progress","note":"{}"}}"#,
                "x".repeat(600)
            ))),
        ),
        (None, EventKind::Stderr(StderrLine { text: "warning: something odd".into() })),
        (
            Some("system/permission_denied"),
            EventKind::PermissionDenied(PermissionDenied {
                tool_name: "Bash".into(),
                tool_call_id: Some("toolu_2".into()),
                message: "Bash is not allowed in plan mode".into(),
            }),
        ),
        (
            Some("control_response/success"),
            EventKind::SettingsChanged(SettingsChanged {
                model: Some("claude-opus-5-5".into()),
                permission_mode: Some("acceptEdits".into()),
            }),
        ),
        (
            None,
            EventKind::Error(ErrorEvent {
                code: ErrorCode::ApiError,
                message: "upstream said no".into(),
                http_status: Some(500),
            }),
        ),
        (Some("result"), EventKind::Usage(usage.clone())),
        (
            Some("result"),
            EventKind::TurnCompleted(TurnCompleted {
                stop_reason: Some("end_turn".into()),
                usage: usage.clone(),
                is_error: false,
                terminal_reason: None,
                result: Some("Done.".into()),
                duration_ms: Some(4200),
            }),
        ),
        (None, EventKind::InterruptRequested(InterruptRequested { by: "mac".into() })),
        (
            Some("result"),
            EventKind::TurnCompleted(TurnCompleted {
                stop_reason: None,
                usage,
                is_error: true,
                terminal_reason: Some("api_error".into()),
                result: Some("API Error: 500".into()),
                duration_ms: None,
            }),
        ),
        (
            None,
            EventKind::ApprovalResolved(ApprovalResolved {
                request_id: "req-2".into(),
                decision: DecisionKind::DenyAndStop,
                by: "mac".into(),
                updated_input: None,
                message: Some("not that file".into()),
                mode: None,
            }),
        ),
        (None, EventKind::RunFinished(RunFinished::new(RunOutcome::Completed, None, Some(0)))),
        (
            None,
            EventKind::RunFinished(RunFinished::new(
                RunOutcome::Crashed,
                Some("killed by signal 9".into()),
                None,
            )),
        ),
        (
            None,
            EventKind::SessionUpdated(SessionUpdated {
                title: Some("Hello file".into()),
                archived: Some(true),
                mode: None,
                note: None,
                by: "mac".into(),
            }),
        ),
        (
            None,
            EventKind::WorktreeFinished(WorktreeFinished {
                action: WorktreeAction::Merged,
                base_branch: Some("main".into()),
                new_tip: Some("9fceb02".into()),
                continued_in: None,
                by: "mac".into(),
                forced_reason: None,
            }),
        ),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, (native, kind))| Event {
            seq: i as u64 + 1,
            at: at(i as i64),
            session_id: "S-1".into(),
            backend: Backend::ClaudeCode,
            native_type: native.map(Into::into),
            origin: None,
            kind,
        })
        .collect()
}

pub fn synthetic_meta(events: &[Event]) -> ExportMeta {
    ExportMeta {
        title: "Hello file".into(),
        session_id: "S-1".into(),
        status: SessionStatus::Finished,
        backend: Backend::ClaudeCode,
        backend_session_id: Some("c29d82c3-3baa-4f88-b8d1-04151486ebe4".into()),
        model: Some("claude-opus-5-5".into()),
        effort: None,
        branch: Some("nucleic/hello".into()),
        worktree: Some("/repo/.nucleic/worktrees/hello".into()),
        base_sha: Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904".into()),
        last_seq: events.len() as u64,
        transcript_path: Some("/home/me/.local/share/nucleic/sessions/S-1/transcript.jsonl".into()),
        created_at: at(0),
        updated_at: at(100),
        project: Some(ProjectMeta {
            name: "repo".into(),
            root: "/repo".into(),
            default_branch: "main".into(),
        }),
    }
}

pub fn seed_events() -> Vec<Event> {
    SEED_RAW.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The seed export's header, as its Session and Project sections show it.
pub fn seed_meta() -> ExportMeta {
    let root = "/Users/blakeslee/Library/Mobile Documents/com~apple~CloudDocs/projects/nucleic";
    ExportMeta {
        title: "Explore Repository Contents".into(),
        session_id: "5C9CD482-73AC-4470-B3E1-F336DD8F4D38".into(),
        status: SessionStatus::AwaitingInput,
        backend: Backend::ClaudeCode,
        backend_session_id: Some("c29d82c3-3baa-4f88-b8d1-04151486ebe4".into()),
        model: Some("claude-sonnet-4-6".into()),
        effort: Some("low".into()),
        branch: Some("main".into()),
        worktree: Some(root.into()),
        base_sha: None,
        last_seq: 66,
        transcript_path: Some(
            "/Users/blakeslee/Library/Application Support/Nucleic/sessions/5C9CD482-73AC-4470-B3E1-F336DD8F4D38/transcript.jsonl"
                .into(),
        ),
        created_at: Timestamp::parse("2026-06-12T23:13:03Z").unwrap(),
        updated_at: Timestamp::parse("2026-06-12T23:34:45Z").unwrap(),
        project: Some(ProjectMeta {
            name: "nucleic".into(),
            root: root.into(),
            default_branch: "main".into(),
        }),
    }
}
