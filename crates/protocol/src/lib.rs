//! Nucleic's wire and domain types: the normalized, sequenced event model every backend maps into.
//!
//! This crate does no I/O. Every type here is what travels on the wire (transcripts, the sync
//! protocol, `nucleic run --json`), so field names are part of the contract: see
//! `docs/architecture.md` and the round-trip tests against the seed export.
//!
//! - `event`: the [`Event`] envelope (`seq`, `at`, `sessionID`, `backend`, `nativeType`, `kind`)
//!   and its [`Backend`].
//! - `kind`: every [`EventKind`], the closed set of things that can happen in a session.
//! - `chat_bridge`: chat bridges as the host knows them — their reports, paired users, unpairing.
//! - `mcp_grant`: MCP grants — [`McpScope`], the credential prefix, grants as listed.
//! - `status`: [`SessionStatus`], a session's lifecycle as its single writer tracks it.
//! - `approval`: approval requests and their resolutions, with [`Decision`] and [`Risk`].
//! - `interactive`: plans and questions an agent puts to a person, and how answers become input.
//! - `timestamp`: [`Timestamp`], RFC 3339 UTC for `at`.
//! - `raw_json`: [`RawJson`], a JSON value kept as its original text (native lines byte for byte).
//! - `sync`: the sync protocol, [`ClientMessage`] and [`HostMessage`] (`docs/protocol.md`).
//! - `intent`: [`Intent`] and what intents carry: [`NewSession`], [`FinishAction`],
//!   [`ExportFormat`].
//! - `intent_result`: [`IntentResult`], what an `ack` carries, and each of its payloads.
//! - `summaries`: what list and detail views get: [`ProjectSummary`], [`SessionSummary`] and a
//!   session's [`GitFacts`].
//! - `capabilities`: what each backend can do, [`Capabilities`] / [`BackendInfo`].
//! - `files`: read-only views of a session's worktree, [`FileEntry`] / [`FileContent`].
//! - `checks`: project checks and the [`Report`] of claims next to facts (`docs/dev-loop.md`).
//! - `review`: turn snapshots and review comments on the diff.
//! - `pull_request`: the pull request a session was finished with.
//! - `rule_list`: rules as clients see them.
//! - `device`: device identities and the proof a device gives in `hello`.
//! - `push`: Web Push settings on the wire.
//!
//! The tests round-trip every line of the seed's session export, and generate the cockpit's
//! `web/src/protocol.gen.ts` with `ts-rs` (`typescript`) and `docs/protocol.v1.schema.json` with
//! `schemars` (`json_schema`), failing when either drifts; both derives are test-only.

mod approval;
mod capabilities;
mod chat_bridge;
mod checks;
mod device;
mod event;
mod files;
mod intent;
mod intent_result;
mod interactive;
mod kind;
mod mcp_grant;
mod on_behalf;
mod outside;
mod pull_request;
mod push;
mod raw_json;
mod review;
mod rule_list;
mod status;
mod summaries;
mod sync;
mod timestamp;

pub use approval::{
    ApprovalRequested, ApprovalResolved, Decision, DecisionKind, EGRESS_APPROVAL, EgressAsked,
    Risk, RuleScope,
};
pub use capabilities::{BackendInfo, Capabilities};
pub use chat_bridge::{
    ChatBridgeReport, ChatBridgeReported, ChatBridgeState, ChatBridgeSummary, ChatBridges,
    ChatPerson, MAX_CHAT_ID, MAX_CHAT_PEOPLE,
};
pub use checks::{
    CheckFinished, CheckOutcome, CheckOutput, CheckSpec, CheckStarted, CheckTrigger, Contradiction,
    Report, ReportClaim,
};
pub use device::{DeviceProof, DeviceSummary, HELLO_PROOF_CONTEXT, hello_proof_message};
pub use event::{Backend, Event};
pub use files::{
    FileContent, FileEncoding, FileEntry, FileKind, MAX_FILE_CONTENT_BYTES, MAX_FILE_ENTRIES,
};
pub use intent::{ExportFormat, FinishAction, Intent, NewSession};
pub use intent_result::{
    Attached, ChecksRun, ExportedText, GcReport, Handoff, Integrated, IntentPayload, IntentResult,
    MAX_ATTACHMENT_BYTES, MAX_ATTACHMENT_CHUNK_BYTES, Pairing, ProjectMode, Reclaimable,
    ReviewComments, ReviewSendout, RuleAdded, RuleRemoved, TokenRotated,
};
pub use interactive::{
    ASK_USER_QUESTION, EMPTY_PLAN_GUIDANCE, EXIT_PLAN_MODE, Question, QuestionAnswer, SessionMode,
    answered_input, plan_text, questions,
};
pub use kind::{
    ApiRetry, Confinement, EgressRefused, ErrorCode, ErrorEvent, EventKind, InterruptRequested,
    PermissionDenied, RateLimit, Raw, RunFinished, RunOutcome, SessionCreated, SessionStarted,
    SessionUpdated, SettingsChanged, StatusChanged, StderrLine, TextBlock, ToolCall,
    ToolInputDelta, ToolResult, TurnCompleted, Usage, WorktreeAction, WorktreeFinished,
    WorktreeInfo, WorktreeReclaimed, WorktreeRestored, human_bytes,
};
pub use mcp_grant::{MCP_CREDENTIAL_PREFIX, McpGrantSummary, McpGranted, McpGrants, McpScope};
pub use on_behalf::{MAX_ON_BEHALF_OF, on_behalf_of_refused};
pub use outside::{LiveHolder, OutsideSession, OutsideSessions, SkippedSessionFile};
pub use pull_request::PullRequestOpened;
pub use push::{PushSettings, QuietHours, WebPushKeys, WebPushSubscription};
pub use raw_json::RawJson;
pub use review::{CommentStatus, ReviewComment, ReviewSent, TurnSnapshot};
pub use rule_list::{RuleBehaviour, RuleEntry, RuleList, RuleSource, RulesTarget};
pub use status::SessionStatus;
pub use summaries::{
    DiffFile, DiskPolicy, DiskUsage, GitFacts, PoolSummary, ProjectSandbox, ProjectSummary,
    SessionSummary,
};
pub use sync::{
    CLIENT_MESSAGE_TYPES, ClientMessage, DAEMON_FILE, FEATURE_EVENT_BATCHES, HostMessage,
    MAX_CLIENT_MESSAGE_BYTES, PROTOCOL_VERSION, ProtocolErrorCode, SCHEMA_DIGEST, TOKEN_FILE,
    Verbosity,
};
pub use timestamp::{Timestamp, TimestampError};

#[cfg(test)]
mod typescript;

#[cfg(test)]
mod intent_table;
#[cfg(test)]
mod json_schema;

/// `skip_serializing_if` for flags that are omitted when false.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}
