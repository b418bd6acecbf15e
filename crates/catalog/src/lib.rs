//! The catalog: a SQLite index of projects, sessions, approvals, devices, MCP grants and client
//! message ids.
//!
//! Transcripts stay the source of truth. Every session row is a fold of its transcript's events
//! ([`Catalog::apply_events`]) and the whole session index can be recreated from the transcripts
//! alone ([`Catalog::rebuild_sessions`]). Projects, devices and remembered client responses are
//! the catalog's own data.
//!
//! One connection behind a mutex: a single writer by construction, meant to be called from
//! blocking threads (`spawn_blocking`), shared as `Arc<Catalog>`. Timestamps are unix millis.
//!
//! - `db`: opening the database (rusqlite, bundled): private file modes, WAL, `user_version`
//!   migrations up to [`SCHEMA_VERSION`] (schema 3 revoked the cookie-era browsers).
//! - `projects`: projects ([`ProjectRow`]) and the defaults their new sessions start from.
//! - `sessions`, `fold`: session rows ([`SessionRow`]) folded from their events, and approvals.
//! - `devices`: devices ([`DeviceRow`]: id, name, public key, last seen, revoked).
//! - `push`: devices' Web Push subscriptions.
//! - `mcp_grants`: MCP principals ([`NewMcpGrant`]): scopes, bound session, credential hash.
//! - `client_messages`: remembered client replies, bounded ([`ReplyCacheLimits`]: a day, 10,000
//!   replies, 8 MiB).
//! - `rebuild`: the session index recreated from transcripts alone ([`RebuildReport`]).
//! - `wire`: protocol types as SQLite values; `error`: [`CatalogError`].

mod client_messages;
mod db;
mod devices;
mod error;
mod fold;
mod mcp_grants;
mod projects;
mod push;
mod rebuild;
mod sessions;
mod wire;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::Connection;

pub use client_messages::ReplyCacheLimits;
pub use db::SCHEMA_VERSION;
pub use devices::{DeviceRow, NewDevice};
pub use error::{CatalogError, Result};
pub use fold::UNTITLED;
pub use mcp_grants::NewMcpGrant;
pub use projects::{DEFAULT_POOL_SIZE, NewProject, ProjectRow, ProjectSettings};
pub use push::PushSubscriptionRow;
pub use rebuild::RebuildReport;
pub use sessions::{AgentProcess, ApprovalRow, SessionFilter, SessionRow};

/// The catalog database. `Send + Sync`; share it as `Arc<Catalog>`.
#[derive(Debug)]
pub struct Catalog {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl Catalog {
    /// Opens (creating if needed) the catalog at `path`: a 0700 parent directory, a 0600 file,
    /// WAL, foreign keys on, and the schema migrated to [`SCHEMA_VERSION`]. A file from a newer
    /// build is refused ([`CatalogError::TooNew`]); a damaged one is reported as
    /// [`CatalogError::Corrupt`] (move it aside and rebuild).
    pub fn open(path: &Path) -> Result<Catalog> {
        let conn = db::open(path)?;
        Ok(Catalog { path: path.to_path_buf(), conn: Mutex::new(conn) })
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version recorded in the file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64> {
        use error::SqlContext;
        self.conn()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .ctx("read user_version")
    }

    /// The connection. A panic while it was held cannot leave a transaction open (rusqlite rolls
    /// back on drop), so a poisoned lock is safe to reuse.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Catalog>();
    }
}
