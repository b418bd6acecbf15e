//! Intents: the requests that create, change or end things (`intent` messages of the sync
//! protocol), and the parts they carry: a new session, how a session's work ends, an export's
//! format.

use serde::{Deserialize, Serialize};

use crate::approval::RuleScope;
use crate::checks::CheckSpec;
use crate::event::Backend;
use crate::is_false;
use crate::rule_list::{RuleBehaviour, RulesTarget};
use crate::summaries::DiskPolicy;

/// Requests that create, change or end things.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Intent {
    /// Registers a git repository as a project (its checkout on the host); answers the
    /// `ProjectSummary`. A setup script and files to copy prepare each new worktree.
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
    /// Renames a project (its display name only).
    RenameProject {
        #[serde(rename = "projectID")]
        project_id: String,
        name: String,
    },
    /// Forgets a project; refused while it has sessions that are not archived.
    RemoveProject {
        #[serde(rename = "projectID")]
        project_id: String,
    },
    /// Starts a session: a worktree on a new branch and an agent with the first prompt;
    /// answers the `SessionSummary`.
    NewSession(NewSession),
    /// Attaches a file to the session (a photo or document sent from a chat): the host keeps it,
    /// 0600, in the session's attachments folder, which its agent can read but not write, and
    /// removes it when the session finishes. `name` is one plain file name (no `/`, no `..`, no
    /// leading dot); `content` is base64, at most `MAX_ATTACHMENT_CHUNK_BYTES` decoded (a sync
    /// message is at most 1 MiB). A larger file comes in parts: the first makes the file (a new
    /// name when `name` is taken), each next one names it in `append` (the name `attached`
    /// answered), up to `MAX_ATTACHMENT_BYTES` in all. Answers `attached`.
    Attach {
        #[serde(rename = "sessionID")]
        session_id: String,
        name: String,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        append: Option<String>,
    },
    /// Interrupts the agent's current turn (the session stays, ready for a follow-up).
    Interrupt {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// Stops the session's agent process (and its running checks); a follow-up resumes it.
    Stop {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    /// Switches the session's model (free text; `backends[].models` are suggestions).
    SetModel {
        #[serde(rename = "sessionID")]
        session_id: String,
        model: String,
    },
    /// Switches the backend's own permission mode (one of `backends[].permissionModes`).
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
    /// answers with the `RuleList`.
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
    /// Renames a session (its title).
    Rename {
        #[serde(rename = "sessionID")]
        session_id: String,
        title: String,
    },
    /// Archives a session (hidden from the default lists) or brings it back.
    Archive {
        #[serde(rename = "sessionID")]
        session_id: String,
        archived: bool,
    },
    /// Ends a session's work: merge, squash, rebase, pull request, keep, discard, rollback,
    /// continue or handoff (`FinishAction`; each one's reply below).
    Finish {
        #[serde(rename = "sessionID")]
        session_id: String,
        action: FinishAction,
    },
    /// A read-only session from a file on the host: a Nucleic export (markdown or JSONL) or a
    /// Claude Code transcript (`~/.claude/projects/…/<id>.jsonl`).
    Import { path: String },
    /// The person's own Claude Code and Codex sessions of a project, made outside Nucleic
    /// (`OutsideSessions`): read from the head and tail of each file, within a deadline.
    OutsideSessions {
        #[serde(rename = "projectID")]
        project_id: String,
    },
    /// Carries an outside session on as a Nucleic session (`session`): a new worktree off the
    /// checkout's current commit, its history first, the conversation forked so the original
    /// is left as it was, `prompt` its first new turn under the policy (and `mode`, else the
    /// project's). With `inPlace`, in the checkout it came from instead, the conversation
    /// resumed itself (not forked), under a lock no other host or adoption can take while this
    /// one holds it; refused when a live CLI process holds the conversation.
    AdoptSession {
        #[serde(rename = "projectID")]
        project_id: String,
        /// The CLI's own session id (`OutsideSession.id`).
        session: String,
        prompt: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<String>,
        #[serde(rename = "inPlace", default, skip_serializing_if = "crate::is_false")]
        in_place: bool,
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
    /// Sets what a project's agents see beyond the default confinement (replacing what was
    /// set; an empty one goes back to the defaults). Applies at each agent's next start.
    SetProjectSandbox {
        #[serde(rename = "projectID")]
        project_id: String,
        sandbox: crate::summaries::ProjectSandbox,
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
    /// Grants a named MCP client scopes (`observe` always; `start`, `steer`, `approve`, `finish` as
    /// listed) and answers its credential, shown once. Only the person (the token or a signed-in
    /// device) may grant; a name already granted, even revoked, is refused.
    GrantMcp {
        name: String,
        scopes: Vec<crate::mcp_grant::McpScope>,
        /// The session whose agent the MCP client is (it may then never answer that session's
        /// or its ancestors' requests).
        #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// The projects (ids) the grant covers: it sees, starts in and acts on those only.
        /// Absent: every project.
        #[serde(rename = "projectIDs", default, skip_serializing_if = "Option::is_none")]
        project_ids: Option<Vec<String>>,
    },
    /// Revokes an MCP grant: its connections close at once and its credential is never
    /// accepted again. Only the person.
    RevokeMcp { name: String },
    /// The MCP grants, revoked ones included (never their credentials). Only the person.
    ListMcpGrants,
    /// A chat bridge reports itself: its state and its paired users (when it starts, when a
    /// pairing changes, and every minute). Only the host's token (the bridge's own connection,
    /// not one acting for a chat user). Answers the users the person unpaired.
    ReportChatBridge { report: crate::chat_bridge::ChatBridgeReport },
    /// The chat bridges, their state and paired users. Only the person.
    ListChatBridges,
    /// Unpairs a chat user (`telegram:42`): their connections close at once and the host
    /// refuses to act for them until they pair again (`nucleic chat pair`, `/cc pair`). Only the
    /// person.
    UnpairChatPerson { person: String },
}

impl Intent {
    /// `addProject` of the repository at `path`, every setting left at the host's default.
    pub fn add_project(path: impl Into<String>) -> Intent {
        Intent::AddProject {
            path: path.into(),
            name: None,
            setup_script: None,
            copy_files: Vec::new(),
            default_backend: None,
            checks: Vec::new(),
            checks_after_turn: false,
            pool_size: None,
        }
    }
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
    /// A new session starting from this one's changes, forking its conversation; or, with
    /// `backend` another agent (one stopped by a rate limit, say), a new conversation in that
    /// backend whose first prompt hands over the task, a summary of the conversation and the
    /// changes so far, then `prompt`.
    Continue {
        prompt: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<Backend>,
    },
    /// The shell command that resumes the session by hand.
    Handoff,
}
