//! MCP grants: what the person lets a named MCP client do (`observe`, `start`, `steer`,
//! `approve`, `finish`), the one-time credential it authenticates with, and the grants as listed.

use serde::{Deserialize, Serialize};

/// One power an MCP principal may hold. The host checks every request of an MCP client
/// against its grant's scopes; `observe` is always held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum McpScope {
    /// Read projects, sessions, transcripts, pending approvals and diffs.
    Observe,
    /// Start sessions (recorded as started by the principal).
    Start,
    /// Send follow-ups to and interrupt sessions.
    Steer,
    /// Answer approvals and questions: never a critical one, never its own session's or its
    /// ancestors'.
    Approve,
    /// Finish sessions: keep, merge, squash, rebase or open a pull request — gated by the
    /// required checks as for the person, never forced past them, never its own session or
    /// its ancestors. Discard, rollback, continue and handoff stay the person's.
    Finish,
}

impl McpScope {
    /// Every scope, in order.
    pub const ALL: [McpScope; 5] =
        [McpScope::Observe, McpScope::Start, McpScope::Steer, McpScope::Approve, McpScope::Finish];

    /// The scope's wire name.
    pub fn name(self) -> &'static str {
        match self {
            McpScope::Observe => "observe",
            McpScope::Start => "start",
            McpScope::Steer => "steer",
            McpScope::Approve => "approve",
            McpScope::Finish => "finish",
        }
    }

    /// The scope named `name`.
    pub fn parse(name: &str) -> Option<McpScope> {
        McpScope::ALL.into_iter().find(|s| s.name() == name.trim())
    }
}

/// A grant as listed (never with its credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct McpGrantSummary {
    pub name: String,
    pub scopes: Vec<McpScope>,
    /// The session whose agent the client is: its requests, and its ancestors', are never
    /// the principal's to answer; sessions it starts are recorded as that session's children.
    #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The projects (ids) it covers; absent: every project. A session of another project is
    /// neither listed to it nor acted on by it.
    #[serde(rename = "projectIDs", default, skip_serializing_if = "Option::is_none")]
    pub project_ids: Option<Vec<String>>,
    /// When it was granted, in Unix milliseconds.
    #[serde(rename = "grantedAt")]
    pub granted_at: i64,
    /// When it was revoked, in Unix milliseconds (a revoked name is never granted again).
    #[serde(rename = "revokedAt", default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
}

/// `grantMcp`'s result: the grant and its credential, shown this once (the host keeps only
/// its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct McpGranted {
    pub grant: McpGrantSummary,
    pub credential: String,
}

/// `listMcpGrants`' and `revokeMcp`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct McpGrants {
    pub grants: Vec<McpGrantSummary>,
}

/// The prefix of every MCP credential (`Authorization: Bearer nucleic-mcp-…`).
pub const MCP_CREDENTIAL_PREFIX: &str = "nucleic-mcp-";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_by_name() {
        for scope in McpScope::ALL {
            assert_eq!(McpScope::parse(scope.name()), Some(scope));
            let wire = serde_json::to_string(&scope).unwrap();
            assert_eq!(wire, format!("\"{}\"", scope.name()));
        }
        assert_eq!(McpScope::parse("admin"), None);
    }
}
