//! Reviewing a session's work: the turns it can be diffed by (snapshots of the worktree at
//! each turn boundary) and review comments on lines of the diff, sent to the agent as one
//! follow-up. See `docs/dev-loop.md`.

use crate::is_false;
use serde::{Deserialize, Serialize};

/// One turn of a session whose worktree the host snapshotted at its start (and, once it ended,
/// at its end): `gitFacts { turn }` shows what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct TurnSnapshot {
    /// 1 for the first prompt, 2 for the first follow-up, …
    pub turn: u32,
    /// Unix milliseconds of the start snapshot (the prompt was sent).
    #[serde(rename = "startedAt")]
    pub started_at: i64,
    /// Unix milliseconds of the end snapshot; absent while the turn runs.
    #[serde(rename = "endedAt", default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
}

/// Whether a review comment still asks for something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum CommentStatus {
    Open,
    Resolved,
}

/// A comment on a line (or lines) of a session's diff, kept by the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ReviewComment {
    #[serde(rename = "commentID")]
    pub comment_id: String,
    /// The file, relative to the worktree.
    pub path: String,
    /// First line commented on (1-based, in the file as it was at `snapshot`).
    pub line: u32,
    /// Last line of a range (absent: one line).
    #[serde(rename = "endLine", default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    pub body: String,
    /// The lines commented on, as they were at `snapshot` (quoted to the agent).
    pub quote: Vec<String>,
    /// The worktree snapshot (a git tree id) the comment was made on.
    pub snapshot: String,
    pub status: CommentStatus,
    /// The commented lines are no longer what `quote` says in the worktree now.
    #[serde(default, skip_serializing_if = "is_false")]
    pub outdated: bool,
    /// Unix milliseconds.
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "createdBy")]
    pub created_by: String,
    /// When it was sent to the agent (`sendReview`), Unix milliseconds.
    #[serde(rename = "sentAt", default, skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<i64>,
}

impl ReviewComment {
    /// `path:line` or `path:line-end`, as the agent reads it.
    pub fn citation(&self) -> String {
        match self.end_line {
            Some(end) if end != self.line => format!("{}:{}-{end}", self.path, self.line),
            _ => format!("{}:{}", self.path, self.line),
        }
    }
}

/// A review was sent to the agent as one follow-up (the `userText` just before it): the
/// comments it cited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ReviewSent {
    pub comments: Vec<ReviewComment>,
    /// Who sent it.
    pub by: String,
}

impl ReviewSent {
    /// `review sent by me: a.txt:1, b.txt:2-3`.
    pub fn summary(&self) -> String {
        let cited: Vec<String> = self.comments.iter().map(ReviewComment::citation).collect();
        format!("review sent by {}: {}", self.by, cited.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_cites_its_path_and_lines() {
        let mut c = ReviewComment {
            comment_id: "c1".into(),
            path: "src/calc.py".into(),
            line: 3,
            end_line: None,
            body: "add, not subtract".into(),
            quote: vec!["    return a - b".into()],
            snapshot: "a".repeat(40),
            status: CommentStatus::Open,
            outdated: false,
            created_at: 0,
            created_by: "cli".into(),
            sent_at: None,
        };
        assert_eq!(c.citation(), "src/calc.py:3");
        c.end_line = Some(5);
        assert_eq!(c.citation(), "src/calc.py:3-5");
        let json = serde_json::to_value(&c).unwrap_or_default();
        assert_eq!(json["commentID"], "c1");
        assert_eq!(json["endLine"], 5);
        assert_eq!(json["status"], "open");
        assert!(json.get("outdated").is_none());
    }
}
