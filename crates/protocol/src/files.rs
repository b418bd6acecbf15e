//! Read-only views of a session's worktree: directory listings and file contents.

use serde::{Deserialize, Serialize};

/// Largest file content the host returns in one `fileContent` (larger files are truncated).
pub const MAX_FILE_CONTENT_BYTES: u64 = 4 * 1024 * 1024;

/// Most entries one `files` reply lists (`truncated` says when there were more).
pub const MAX_FILE_ENTRIES: usize = 5000;

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
}

/// One entry of a worktree listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct FileEntry {
    /// Relative to the worktree root, `/`-separated.
    pub path: String,
    pub kind: FileKind,
    /// Bytes (0 for directories).
    pub size: u64,
}

/// How `FileContent::content` is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum FileEncoding {
    Utf8,
    Base64,
}

/// A file of the worktree (text as UTF-8, anything else as base64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct FileContent {
    pub path: String,
    /// The whole file's size in bytes.
    pub size: u64,
    /// A MIME type guessed from the name (`text/plain`, `image/png`, …).
    pub mime: String,
    pub encoding: FileEncoding,
    pub content: String,
    /// Only the first `MAX_FILE_CONTENT_BYTES` are here.
    pub truncated: bool,
}
