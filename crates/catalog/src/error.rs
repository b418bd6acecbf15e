//! Errors of the catalog, each naming the file, row or operation it concerns.

use std::path::{Path, PathBuf};

/// A catalog operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but is not a readable SQLite database. The host may move it aside and
    /// rebuild the catalog from transcripts ([`crate::Catalog::rebuild_sessions`]).
    #[error(
        "catalog {path} is corrupt or not a SQLite database ({source}); move it aside and rebuild from transcripts"
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("catalog {path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "catalog {path} has schema version {found}, but this build knows only up to {supported}; upgrade nucleic (or move the file aside and rebuild)"
    )]
    TooNew { path: PathBuf, found: i64, supported: i64 },
    #[error("catalog {path}: migration to schema version {version} failed: {source}")]
    Migration {
        path: PathBuf,
        version: i64,
        #[source]
        source: rusqlite::Error,
    },
    #[error("catalog: {op}: {source}")]
    Sqlite {
        op: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("catalog: a project with root {root} already exists")]
    DuplicateProject { root: String },
    #[error("catalog: project {id} does not exist")]
    ProjectNotFound { id: String },
    #[error("catalog: project {id} still has {count} non-archived session(s); archive them first")]
    ProjectHasSessions { id: String, count: u64 },
    #[error("catalog: session {id} does not exist")]
    SessionNotFound { id: String },
    #[error("catalog: events for session {got} were applied to session {expected}")]
    SessionMismatch { expected: String, got: String },
    #[error("catalog: a device with id {id} already exists")]
    DuplicateDevice { id: String },
    #[error(
        "catalog: an MCP grant named {name} exists already (revoked names are not granted again); pick another name"
    )]
    DuplicateMcpGrant { name: String },
    #[error("catalog: no MCP grant named {name}")]
    McpGrantNotFound { name: String },
    #[error("catalog: device {id} does not exist")]
    DeviceNotFound { id: String },
    #[error("catalog: path {path} is not valid UTF-8")]
    NonUtf8Path { path: PathBuf },
    #[error("catalog: {what}: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("catalog: {what} {value} does not fit in a SQLite integer")]
    OutOfRange { what: &'static str, value: u64 },
    #[error("catalog: {0}")]
    Transcript(#[from] nucleic_store::StoreError),
}

impl CatalogError {
    /// True when the database file itself is damaged (rebuilding from transcripts is the fix).
    pub fn is_corrupt(&self) -> bool {
        matches!(self, CatalogError::Corrupt { .. })
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> CatalogError {
        CatalogError::Io { path: path.to_path_buf(), source }
    }

    /// Classifies an error met while opening `path`: damage → [`CatalogError::Corrupt`].
    pub(crate) fn open(path: &Path, source: rusqlite::Error) -> CatalogError {
        if is_corruption(&source) {
            CatalogError::Corrupt { path: path.to_path_buf(), source }
        } else {
            CatalogError::Open { path: path.to_path_buf(), source }
        }
    }
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// Shorthand for catalog results.
pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

/// Attaches the operation's name to a SQLite error.
pub(crate) trait SqlContext<T> {
    fn ctx(self, op: &'static str) -> Result<T>;
}

impl<T> SqlContext<T> for rusqlite::Result<T> {
    fn ctx(self, op: &'static str) -> Result<T> {
        self.map_err(|source| CatalogError::Sqlite { op, source })
    }
}

/// A `u64` as SQLite's `i64`, or an error naming `what`.
pub(crate) fn to_i64(what: &'static str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| CatalogError::OutOfRange { what, value })
}
