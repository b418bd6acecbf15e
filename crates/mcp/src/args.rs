//! The tools' arguments, as MCP clients send them (their JSON Schemas are the tools'
//! `inputSchema`, snapshot-tested), and the bounds on what a call may ask for.

use schemars::JsonSchema;
use serde::Deserialize;

/// The most events one `read_transcript` call answers.
pub const MAX_EVENTS: u32 = 200;
/// How many events `read_transcript` answers when not told.
pub const DEFAULT_EVENTS: u32 = 50;
/// The most bytes of events, or of a patch, one call answers (the rest is left for the next).
pub const MAX_RESULT_BYTES: usize = 256 * 1024;
/// The longest `wait_for_session` waits.
pub const MAX_WAIT_SECS: u32 = 600;
/// How long `wait_for_session` waits when not told.
pub const DEFAULT_WAIT_SECS: u32 = 60;

/// Arguments of `list_sessions`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListSessionsArgs {
    /// Only this project's sessions (its projectID); all projects when absent.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Include archived sessions.
    #[serde(default)]
    pub include_archived: bool,
}

/// Arguments of `start_session`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartSessionArgs {
    /// The project (its projectID, from `list_projects`).
    pub project_id: String,
    /// The first prompt.
    pub prompt: String,
    /// `claude`, `codex`, `gemini` or `simulated`; the project's default when absent.
    #[serde(default)]
    pub backend: Option<String>,
    /// The policy mode: `readonly`, `edit` or `full`; the project's default when absent.
    #[serde(default)]
    pub mode: Option<String>,
    /// The branch or commit to start from; the project's default branch when absent.
    #[serde(default)]
    pub base_ref: Option<String>,
    /// A title; made from the prompt when absent.
    #[serde(default)]
    pub title: Option<String>,
}

/// Arguments of `send_message`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendMessageArgs {
    pub session_id: String,
    /// The follow-up prompt.
    pub text: String,
}

/// Arguments naming one session.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionArgs {
    pub session_id: String,
}

/// Arguments of `read_transcript`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadTranscriptArgs {
    pub session_id: String,
    /// The first event's seq (1 = the beginning; the previous call's `nextSeq` to go on).
    #[serde(default)]
    pub from_seq: Option<u64>,
    /// How many events at most (default 50, at most 200; fewer when they pass 256 KiB).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// What to answer.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run the call as proposed (with `answers`: answer the agent's questions).
    Allow,
    /// Refuse; `message` goes back to the model and its turn goes on.
    Deny,
    /// Refuse and stop the turn.
    DenyAndStop,
}

/// One answer to one of the agent's questions.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuestionAnswerArg {
    /// The question's text, exactly as asked.
    pub question: String,
    /// The labels of the chosen options.
    #[serde(default)]
    pub choices: Vec<String>,
    /// Free text instead of (or besides) the options.
    #[serde(default)]
    pub other: Option<String>,
}

/// Arguments of `answer_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AnswerArgs {
    pub session_id: String,
    /// The request's id (`requestID` from `pending_approvals`).
    pub request_id: String,
    pub decision: Answer,
    /// Why, for a denial (the model reads it).
    #[serde(default)]
    pub message: Option<String>,
    /// For a question (`AskUserQuestion`) and `allow`: one answer per question asked.
    #[serde(default)]
    pub answers: Vec<QuestionAnswerArg>,
}

/// Arguments of `wait_for_session`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitArgs {
    pub session_id: String,
    /// How long to wait at most, in seconds (default 60, at most 600).
    #[serde(default)]
    pub timeout_secs: Option<u32>,
}

/// Arguments of `session_diff`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffArgs {
    pub session_id: String,
    /// Include the unified diff (cut at 256 KiB), not only the files changed.
    #[serde(default)]
    pub include_patch: bool,
}

/// How to finish a session (the ways that keep its work; discarding it is the person's).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FinishHow {
    /// End it; its worktree and branch stay.
    Keep,
    /// Merge its branch into the base branch.
    Merge,
    /// One squashed commit on the base branch.
    Squash,
    /// Replay its commits onto the base branch's tip.
    Rebase,
    /// Push its branch and open a pull request with `gh`.
    PullRequest,
}

/// Arguments of `finish_session`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FinishArgs {
    pub session_id: String,
    pub how: FinishHow,
    /// The commit message (merge, squash, rebase) or the pull request's title.
    #[serde(default)]
    pub message: Option<String>,
    /// Also fast-forward a clean checkout that has the base branch checked out (without it
    /// such a merge is refused and no file of the checkout changes).
    #[serde(default)]
    pub update_checkout: bool,
}
