//! Event kinds: the closed set of things that can happen in a session, tagged by `type`.

use crate::is_false;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{ApprovalRequested, ApprovalResolved};
use crate::checks::{CheckFinished, CheckOutput, CheckStarted, Report};
use crate::raw_json::RawJson;
use crate::status::SessionStatus;

/// What happened. Names follow the seed's session export where it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum EventKind {
    /// Text a person sent to the agent.
    UserText(TextBlock),
    /// The agent started a turn and reported its configuration (Claude: `system/init`).
    SessionStarted(SessionStarted),
    /// Assistant prose: a whole block (`isPartial: false`) or a streamed delta (`isPartial: true`).
    AssistantText(TextBlock),
    /// Model reasoning, whole or as a delta.
    Thinking(TextBlock),
    /// The model began a tool call (its input may still be streaming).
    ToolCallStarted(ToolCall),
    /// A fragment of a tool call's input JSON while it streams.
    ToolInputDelta(ToolInputDelta),
    /// The model finished emitting a tool call; `input` is final.
    ToolCallCompleted(ToolCall),
    /// The outcome of a tool call, as fed back to the model.
    ToolResult(ToolResult),
    /// Tokens and cost of one turn.
    Usage(Usage),
    /// One turn (prompt → final answer) ended.
    TurnCompleted(TurnCompleted),
    /// The agent process ended; `outcome` says how.
    RunFinished(RunFinished),
    /// Provider rate-limit information.
    RateLimit(RateLimit),
    /// The agent retries a failed API call.
    ApiRetry(ApiRetry),
    /// A gated tool call waits for a person's decision.
    ApprovalRequested(ApprovalRequested),
    /// A pending approval was answered (or cancelled), and by whom.
    ApprovalResolved(ApprovalResolved),
    /// The agent itself refused a tool call (mode or rules), without asking.
    PermissionDenied(PermissionDenied),
    /// The agent's sandbox, as its process started: confined by the kernel, or not (and why).
    Confinement(Confinement),
    /// The host's egress proxy refused a connection of the agent (not on the allow-list).
    EgressRefused(EgressRefused),
    /// The session's status changed.
    StatusChanged(StatusChanged),
    /// Model or permission mode changed mid-session.
    SettingsChanged(SettingsChanged),
    /// Someone asked the agent to stop the current turn.
    InterruptRequested(InterruptRequested),
    /// Something went wrong; the session may or may not continue.
    Error(ErrorEvent),
    /// A line the agent wrote to stderr.
    Stderr(StderrLine),
    /// The host created the session: its project, worktree and settings (first event of every
    /// host session, so the catalog can be rebuilt from transcripts alone).
    SessionCreated(SessionCreated),
    /// A person renamed or (un)archived the session.
    SessionUpdated(SessionUpdated),
    /// The session's worktree was merged, squashed, rebased, discarded, kept, rolled back or
    /// continued — always on a person's request.
    WorktreeFinished(WorktreeFinished),
    /// The host removed the finished session's worktree directory to free disk (its branch and
    /// any uncommitted work are kept); it comes back when the session is continued.
    WorktreeReclaimed(WorktreeReclaimed),
    /// A reclaimed worktree was checked out again at its path.
    WorktreeRestored(WorktreeRestored),
    /// The host started one of the project's checks in the session's worktree.
    CheckStarted(CheckStarted),
    /// Output of a running check, batched.
    CheckOutput(CheckOutput),
    /// A check ended: its outcome, counts and log.
    CheckFinished(CheckFinished),
    /// The host's report: the agent's claims next to the facts, contradictions flagged.
    Report(Report),
    /// The host pushed the session's branch and opened a pull request.
    PullRequestOpened(crate::pull_request::PullRequestOpened),
    /// Review comments were sent to the agent as one follow-up.
    ReviewSent(crate::review::ReviewSent),
    /// A native line kept verbatim: unknown to the decoder, not valid JSON, or known but with no
    /// normalized meaning. Never dropped.
    Raw(Raw),
}

impl EventKind {
    /// The wire tag of this kind (`userText`, `toolResult`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::UserText(_) => "userText",
            EventKind::SessionStarted(_) => "sessionStarted",
            EventKind::AssistantText(_) => "assistantText",
            EventKind::Thinking(_) => "thinking",
            EventKind::ToolCallStarted(_) => "toolCallStarted",
            EventKind::ToolInputDelta(_) => "toolInputDelta",
            EventKind::ToolCallCompleted(_) => "toolCallCompleted",
            EventKind::ToolResult(_) => "toolResult",
            EventKind::Usage(_) => "usage",
            EventKind::TurnCompleted(_) => "turnCompleted",
            EventKind::RunFinished(_) => "runFinished",
            EventKind::RateLimit(_) => "rateLimit",
            EventKind::ApiRetry(_) => "apiRetry",
            EventKind::ApprovalRequested(_) => "approvalRequested",
            EventKind::ApprovalResolved(_) => "approvalResolved",
            EventKind::PermissionDenied(_) => "permissionDenied",
            EventKind::Confinement(_) => "confinement",
            EventKind::EgressRefused(_) => "egressRefused",
            EventKind::StatusChanged(_) => "statusChanged",
            EventKind::SettingsChanged(_) => "settingsChanged",
            EventKind::InterruptRequested(_) => "interruptRequested",
            EventKind::Error(_) => "error",
            EventKind::Stderr(_) => "stderr",
            EventKind::SessionCreated(_) => "sessionCreated",
            EventKind::SessionUpdated(_) => "sessionUpdated",
            EventKind::WorktreeFinished(_) => "worktreeFinished",
            EventKind::WorktreeReclaimed(_) => "worktreeReclaimed",
            EventKind::WorktreeRestored(_) => "worktreeRestored",
            EventKind::CheckStarted(_) => "checkStarted",
            EventKind::CheckOutput(_) => "checkOutput",
            EventKind::CheckFinished(_) => "checkFinished",
            EventKind::Report(_) => "report",
            EventKind::PullRequestOpened(_) => "pullRequestOpened",
            EventKind::ReviewSent(_) => "reviewSent",
            EventKind::Raw(_) => "raw",
        }
    }

    /// True for streamed fragments that a low-verbosity client may skip.
    pub fn is_partial(&self) -> bool {
        match self {
            EventKind::AssistantText(t) | EventKind::Thinking(t) | EventKind::UserText(t) => {
                t.is_partial
            }
            EventKind::ToolInputDelta(_) => true,
            _ => false,
        }
    }

    /// A raw event holding `native`.
    pub fn raw(native: RawJson) -> EventKind {
        EventKind::Raw(Raw { native })
    }
}

/// A piece of text with the id of the message it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct TextBlock {
    #[serde(rename = "isPartial")]
    pub is_partial: bool,
    #[serde(rename = "messageID")]
    pub message_id: String,
    pub text: String,
}

/// `system/init` (or its equivalent): the agent's view of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SessionStarted {
    /// The backend's own session id (what `--resume` takes).
    #[serde(rename = "backendSessionID")]
    pub backend_session_id: String,
    pub cwd: String,
    pub model: String,
    #[serde(rename = "toolNames")]
    pub tool_names: Vec<String>,
    #[serde(rename = "permissionMode", default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    #[serde(rename = "agentVersion", default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
}

/// A tool call as the model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ToolCall {
    #[serde(rename = "toolCallID")]
    pub tool_call_id: String,
    pub name: String,
    pub input: Value,
    /// Set when a sub-agent (e.g. `Task`/`Agent`) made the call.
    #[serde(rename = "parentToolCallID", default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

/// A streamed fragment of a tool call's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ToolInputDelta {
    #[serde(rename = "toolCallID")]
    pub tool_call_id: String,
    #[serde(rename = "partialJson")]
    pub partial_json: String,
}

/// A tool's result. `content` is whatever the backend produced: a string or content blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ToolResult {
    #[serde(rename = "toolCallID")]
    pub tool_call_id: String,
    pub content: Value,
    #[serde(rename = "isError")]
    pub is_error: bool,
}

/// Token counts and cost. `costUSD` is for this turn alone, not cumulative.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Usage {
    #[serde(rename = "inputTokens")]
    pub input_tokens: u64,
    #[serde(rename = "outputTokens")]
    pub output_tokens: u64,
    #[serde(rename = "cachedInputTokens")]
    pub cached_input_tokens: u64,
    #[serde(rename = "costUSD", default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The end of one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct TurnCompleted {
    #[serde(rename = "stopReason", default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    pub usage: Usage,
    /// True when the turn failed (Claude reports API errors as `subtype: success` +
    /// `is_error: true`; this flag is the truth).
    #[serde(rename = "isError", default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// Why the turn ended (`completed`, `api_error`, `aborted_streaming`, `max_turns`, …).
    #[serde(rename = "terminalReason", default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    /// The final answer text, or the error text for a failed turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(rename = "durationMs", default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The end of the agent process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RunFinished {
    pub outcome: RunOutcome,
    /// One line a person can read: why the run ended this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(rename = "exitCode", default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Native lines of this run the decoder did not recognise (each kept as a `raw` event).
    #[serde(rename = "unknownLines", default, skip_serializing_if = "is_zero")]
    pub unknown_lines: u64,
}

impl RunFinished {
    /// A run end with no unknown lines.
    pub fn new(
        outcome: RunOutcome,
        message: Option<String>,
        exit_code: Option<i32>,
    ) -> RunFinished {
        RunFinished { outcome, message, exit_code, unknown_lines: 0 }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum RunOutcome {
    /// The last turn succeeded and the agent exited cleanly.
    Completed,
    /// The last turn was interrupted (by a person or a deny-and-stop).
    Interrupted,
    /// The host stopped the agent on request.
    Stopped,
    /// The model provider failed (HTTP errors, dropped streams, auth).
    ApiError,
    /// A turn hit a configured limit (turns, budget).
    LimitReached,
    /// The agent reported an execution error (e.g. unknown resume id).
    AgentError,
    /// The agent process died unexpectedly (signal, non-zero exit with no result).
    Crashed,
    /// The agent could not be started (binary missing, not executable).
    SpawnFailed,
}

impl RunOutcome {
    /// True only for [`RunOutcome::Completed`] and [`RunOutcome::Stopped`].
    pub fn is_success(self) -> bool {
        match self {
            RunOutcome::Completed | RunOutcome::Stopped => true,
            RunOutcome::Interrupted
            | RunOutcome::ApiError
            | RunOutcome::LimitReached
            | RunOutcome::AgentError
            | RunOutcome::Crashed
            | RunOutcome::SpawnFailed => false,
        }
    }
}

/// Rate-limit status from the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RateLimit {
    pub status: String,
    #[serde(rename = "rateLimitType", default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_type: Option<String>,
    #[serde(rename = "resetsAt", default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    #[serde(rename = "isUsingOverage", default, skip_serializing_if = "Option::is_none")]
    pub is_using_overage: Option<bool>,
    #[serde(rename = "overageStatus", default, skip_serializing_if = "Option::is_none")]
    pub overage_status: Option<String>,
}

/// One retry of a failed API call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ApiRetry {
    pub attempt: u32,
    #[serde(rename = "maxRetries")]
    pub max_retries: u32,
    #[serde(rename = "retryDelayMs")]
    pub retry_delay_ms: u64,
    #[serde(rename = "httpStatus", default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The backend's error class (`server_error`, `rate_limit`, `overloaded`, …).
    pub error: String,
}

/// The agent refused a tool call on its own (mode, rules, or no approver).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PermissionDenied {
    #[serde(rename = "toolName")]
    pub tool_name: String,
    #[serde(rename = "toolCallID", default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub message: String,
}

/// What an agent's process tree runs under, said once per agent start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Confinement {
    /// The kernel confines it (bubblewrap: secrets hidden, writes only where allowed, egress
    /// only through the host's proxy, no privilege).
    pub confined: bool,
    /// In words: what holds, or why nothing does.
    pub summary: String,
    /// The destinations its egress proxy allows (`host:port`, `*.domain`).
    #[serde(rename = "egressAllowed", default, skip_serializing_if = "Vec::is_empty")]
    pub egress_allowed: Vec<String>,
}

/// A connection the egress proxy refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct EgressRefused {
    pub host: String,
    pub port: u16,
    /// `CONNECT`, or the plain-HTTP request's method.
    pub method: String,
    pub reason: String,
}

/// A status transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct StatusChanged {
    pub status: SessionStatus,
    pub previous: SessionStatus,
}

/// A settings change confirmed by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SettingsChanged {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(rename = "permissionMode", default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
}

/// An interrupt request and who made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct InterruptRequested {
    pub by: String,
}

/// A failure worth showing to a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ErrorEvent {
    pub code: ErrorCode,
    pub message: String,
    #[serde(rename = "httpStatus", default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

/// Classes of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ErrorCode {
    /// The model provider failed.
    ApiError,
    /// A line from the agent could not be decoded (kept as a `raw` event too).
    Decode,
    /// The agent broke its protocol (e.g. a reply to a request we never sent).
    Protocol,
    /// A message for the agent was refused before it reached its stdin.
    InvalidInput,
    /// The agent process could not be started.
    Spawn,
    /// The agent process died.
    AgentExited,
    /// A host-side failure (disk, transcript).
    Host,
    /// The agent went quiet for longer than allowed and was stopped.
    Timeout,
}

/// One line of the agent's stderr.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct StderrLine {
    pub text: String,
}

/// A native payload kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Raw {
    #[cfg_attr(test, ts(type = "unknown"), schemars(with = "serde_json::Value"))]
    pub native: RawJson,
}

/// How and where the host created a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SessionCreated {
    pub title: String,
    #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(rename = "projectRoot", default, skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// Where the agent runs: a worktree, or the directory `nucleic run` was given.
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(rename = "permissionMode", default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// An imported session: events only, no agent.
    #[serde(rename = "readOnly", default, skip_serializing_if = "is_false")]
    pub read_only: bool,
    /// The session this one continues (keep → continue), if any.
    #[serde(rename = "continuesSessionID", default, skip_serializing_if = "Option::is_none")]
    pub continues_session_id: Option<String>,
    /// Who asked for the session (a client's name).
    #[serde(rename = "createdBy", default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// The session whose agent started this one (through an MCP grant bound to it): the
    /// session's parent, whose requests (and its ancestors') this session's MCP grants may
    /// never answer.
    #[serde(rename = "parentSessionID", default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The policy mode the session starts in (none without a policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// A session's worktree, as created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorktreeInfo {
    pub path: String,
    pub branch: String,
    #[serde(rename = "baseRef")]
    pub base_ref: String,
    #[serde(rename = "baseSHA")]
    pub base_sha: String,
}

/// A change a person made to the session's own metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SessionUpdated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// The session's new policy mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the change means for the agent (e.g. from when it applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who made the change.
    pub by: String,
}

/// What happened to a session's worktree, and who asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorktreeFinished {
    pub action: WorktreeAction,
    /// For merge / squash / rebase: the branch that moved and its new tip.
    #[serde(rename = "baseBranch", default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
    #[serde(rename = "newTip", default, skip_serializing_if = "Option::is_none")]
    pub new_tip: Option<String>,
    /// For continue: the new session.
    #[serde(rename = "continuedIn", default, skip_serializing_if = "Option::is_none")]
    pub continued_in: Option<String>,
    pub by: String,
    /// Merged although required checks failed: the reason given (and which failed).
    #[serde(rename = "forcedReason", default, skip_serializing_if = "Option::is_none")]
    pub forced_reason: Option<String>,
}

/// A finished session's worktree directory removed to free disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorktreeReclaimed {
    /// What the directory took (build output included).
    pub bytes: u64,
    /// Of which build output (`target/`, `node_modules/`, …), which is not kept.
    #[serde(rename = "buildBytes")]
    pub build_bytes: u64,
    /// Uncommitted work was kept (as a commit under `refs/nucleic/reclaimed/`) to come back
    /// with the worktree.
    #[serde(rename = "keptUncommitted")]
    pub kept_uncommitted: bool,
    /// Why: `age` (finished longer ago than the project allows), `budget` (the project's
    /// worktrees over its budget) or `request` (a person asked).
    pub reason: String,
    pub by: String,
}

impl WorktreeReclaimed {
    /// One line for a person: `worktree reclaimed (1.2 GB, 900 MB of it build output; …)`.
    pub fn summary(&self) -> String {
        let kept = if self.kept_uncommitted { "; uncommitted work kept" } else { "" };
        format!(
            "worktree reclaimed ({}, {} of it build output; reason: {}{kept}) by {}",
            human_bytes(self.bytes),
            human_bytes(self.build_bytes),
            self.reason,
            self.by
        )
    }
}

impl WorktreeRestored {
    /// One line for a person.
    pub fn summary(&self) -> String {
        let work = if self.restored_uncommitted { " with its uncommitted work" } else { "" };
        format!("worktree restored at {}{work} by {}", self.path, self.by)
    }
}

/// Bytes for a person: `512 B`, `3.4 KB`, `1.2 GB` (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A reclaimed worktree checked out again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorktreeRestored {
    pub path: String,
    /// The uncommitted work kept when it was reclaimed is back (uncommitted again).
    #[serde(rename = "restoredUncommitted")]
    pub restored_uncommitted: bool,
    pub by: String,
}

/// The finishing actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum WorktreeAction {
    Merged,
    Squashed,
    Rebased,
    Discarded,
    Kept,
    RolledBack,
    Continued,
}
