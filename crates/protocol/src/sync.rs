//! The sync protocol: messages between the host and its clients (web cockpit, CLI, phone).
//! Transport-agnostic — the same JSON objects travel over a local WebSocket, plain HTTP, or
//! later an end-to-end encrypted relay — so nothing here depends on the connection. See
//! `docs/protocol.md`.

use serde::{Deserialize, Serialize};

use crate::approval::{Decision, RuleScope};
use crate::capabilities::BackendInfo;
use crate::checks::CheckSpec;
use crate::device::{DeviceProof, DeviceSummary};
use crate::event::{Backend, Event};
use crate::files::{FileContent, FileEntry};
use crate::is_false;
use crate::push::{PushSettings, QuietHours, WebPushSubscription};
use crate::rule_list::{RuleBehaviour, RulesTarget};
use crate::summaries::{DiskPolicy, GitFacts, ProjectSummary, SessionSummary};

/// Bumped on incompatible changes; `hello` carries the client's, `welcome` the host's.
pub const PROTOCOL_VERSION: u32 = 1;

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

/// Requests that create, change or end things.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Intent {
    AddProject {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(rename = "setupScript", default, skip_serializing_if = "Option::is_none")]
        setup_script: Option<String>,
        #[serde(rename = "copyFiles", default)]
        copy_files: Vec<String>,
        #[serde(rename = "defaultBackend", default, skip_serializing_if = "Option::is_none")]
        default_backend: Option<Backend>,
        /// Commands the host runs itself (tests, lint, build); see `docs/dev-loop.md`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        checks: Vec<CheckSpec>,
        /// Run the checks after every turn (and report).
        #[serde(rename = "checksAfterTurn", default, skip_serializing_if = "is_false")]
        checks_after_turn: bool,
        /// Worktrees kept prepared for new sessions (the host's default when absent; 0: none).
        #[serde(rename = "poolSize", default, skip_serializing_if = "Option::is_none")]
        pool_size: Option<u32>,
    },
    /// Changes how many worktrees the project keeps prepared (0 turns the pool off).
    SetPoolSize {
        #[serde(rename = "projectID")]
        project_id: String,
        size: u32,
    },
    /// Replaces a project's checks (and, when given, whether they run after every turn).
    SetProjectChecks {
        #[serde(rename = "projectID")]
        project_id: String,
        checks: Vec<CheckSpec>,
        #[serde(rename = "checksAfterTurn", default, skip_serializing_if = "Option::is_none")]
        checks_after_turn: Option<bool>,
    },
    /// Runs the project's checks (or the one named) in the session's worktree now; answers
    /// with their `checkFinished` results once they ended.
    RunChecks {
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Records and answers the session's report (claims next to facts).
    Report {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// A review comment on lines of the session's diff (new side, 1-based), kept by the host
    /// until the person resolves it; answers with the `ReviewComment`.
    AddReviewComment {
        #[serde(rename = "sessionID")]
        session_id: String,
        path: String,
        line: u32,
        #[serde(rename = "endLine", default, skip_serializing_if = "Option::is_none")]
        end_line: Option<u32>,
        body: String,
        /// The snapshot the diff showed (`gitFacts.snapshot`); absent: the worktree now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        snapshot: Option<String>,
    },
    /// Marks a review comment resolved (or open again); answers with it.
    ResolveReviewComment {
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(rename = "commentID")]
        comment_id: String,
        resolved: bool,
    },
    /// The session's review comments, open and resolved, each marked `outdated` when its
    /// lines changed since; answers `{ comments }`.
    ReviewComments {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// Sends the open comments not sent yet to the agent as one follow-up citing `path:line`,
    /// the quoted lines and the comment of each; answers `{ sent, prompt }`.
    SendReview {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    RenameProject {
        #[serde(rename = "projectID")]
        project_id: String,
        name: String,
    },
    RemoveProject {
        #[serde(rename = "projectID")]
        project_id: String,
    },
    NewSession(NewSession),
    Interrupt {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    Stop {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    SetModel {
        #[serde(rename = "sessionID")]
        session_id: String,
        model: String,
    },
    SetPermissionMode {
        #[serde(rename = "sessionID")]
        session_id: String,
        mode: String,
    },
    /// Switches the session's policy mode (`readonly`, `edit` or `full`); recorded as a
    /// `sessionUpdated` event. See `docs/policy.md`, "Modes".
    SetMode {
        #[serde(rename = "sessionID")]
        session_id: String,
        mode: String,
    },
    /// Sets the mode new sessions of a project start in (`null`: back to the host's default).
    SetProjectMode {
        #[serde(rename = "projectID")]
        project_id: String,
        #[serde(default)]
        mode: Option<String>,
    },
    /// The rules that apply to a session (with its project's) or to a project, by scope;
    /// answers with [`RuleList`].
    ListRules(RulesTarget),
    /// Adds a rule in Claude Code's syntax to Nucleic's rules of `scope` (`session` needs a
    /// running session, `project` a session or project).
    AddRule {
        #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
        project_id: Option<String>,
        scope: RuleScope,
        behaviour: RuleBehaviour,
        rule: String,
    },
    /// Removes a rule (written exactly as listed) from Nucleic's rules of `scope`.
    RemoveRule {
        #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(rename = "projectID", default, skip_serializing_if = "Option::is_none")]
        project_id: Option<String>,
        scope: RuleScope,
        rule: String,
    },
    Rename {
        #[serde(rename = "sessionID")]
        session_id: String,
        title: String,
    },
    Archive {
        #[serde(rename = "sessionID")]
        session_id: String,
        archived: bool,
    },
    Finish {
        #[serde(rename = "sessionID")]
        session_id: String,
        action: FinishAction,
    },
    /// A read-only session from a file on the host: a Nucleic export (markdown or JSONL) or a
    /// Claude Code transcript (`~/.claude/projects/…/<id>.jsonl`).
    Import {
        path: String,
    },
    /// Worktrees under `.nucleic/worktrees` that no session owns, and finished sessions'
    /// worktrees due for reclaiming (by the projects' disk policies); removed only with `apply`.
    Gc {
        #[serde(default)]
        apply: bool,
    },
    /// Sets a project's worktree budget and reclaim age (absent: none).
    SetDiskPolicy {
        #[serde(rename = "projectID")]
        project_id: String,
        policy: DiskPolicy,
    },
    /// Measures what the session's worktree takes on disk now (the summary carries it).
    MeasureDisk {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// Removes a finished session's worktree directory now (branch and uncommitted work kept).
    Reclaim {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// Revoke a device (a device revoking itself is signing out): its connections close at once
    /// and its key is never accepted again.
    RevokeDevice {
        #[serde(rename = "deviceID")]
        device_id: String,
    },
    /// A new host token: every device is revoked and every connection closed; clients holding
    /// the token read the new one from `$NUCLEIC_HOME/token`.
    RotateToken,
    /// Opens a pairing for a new device (`nucleic pair`): answers a one-time link — the relay,
    /// the host's id and static key, a pairing secret (10 minutes, single use) — and its
    /// expiry. Only for the host's own machine (the token or a local browser), never through
    /// the relay; needs `nucleic serve --relay`.
    PairDevice {
        /// The name the paired device is recorded under (default: "paired device").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A shorter life than the default 600 s (capped at 600).
        #[serde(rename = "ttlSecs", default, skip_serializing_if = "Option::is_none")]
        ttl_secs: Option<u32>,
    },
}

/// Export document formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ExportFormat {
    /// The "Nucleic session export" markdown: header, conversation, raw events.
    #[default]
    Markdown,
    /// One event per line.
    Jsonl,
}

/// A new session in a fresh worktree of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct NewSession {
    #[serde(rename = "projectID")]
    pub project_id: String,
    /// Branch or commit to start from (default: the project's default branch).
    #[serde(rename = "baseRef", default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(rename = "permissionMode", default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The policy mode (`readonly`, `edit`, `full`); the project's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub prompt: String,
}

/// How a session's work ends (or continues).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum FinishAction {
    /// Merge the session branch (its uncommitted work committed first) into the base branch.
    Merge {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Allow updating the files of a (clean) checkout that has the base branch checked
        /// out; without it such a merge is refused and no checkout changes.
        #[serde(rename = "updateCheckout", default, skip_serializing_if = "is_false")]
        update_checkout: bool,
        /// Integrate although required checks fail; the reason is recorded.
        #[serde(rename = "forceReason", default, skip_serializing_if = "Option::is_none")]
        force_reason: Option<String>,
    },
    /// One squashed commit on the base branch.
    Squash {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Allow updating the files of a (clean) checkout that has the base branch checked
        /// out; without it such a merge is refused and no checkout changes.
        #[serde(rename = "updateCheckout", default, skip_serializing_if = "is_false")]
        update_checkout: bool,
        /// Integrate although required checks fail; the reason is recorded.
        #[serde(rename = "forceReason", default, skip_serializing_if = "Option::is_none")]
        force_reason: Option<String>,
    },
    /// Replay the session's commits onto the base branch's tip.
    Rebase {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Allow updating the files of a (clean) checkout that has the base branch checked
        /// out; without it such a merge is refused and no checkout changes.
        #[serde(rename = "updateCheckout", default, skip_serializing_if = "is_false")]
        update_checkout: bool,
        /// Integrate although required checks fail; the reason is recorded.
        #[serde(rename = "forceReason", default, skip_serializing_if = "Option::is_none")]
        force_reason: Option<String>,
    },
    /// Push the session branch (its uncommitted work committed first) to the project's remote
    /// and open a pull request with `gh`; the required checks gate it as they gate a merge.
    PullRequest {
        /// Defaults to the session's title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        draft: bool,
        /// The branch to merge into; defaults to the session's base branch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
        /// `[HOST/]OWNER/REPO`; defaults to the one the remote's URL names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repo: Option<String>,
        /// Open it although required checks fail; the reason is recorded.
        #[serde(rename = "forceReason", default, skip_serializing_if = "Option::is_none")]
        force_reason: Option<String>,
    },
    /// Remove the worktree and its branch.
    Discard,
    /// Preserve the worktree and branch as they are.
    Keep,
    /// Delete a kept session's worktree and branch; needs `confirm: true`.
    Rollback { confirm: bool },
    /// A new session starting from this one's changes, forking its conversation.
    Continue { prompt: String },
    /// The shell command that resumes the session by hand.
    Handoff,
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
    },
    /// The request succeeded; `result` carries what it produced, if anything.
    Ack {
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<serde_json::Value>,
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
