//! What an `ack` carries: [`IntentResult`], the typed result of an intent (and of `decide`
//! and `exportSession`), tagged by `kind` so a client reads fields instead of casting JSON.
//! Each payload is also its own type, which decodes with or without the tag (a host from
//! before the tag, a remembered reply).

use serde::{Deserialize, Serialize};

use crate::approval::ApprovalResolved;
use crate::checks::{CheckFinished, Report};
use crate::is_false;
use crate::kind::{SessionUpdated, WorktreeReclaimed};
use crate::pull_request::PullRequestOpened;
use crate::review::ReviewComment;
use crate::rule_list::RuleList;
use crate::summaries::{DiskUsage, ProjectSummary, SessionSummary};

/// Declares [`IntentResult`] from one list, with [`IntentResult::payload`] and a
/// [`IntentPayload`] impl per payload type (each type is the payload of one kind).
macro_rules! intent_results {
    ($($(#[$doc:meta])* $variant:ident($payload:ty),)*) => {
        /// `ack.result`: what a request produced. The `kind` names the shape, not the request
        /// (several intents answer a `project`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
        #[serde(tag = "kind", rename_all = "camelCase")]
        pub enum IntentResult {
            $($(#[$doc])* $variant($payload),)*
        }

        impl IntentResult {
            /// The payload alone, as JSON without the `kind` tag (what a terminal prints).
            pub fn payload(&self) -> serde_json::Value {
                let value = match self {
                    $(IntentResult::$variant(v) => serde_json::to_value(v),)*
                };
                // Every payload is a plain struct of serializable fields.
                value.unwrap_or(serde_json::Value::Null)
            }
        }

        $(impl IntentPayload for $payload {
            #[allow(clippy::result_large_err)] // see the trait
            fn take(result: IntentResult) -> Result<Self, IntentResult> {
                if let IntentResult::$variant(payload) = result { Ok(payload) } else { Err(result) }
            }
        })*
    };
}

/// A payload of one [`IntentResult`] kind.
pub trait IntentPayload: Sized {
    /// The payload, when `result` is of this kind (else `result` back). The result is handed
    /// back as it came, unboxed: only a client's error path (a reply of another kind) takes it.
    #[allow(clippy::result_large_err)]
    fn take(result: IntentResult) -> Result<Self, IntentResult>;
}

intent_results! {
    /// `addProject`, `setPoolSize`, `setProjectChecks`, `setProjectSandbox`, `setDiskPolicy`.
    Project(ProjectSummary),
    /// `newSession`, `import`, `adoptSession`.
    Session(SessionSummary),
    /// `outsideSessions`.
    OutsideSessions(crate::outside::OutsideSessions),
    /// `measureDisk`.
    DiskUsage(DiskUsage),
    /// `reclaim`.
    Reclaimed(WorktreeReclaimed),
    /// `runChecks`.
    ChecksRun(ChecksRun),
    /// `report`.
    Report(Report),
    /// `addReviewComment`, `resolveReviewComment`.
    ReviewComment(ReviewComment),
    /// `reviewComments`.
    ReviewComments(ReviewComments),
    /// `sendReview`.
    ReviewSendout(ReviewSendout),
    /// `setMode`: the recorded `sessionUpdated`.
    SessionUpdated(SessionUpdated),
    /// `setProjectMode`.
    ProjectMode(ProjectMode),
    /// `listRules`.
    Rules(RuleList),
    /// `addRule`.
    RuleAdded(RuleAdded),
    /// `removeRule`.
    RuleRemoved(RuleRemoved),
    /// `finish { action: handoff }`.
    Handoff(Handoff),
    /// `finish` with `merge`, `squash` or `rebase`.
    Integrated(Integrated),
    /// `finish { action: pullRequest }`: the recorded event.
    PullRequest(PullRequestOpened),
    /// `gc`.
    Gc(GcReport),
    /// `rotateToken`.
    TokenRotated(TokenRotated),
    /// `pairDevice` (answered by the daemon's server).
    Pairing(Pairing),
    /// `decide`: how the approval was resolved.
    Approval(ApprovalResolved),
    /// `exportSession`.
    Exported(ExportedText),
    /// `attach`.
    Attached(Attached),
    /// `grantMcp`: the grant and its one-time credential.
    McpGranted(crate::mcp_grant::McpGranted),
    /// `listMcpGrants`, `revokeMcp`.
    McpGrants(crate::mcp_grant::McpGrants),
    /// `listChatBridges`, `unpairChatPerson`.
    ChatBridges(crate::chat_bridge::ChatBridges),
    /// `reportChatBridge`.
    ChatBridgeReported(crate::chat_bridge::ChatBridgeReported),
}

/// The largest attachment `attach` keeps (decoded bytes, all its parts).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;
/// The most one `attach` carries (decoded bytes; its base64 fits a sync message).
pub const MAX_ATTACHMENT_CHUNK_BYTES: u64 = 512 * 1024;

/// `attach`'s result: the file's name among the session's attachments (what `append` names),
/// where the agent reads it, and its size so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Attached {
    pub name: String,
    /// The absolute path inside the agent's sandbox (the same on the host).
    pub path: String,
    pub size: u64,
}

/// `runChecks`' result: each check once it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChecksRun {
    pub checks: Vec<CheckFinished>,
}

/// `reviewComments`' result, open and resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ReviewComments {
    pub comments: Vec<ReviewComment>,
}

/// `sendReview`'s result: how many comments went, as what prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ReviewSendout {
    pub sent: u64,
    pub prompt: String,
}

/// `setProjectMode`'s result: the project's default mode now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ProjectMode {
    #[serde(rename = "projectID")]
    pub project_id: String,
    pub mode: String,
}

/// `addRule`'s result: false when the rule was already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RuleAdded {
    pub added: bool,
}

/// `removeRule`'s result: how many entries went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RuleRemoved {
    pub removed: u64,
}

/// `finish { action: handoff }`'s result: the shell command that takes the session over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Handoff {
    pub command: String,
}

/// A merge, squash or rebase: the base branch and its new tip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Integrated {
    #[serde(rename = "baseBranch")]
    pub base_branch: String,
    #[serde(rename = "newTip")]
    pub new_tip: String,
}

/// `gc`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    /// Finished sessions' worktrees due for reclaiming (reclaimed, with `apply`).
    #[serde(default)]
    pub reclaimable_worktrees: Vec<Reclaimable>,
    /// Worktrees no session owns.
    #[serde(default)]
    pub orphan_worktrees: Vec<String>,
    /// Pooled worktrees the pool does not know.
    #[serde(default)]
    pub stale_pooled_worktrees: Vec<String>,
    /// Keepers no session knows.
    #[serde(default)]
    pub stray_keepers: Vec<String>,
    /// Session ids whose turn snapshots no worktree owns.
    #[serde(default)]
    pub stale_turn_snapshots: Vec<String>,
    /// Whether anything was removed (`apply`).
    #[serde(default)]
    pub removed: bool,
}

/// A worktree `gc` reclaims (or would).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Reclaimable {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub path: Option<String>,
    pub bytes: u64,
    #[serde(rename = "buildBytes")]
    pub build_bytes: u64,
    /// `age` or `budget`.
    pub reason: String,
    /// It was reclaimed (`apply`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub reclaimed: bool,
    /// Why it was not reclaimed, with `apply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `rotateToken`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct TokenRotated {
    #[serde(rename = "devicesRevoked")]
    pub devices_revoked: u64,
}

/// `pairDevice`'s result: a one-time link a phone opens (and its QR code).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Pairing {
    pub link: String,
    #[serde(rename = "hostID")]
    pub host_id: String,
    /// The host's public key, base64url.
    #[serde(rename = "hostKey")]
    pub host_key: String,
    /// The relay's WebSocket base URL.
    pub relay: String,
    /// Direct addresses of the host's LAN listener.
    pub lan: Vec<String>,
    /// When the link stops working, in Unix milliseconds.
    #[serde(rename = "expiresAt")]
    pub expires_at: u64,
    /// The link as a QR code (SVG), when one could be drawn.
    #[serde(rename = "qrSvg", default)]
    pub qr_svg: Option<String>,
}

/// `exportSession`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ExportedText {
    pub text: String,
}
