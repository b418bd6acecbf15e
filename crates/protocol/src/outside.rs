//! Sessions made outside Nucleic that the person's agent CLIs keep for a project: what
//! `outsideSessions` lists, each one `adoptSession` can carry on.

use serde::{Deserialize, Serialize};

use crate::event::Backend;

/// `outsideSessions`' result: the project's sessions, newest first, and how the search went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OutsideSessions {
    pub sessions: Vec<OutsideSession>,
    /// Session files looked at (of every project, for Codex).
    pub examined: u32,
    /// Files of the project's folders that were not sessions, and why (at most 20).
    pub skipped: Vec<SkippedSessionFile>,
    /// Why the search stopped early (its deadline, its file count), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

/// One session a CLI keeps, read from the head and tail of its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OutsideSession {
    pub backend: Backend,
    /// The CLI's own session id: what `adoptSession` and the CLI's `--resume` take.
    pub id: String,
    /// Its file on the host.
    pub path: String,
    /// The folder it ran in (the checkout or below it), and whether it still exists.
    pub cwd: String,
    pub cwd_exists: bool,
    /// Its title, or its first prompt (80 characters at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its first and last timestamps, as the CLI wrote them (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<String>,
    /// Its turns: exactly when the whole file was read, else at least this many.
    pub turns: u32,
    pub turns_exact: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
    /// A CLI process holding it now (it can then only be adopted as a fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveHolder>,
    /// Lines of a kind this version does not know (a newer CLI), and lines that are not JSON,
    /// in what was read.
    pub unknown_lines: u32,
    pub bad_lines: u32,
    /// Whether `adoptSession` can carry it on (its backend can fork the conversation).
    pub adoptable: bool,
}

/// The CLI process on an outside session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct LiveHolder {
    pub pid: u32,
    /// `claude` or `codex`.
    pub program: String,
    /// How it was matched to the session (its open file, its command line, its folder).
    pub why: String,
}

/// A file in a CLI's folders for the project that is not a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct SkippedSessionFile {
    pub path: String,
    pub why: String,
}
