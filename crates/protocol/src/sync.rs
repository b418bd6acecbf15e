//! The sync protocol: messages between the host and its clients (web cockpit, CLI, phone).
//! Transport-agnostic — the same JSON objects travel over a local WebSocket, plain HTTP, or
//! later an end-to-end encrypted relay — so nothing here depends on the connection. See
//! `docs/protocol.md`.

use serde::{Deserialize, Serialize};

use crate::approval::Decision;
use crate::capabilities::BackendInfo;
use crate::device::{DeviceProof, DeviceSummary};
use crate::event::Event;
use crate::files::{FileContent, FileEntry};
use crate::intent::{ExportFormat, Intent};
use crate::intent_result::IntentResult;
use crate::is_false;
use crate::push::{PushSettings, QuietHours, WebPushSubscription};
use crate::summaries::{GitFacts, ProjectSummary, SessionSummary};

/// Bumped on incompatible changes; `hello` carries the client's, `welcome` the host's.
pub const PROTOCOL_VERSION: u32 = 1;

/// The shape of every message this build speaks: the first 16 hex digits of the SHA-256 of the
/// protocol's JSON schema without its descriptions (`schema.digest`, checked against the types
/// by a test). `welcome` carries the host's, so a client of another build can say so instead of
/// failing to read an answer whose shape changed within one `PROTOCOL_VERSION`.
pub const SCHEMA_DIGEST: &str = include_str!("schema.digest").trim_ascii();

/// In `$NUCLEIC_HOME`: the running daemon's `{"port", "pid", "socket"?}` (0600), written by
/// `nucleic serve` (bootstrap, `docs/protocol.md`).
pub const DAEMON_FILE: &str = "daemon.json";

/// In `$NUCLEIC_HOME`: the host's bearer token (0600).
pub const TOKEN_FILE: &str = "token";

/// `hello.features` value: the client accepts `events` batches.
pub const FEATURE_EVENT_BATCHES: &str = "eventBatches";

/// Largest client message the host accepts, in bytes.
pub const MAX_CLIENT_MESSAGE_BYTES: usize = 1024 * 1024;

/// The `type` tags of [`ClientMessage`]: a message whose tag is here but whose fields are wrong
/// is malformed (`badMessage`); any other tag is `unsupported`.
pub const CLIENT_MESSAGE_TYPES: &[&str] = &[
    "hello",
    "listProjects",
    "listSessions",
    "subscribe",
    "unsubscribe",
    "gitFacts",
    "exportSession",
    "sendInput",
    "decide",
    "intent",
    "listFiles",
    "readFile",
    "listBranches",
    "listDevices",
    "getPush",
    "setPush",
];

/// Client → host. Every request carries a `messageID` unique per client; the host answers each
/// exactly once (`ack`, a data reply, or `error`) and answers a repeated id with the same reply
/// without doing the work again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ClientMessage {
    /// First message on a connection: who is speaking.
    Hello {
        #[serde(rename = "clientID")]
        client_id: String,
        #[serde(rename = "clientName")]
        client_name: String,
        #[serde(rename = "protocolVersion")]
        protocol_version: u32,
        /// Optional behaviours the client understands (e.g. [`FEATURE_EVENT_BATCHES`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
        /// A signed-in device's proof of its key; required unless the connection carries the
        /// host's token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<DeviceProof>,
        /// The person this connection acts for, recorded as who acted (`by`) instead of the
        /// token: a chat bridge's paired user (`telegram:<user>`, `matrix:@user:server`). Only
        /// a connection carrying the host's token may name one ([`on_behalf_of_refused`]).
        #[serde(rename = "onBehalfOf", default, skip_serializing_if = "Option::is_none")]
        on_behalf_of: Option<String>,
    },
    ListProjects {
        #[serde(rename = "messageID")]
        message_id: String,
    },
    ListSessions {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
        project_id: Option<String>,
        #[serde(rename = "includeArchived", default)]
        include_archived: bool,
    },
    /// Stream a session's events from `fromSeq` (1 = from the start): first the catch-up from
    /// the transcript, then live, with no gap and no duplicate.
    Subscribe {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(rename = "fromSeq")]
        from_seq: u64,
        #[serde(default)]
        verbosity: Verbosity,
    },
    Unsubscribe {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// The session worktree's diff vs its base, ahead/behind and conflict preview.
    GitFacts {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        /// Include the unified patch text (file list and counts always come).
        #[serde(rename = "includePatch", default)]
        include_patch: bool,
        /// Only what this turn changed (its start snapshot to its end snapshot, or to the
        /// worktree now while it runs); absent: the whole session vs its base.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u32>,
    },
    /// The session as a document: the "Nucleic session export" markdown, or plain JSONL.
    ExportSession {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(default)]
        format: ExportFormat,
    },
    /// A follow-up prompt.
    SendInput {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        text: String,
    },
    /// An answer to an approval; the first answer wins.
    Decide {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(rename = "requestID")]
        request_id: String,
        decision: Decision,
        /// The person confirmed a second time: required to allow a `critical` request (without
        /// it such a decision is refused and the request stays pending).
        #[serde(default, skip_serializing_if = "is_false")]
        confirmed: bool,
    },
    /// Anything that changes what exists: sessions, projects, finishing.
    Intent {
        #[serde(rename = "messageID")]
        message_id: String,
        intent: Intent,
    },
    /// List a directory of the session's worktree (`path` relative, "" = the root; `.git` is
    /// never listed). `recursive` walks the whole subtree, up to `MAX_FILE_ENTRIES`.
    ListFiles {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(default)]
        path: String,
        #[serde(default)]
        recursive: bool,
    },
    /// Read one file of the session's worktree (read-only; paths never escape the worktree).
    ReadFile {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "sessionID")]
        session_id: String,
        path: String,
    },
    /// The local branches of a project a new session could start from.
    ListBranches {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "projectID")]
        project_id: String,
    },
    /// The devices that signed in to this host (revoked ones included).
    ListDevices {
        #[serde(rename = "messageID")]
        message_id: String,
    },
    /// This device's push settings and the host's VAPID key (answered by `push`).
    GetPush {
        #[serde(rename = "messageID")]
        message_id: String,
    },
    /// Subscribes this device to push (replacing its subscription) or, with `subscription`
    /// null, unsubscribes it; sets its quiet hours (answered by `push`). Devices only.
    SetPush {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(default)]
        subscription: Option<WebPushSubscription>,
        #[serde(rename = "quietHours", default)]
        quiet_hours: Option<QuietHours>,
    },
}

impl ClientMessage {
    /// The request id, if the message has one (`hello` does not).
    pub fn message_id(&self) -> Option<&str> {
        match self {
            ClientMessage::Hello { .. } => None,
            ClientMessage::ListProjects { message_id }
            | ClientMessage::ListSessions { message_id, .. }
            | ClientMessage::Subscribe { message_id, .. }
            | ClientMessage::Unsubscribe { message_id, .. }
            | ClientMessage::GitFacts { message_id, .. }
            | ClientMessage::ExportSession { message_id, .. }
            | ClientMessage::SendInput { message_id, .. }
            | ClientMessage::Decide { message_id, .. }
            | ClientMessage::Intent { message_id, .. }
            | ClientMessage::ListFiles { message_id, .. }
            | ClientMessage::ReadFile { message_id, .. }
            | ClientMessage::ListBranches { message_id, .. }
            | ClientMessage::ListDevices { message_id }
            | ClientMessage::GetPush { message_id }
            | ClientMessage::SetPush { message_id, .. } => Some(message_id),
        }
    }
}

/// How much of the event stream a client wants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Verbosity {
    /// Every event.
    #[default]
    Full,
    /// No streamed partial deltas (whole blocks still arrive).
    NoPartials,
    /// No partial deltas, raw native lines or agent stderr: what a phone needs.
    Summary,
}

/// Host → client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum HostMessage {
    Welcome {
        #[serde(rename = "hostVersion")]
        host_version: String,
        #[serde(rename = "protocolVersion")]
        protocol_version: u32,
        /// The backends this host offers and what each can do.
        #[serde(default)]
        backends: Vec<BackendInfo>,
        /// This host's id at its relay, when it has one: how a device paired through the relay
        /// knows it, so a page on the host's own address can tell it is the same host.
        #[serde(rename = "relayHostID", default, skip_serializing_if = "Option::is_none")]
        relay_host_id: Option<String>,
        /// The host's [`SCHEMA_DIGEST`]; absent from hosts older than it.
        #[serde(rename = "schemaDigest", default, skip_serializing_if = "Option::is_none")]
        schema_digest: Option<String>,
    },
    /// The request succeeded; `result` carries what it produced, if anything.
    Ack {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<IntentResult>,
    },
    Projects {
        #[serde(rename = "messageID")]
        message_id: String,
        projects: Vec<ProjectSummary>,
    },
    Sessions {
        #[serde(rename = "messageID")]
        message_id: String,
        sessions: Vec<SessionSummary>,
    },
    GitFacts {
        #[serde(rename = "messageID")]
        message_id: String,
        facts: GitFacts,
    },
    /// A directory listing of a session's worktree.
    Files {
        #[serde(rename = "messageID")]
        message_id: String,
        path: String,
        entries: Vec<FileEntry>,
        /// More entries existed than `MAX_FILE_ENTRIES`.
        truncated: bool,
    },
    /// A project's local branches (most recent first, session branches left out).
    Branches {
        #[serde(rename = "messageID")]
        message_id: String,
        branches: Vec<String>,
        #[serde(rename = "defaultBranch")]
        default_branch: String,
    },
    /// The devices that signed in to this host.
    Devices {
        #[serde(rename = "messageID")]
        message_id: String,
        devices: Vec<DeviceSummary>,
    },
    /// This device's push settings.
    Push {
        #[serde(rename = "messageID")]
        message_id: String,
        push: PushSettings,
    },
    /// One file of a session's worktree.
    FileContent {
        #[serde(rename = "messageID")]
        message_id: String,
        file: FileContent,
    },
    /// One event of a subscribed session.
    Event { event: Event },
    /// Consecutive events of one subscribed session, in seq order — sent instead of `event`
    /// messages to clients that announced [`FEATURE_EVENT_BATCHES`], when events queue up
    /// (catch-up, bursts). Same cursor rules as single events.
    Events {
        #[serde(rename = "sessionID")]
        session_id: String,
        events: Vec<Event>,
    },
    /// A session's summary changed (status, pending approvals, cost, title …).
    SessionChanged { session: SessionSummary },
    Error {
        #[serde(rename = "messageID", default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        code: ProtocolErrorCode,
        message: String,
        /// For `alreadyResolved`: who answered first.
        #[serde(rename = "resolvedBy", default, skip_serializing_if = "Option::is_none")]
        resolved_by: Option<String>,
    },
    /// The host does not know this message type; nothing was done.
    Unsupported {
        #[serde(rename = "messageID", default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(rename = "messageType")]
        message_type: String,
    },
}

/// Machine-readable error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ProtocolErrorCode {
    /// Not JSON, or not the shape of any known message.
    BadMessage,
    TooLarge,
    /// `hello` missing or repeated, or a protocol version the host does not speak.
    BadHandshake,
    /// No valid credential: no token and no (or a wrong, replayed or revoked) device proof.
    Unauthorized,
    /// A valid credential that may not do this (an MCP grant without the scope, a critical
    /// request, its own session's or an ancestor's request); the message says why.
    Forbidden,
    NotFound,
    /// The approval was already answered (`resolvedBy` says by whom) or voided.
    AlreadyResolved,
    /// The cursor is past the end of the session (`fromSeq` > last seq + 1).
    BadCursor,
    /// The session's backend cannot do this.
    Unsupported,
    /// A git operation refused (conflict, dirty checkout, …); the message says which files.
    GitRefused,
    /// A guardrail (session or worktree limit, free disk) refused.
    LimitReached,
    InvalidRequest,
    Internal,
}
