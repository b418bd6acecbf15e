//! Opening the database: private file modes, pragmas, and `PRAGMA user_version` migrations.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::error::{CatalogError, Result};

/// Schema steps, in order; step `i` brings `user_version` from `i` to `i + 1`. Never edit a
/// shipped step: add a new file.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_browser_sessions.sql"),
    include_str!("../migrations/0003_device_keys.sql"),
    include_str!("../migrations/0004_project_checks.sql"),
    include_str!("../migrations/0005_pool_size.sql"),
    include_str!("../migrations/0006_disk.sql"),
    include_str!("../migrations/0007_session_mode.sql"),
    include_str!("../migrations/0008_push_subscriptions.sql"),
    include_str!("../migrations/0009_quiet_hours_zone.sql"),
    include_str!("../migrations/0010_project_sandbox.sql"),
    include_str!("../migrations/0011_mcp_grants.sql"),
    include_str!("../migrations/0012_mcp_grant_projects.sql"),
];

/// The schema version this build writes (`PRAGMA user_version` after migrating).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Opens (creating if needed) the database at `path`, configured and migrated.
pub(crate) fn open(path: &Path) -> Result<Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| CatalogError::io(dir, e))?;
    }
    // Create the file ourselves so it is never world-readable, not even briefly.
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| CatalogError::io(path, e))?;
    let mut conn = Connection::open(path).map_err(|e| CatalogError::open(path, e))?;
    configure(&conn).map_err(|e| CatalogError::open(path, e))?;
    migrate(&mut conn, path)?;
    restrict_permissions(path)?;
    Ok(conn)
}

/// busy_timeout first (so the WAL switch itself waits out a lock), then WAL and foreign keys.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "busy_timeout", 5000)?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
    // The catalog is rebuildable from transcripts, so NORMAL (durable at checkpoints) is enough.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // An index read mostly by key: 1 MiB of page cache (SQLite's default is 2 MiB) bounds its
    // share of the host's memory however many sessions the catalog holds (docs/benchmarks.md).
    conn.pragma_update(None, "cache_size", -1024)?;
    Ok(())
}

/// Brings the schema up to [`SCHEMA_VERSION`], one transaction per step.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| CatalogError::open(path, e))?;
    let Ok(done) = usize::try_from(found) else {
        return Err(CatalogError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    };
    if found > SCHEMA_VERSION {
        return Err(CatalogError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in (1i64..).zip(MIGRATIONS).skip(done) {
        let fail = |source: rusqlite::Error| match CatalogError::open(path, source) {
            CatalogError::Open { path, source } => {
                CatalogError::Migration { path, version, source }
            }
            other => other,
        };
        let tx = conn.transaction().map_err(fail)?;
        tx.execute_batch(sql).map_err(fail)?;
        tx.pragma_update(None, "user_version", version).map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
    Ok(())
}

/// Sets 0600 on the database and on its `-wal` / `-shm` companions when they exist.
fn restrict_permissions(path: &Path) -> Result<()> {
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    for file in files {
        match std::fs::set_permissions(&file, Permissions::from_mode(0o600)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file != path => {}
            Err(e) => return Err(CatalogError::io(&file, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_step_is_counted() {
        assert_eq!(SCHEMA_VERSION, 12);
        assert!(MIGRATIONS.iter().all(|sql| !sql.trim().is_empty()));
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut conn = open(&path).unwrap();
        migrate(&mut conn, &path).unwrap();
        let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[test]
    fn quiet_hours_offsets_become_zones_or_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut conn = Connection::open(&path).unwrap();
        for (version, sql) in (1i64..).zip(&MIGRATIONS[..8]) {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", version).unwrap();
        }
        for (id, offset) in [
            ("east", Some(120)),
            ("west", Some(-300)),
            ("utc", Some(0)),
            ("india", Some(330)),
            ("none", None),
        ] {
            conn.execute("INSERT INTO devices (id, name, paired_at) VALUES (?1, ?1, 1)", [id])
                .unwrap();
            let quiet = offset.map(|_| 1320);
            conn.execute(
                "INSERT INTO push_subscriptions (device_id, endpoint, p256dh, auth, quiet_from, quiet_to, utc_offset, created_at) \
                 VALUES (?1, 'https://p', x'04', x'00', ?2, ?3, ?4, 1)",
                rusqlite::params![id, quiet, quiet.map(|_| 420), offset],
            )
            .unwrap();
        }
        migrate(&mut conn, &path).unwrap();
        let rows: Vec<(String, Option<i64>, Option<String>)> = conn
            .prepare("SELECT device_id, quiet_from, time_zone FROM push_subscriptions ORDER BY device_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let expected = [
            ("east", Some(1320), Some("Etc/GMT-2")),
            ("india", None, None),
            ("none", None, None),
            ("utc", Some(1320), Some("UTC")),
            ("west", Some(1320), Some("Etc/GMT+5")),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(id, q, z)| ((*id).to_owned(), *q, z.map(str::to_owned)))
            .collect();
        assert_eq!(rows, expected);
    }
}
