//! The pull request a session was finished with: where it is and what it was opened from.

use serde::{Deserialize, Serialize};

/// The host pushed the session's branch and opened a pull request for it (always on a
/// person's request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PullRequestOpened {
    /// The pull request's page.
    pub url: String,
    pub number: u64,
    /// `open` or `draft` when it was opened.
    pub state: String,
    pub title: String,
    /// `[HOST/]OWNER/REPO` it was opened in.
    pub repo: String,
    /// The pushed branch.
    pub head: String,
    /// The branch it asks to merge into.
    pub base: String,
    /// The commit pushed.
    #[serde(rename = "headSha")]
    pub head_sha: String,
    /// The remote's name and URL the branch was pushed to.
    pub remote: String,
    #[serde(rename = "remoteURL")]
    pub remote_url: String,
    pub by: String,
    /// Opened although required checks failed: the reason given (and which failed).
    #[serde(rename = "forcedReason", default, skip_serializing_if = "Option::is_none")]
    pub forced_reason: Option<String>,
}

impl PullRequestOpened {
    /// One line a person reads: `pull request #7 (open) https://… — nucleic/x into main by cli`.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "pull request #{} ({}) {} — {} into {} by {}",
            self.number, self.state, self.url, self.head, self.base, self.by
        );
        if let Some(reason) = &self.forced_reason {
            line.push_str(&format!(" (forced: {reason})"));
        }
        line
    }
}
