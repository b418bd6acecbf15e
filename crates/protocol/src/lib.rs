//! Nucleic's wire and domain types: the normalized, sequenced event model every backend maps into.
//!
//! This crate does no I/O. Every type here is what travels on the wire (transcripts, the sync
//! protocol, `nucleic run --json`), so field names are part of the contract: see
//! `docs/architecture.md` and the round-trip tests against the seed export.

mod approval;
mod capabilities;
mod checks;
mod device;
mod event;
mod files;
mod kind;
mod push;
mod raw_json;
mod status;
mod sync;
mod timestamp;

pub use approval::{ApprovalRequested, ApprovalResolved, Decision, DecisionKind, Risk, RuleScope};
pub use capabilities::{BackendInfo, Capabilities};
pub use checks::{
    CheckFinished, CheckOutcome, CheckOutput, CheckSpec, CheckStarted, CheckTrigger, Contradiction,
    Report, ReportClaim,
};
pub use device::{DeviceProof, DeviceSummary, HELLO_PROOF_CONTEXT, hello_proof_message};
pub use event::{Backend, Event};
pub use files::{
    FileContent, FileEncoding, FileEntry, FileKind, MAX_FILE_CONTENT_BYTES, MAX_FILE_ENTRIES,
};
pub use kind::{
    ApiRetry, ErrorCode, ErrorEvent, EventKind, InterruptRequested, PermissionDenied, RateLimit,
    Raw, RunFinished, RunOutcome, SessionCreated, SessionStarted, SessionUpdated, SettingsChanged,
    StatusChanged, StderrLine, TextBlock, ToolCall, ToolInputDelta, ToolResult, TurnCompleted,
    Usage, WorktreeAction, WorktreeFinished, WorktreeInfo,
};
pub use push::{PushSettings, QuietHours, WebPushKeys, WebPushSubscription};
pub use raw_json::RawJson;
pub use status::SessionStatus;
pub use sync::{
    CLIENT_MESSAGE_TYPES, ClientMessage, DiffFile, ExportFormat, FEATURE_EVENT_BATCHES,
    FinishAction, GitFacts, HostMessage, Intent, MAX_CLIENT_MESSAGE_BYTES, NewSession,
    PROTOCOL_VERSION, PoolSummary, ProjectSummary, ProtocolErrorCode, SessionSummary, Verbosity,
};
pub use timestamp::{Timestamp, TimestampError};

#[cfg(test)]
mod typescript;

#[cfg(test)]
mod json_schema;
