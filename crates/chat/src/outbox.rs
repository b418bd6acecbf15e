//! The bridge's durable state in its own SQLite file (`chat.db`, 0600, WAL, `synchronous=FULL`):
//! the **outbox** — every message to a chat is written here before it is sent, with the
//! transaction id its retries reuse (Matrix delivers a repeated `txnId` once), sent in order per
//! chat, retried with backoff that honours the service's `retry_after` — the **inbound** record
//! (an update is recorded before it is acted on, so a redelivered one is not run twice), and the
//! services' sync **cursors** (Telegram's offset, Matrix's `since`).

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use thiserror::Error;

/// Why the bridge's store failed.
#[derive(Debug, Error)]
pub enum OutboxError {
    #[error("chat store {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("chat store {path}: {source}")]
    Sql { path: PathBuf, source: rusqlite::Error },
}

/// A message waiting to be sent (or being retried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub id: i64,
    /// The transport's name (`telegram`, `matrix`).
    pub transport: String,
    /// The chat (Telegram chat id and topic, Matrix room and thread) as the transport writes it.
    pub chat: String,
    /// What to send, as the transport serializes it.
    pub body: String,
    /// Reused by every attempt: Matrix's `txnId`, the key a duplicate is told by.
    pub txn_id: String,
    pub attempts: u32,
}

/// What became of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The service took it (its id for the message, when it gave one).
    Sent { remote_id: Option<String> },
    /// Try again after the service's `retry_after`, or after backoff.
    Retry { retry_after: Option<Duration>, error: String },
    /// The service refused it for good (a chat that is gone, a message it will never take).
    Failed { error: String },
}

/// Counts of the outbox, for `doctor` and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboxCounts {
    pub queued: u64,
    pub sent: u64,
    pub failed: u64,
}

/// The first retry's delay; each next one doubles, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// A `retry_after` longer than this is taken as this (a service asking for hours is down).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The bridge's store: one connection, one writer.
#[derive(Debug)]
pub struct Outbox {
    path: PathBuf,
    conn: Connection,
    /// This store's prefix for transaction ids, made once when the file is created, so ids
    /// never repeat across a store deleted and made again.
    txn_prefix: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    transport TEXT NOT NULL,
    chat TEXT NOT NULL,
    body TEXT NOT NULL,
    txn_id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at INTEGER,
    remote_id TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS outbox_queued ON outbox (state, transport, chat, id);
CREATE TABLE IF NOT EXISTS inbound (
    transport TEXT NOT NULL,
    update_id TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    done_at INTEGER,
    PRIMARY KEY (transport, update_id)
);
CREATE TABLE IF NOT EXISTS cursors (transport TEXT PRIMARY KEY, value TEXT NOT NULL);
";

impl Outbox {
    /// Opens (creating if needed) the store at `path`: a 0700 directory, a 0600 file.
    pub fn open(path: &Path) -> Result<Outbox, OutboxError> {
        let io = |e| OutboxError::Io { path: path.to_path_buf(), source: e };
        let sql = |e| OutboxError::Sql { path: path.to_path_buf(), source: e };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        }
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "busy_timeout", 5000).map_err(sql)?;
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
            .map_err(sql)?;
        // A message queued must outlive the machine losing power, not only the process.
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        let fresh = uuid::Uuid::new_v4().simple().to_string();
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('txn_prefix', ?1)", [&fresh])
            .map_err(sql)?;
        let txn_prefix: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'txn_prefix'", [], |r| r.get(0))
            .map_err(sql)?;
        Ok(Outbox { path: path.to_path_buf(), conn, txn_prefix })
    }

    fn sql(&self, e: rusqlite::Error) -> OutboxError {
        OutboxError::Sql { path: self.path.clone(), source: e }
    }

    /// Writes a message to the outbox (durably, before anything is sent); its id.
    pub fn enqueue(
        &self,
        transport: &str,
        chat: &str,
        body: &str,
        now_ms: i64,
    ) -> Result<i64, OutboxError> {
        // IMMEDIATE: the write lock is taken (waiting under busy_timeout) before the first read, so
        // another connection writing in between cannot fail the upgrade with SQLITE_BUSY.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(|e| self.sql(e))?;
        tx.execute(
            "INSERT INTO outbox (transport, chat, body, txn_id, next_at, created_at)
             VALUES (?1, ?2, ?3, '', ?4, ?4)",
            params![transport, chat, body, now_ms],
        )
        .map_err(|e| self.sql(e))?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "UPDATE outbox SET txn_id = ?1 WHERE id = ?2",
            params![format!("nucleic.{}.{id}", self.txn_prefix), id],
        )
        .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(id)
    }

    /// The messages of `transport` to send now: the oldest queued one of each chat (a chat's
    /// messages go out in order: a later one waits for the earlier), when it is due.
    pub fn due(&self, transport: &str, now_ms: i64) -> Result<Vec<Queued>, OutboxError> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, transport, chat, body, txn_id, attempts FROM outbox o
                 WHERE state = 'queued' AND transport = ?1 AND next_at <= ?2
                   AND id = (SELECT MIN(id) FROM outbox h
                             WHERE h.state = 'queued' AND h.transport = o.transport
                               AND h.chat = o.chat)
                 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map(params![transport, now_ms], |r| {
                Ok(Queued {
                    id: r.get(0)?,
                    transport: r.get(1)?,
                    chat: r.get(2)?,
                    body: r.get(3)?,
                    txn_id: r.get(4)?,
                    attempts: r.get(5)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// When the next message of `transport` is due (unix ms; a chat's oldest queued one), if any.
    pub fn next_due(&self, transport: &str) -> Result<Option<i64>, OutboxError> {
        self.conn
            .query_row(
                "SELECT MIN(next_at) FROM outbox o WHERE state = 'queued' AND transport = ?1
                   AND id = (SELECT MIN(id) FROM outbox h
                             WHERE h.state = 'queued' AND h.transport = o.transport
                               AND h.chat = o.chat)",
                [transport],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Records what an attempt at message `id` came to.
    pub fn record(&self, id: i64, attempt: &Attempt, now_ms: i64) -> Result<(), OutboxError> {
        let changed = match attempt {
            Attempt::Sent { remote_id } => self.conn.execute(
                "UPDATE outbox SET state = 'sent', attempts = attempts + 1, sent_at = ?2,
                     remote_id = ?3, error = NULL WHERE id = ?1 AND state = 'queued'",
                params![id, now_ms, remote_id],
            ),
            Attempt::Retry { retry_after, error } => {
                let attempts: u32 = self
                    .conn
                    .query_row("SELECT attempts FROM outbox WHERE id = ?1", [id], |r| r.get(0))
                    .optional()
                    .map_err(|e| self.sql(e))?
                    .unwrap_or(0);
                let wait = retry_delay(attempts + 1, *retry_after);
                let next_at =
                    now_ms.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
                self.conn.execute(
                    "UPDATE outbox SET attempts = attempts + 1, next_at = ?2, error = ?3
                     WHERE id = ?1 AND state = 'queued'",
                    params![id, next_at, error],
                )
            }
            Attempt::Failed { error } => self.conn.execute(
                "UPDATE outbox SET state = 'failed', attempts = attempts + 1, error = ?2
                 WHERE id = ?1 AND state = 'queued'",
                params![id, error],
            ),
        };
        changed.map(|_| ()).map_err(|e| self.sql(e))
    }

    /// Records an inbound update before it is acted on: `true` when it is new, `false` when it
    /// was seen before (a redelivery: do not act again).
    pub fn receive(
        &self,
        transport: &str,
        update_id: &str,
        now_ms: i64,
    ) -> Result<bool, OutboxError> {
        let inserted = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO inbound (transport, update_id, received_at) VALUES (?1, ?2, ?3)",
                params![transport, update_id, now_ms],
            )
            .map_err(|e| self.sql(e))?;
        Ok(inserted == 1)
    }

    /// Marks an inbound update handled.
    pub fn handled(
        &self,
        transport: &str,
        update_id: &str,
        now_ms: i64,
    ) -> Result<(), OutboxError> {
        self.conn
            .execute(
                "UPDATE inbound SET done_at = ?3 WHERE transport = ?1 AND update_id = ?2",
                params![transport, update_id, now_ms],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// The transport's sync cursor (Telegram's offset, Matrix's `since`).
    pub fn cursor(&self, transport: &str) -> Result<Option<String>, OutboxError> {
        self.conn
            .query_row("SELECT value FROM cursors WHERE transport = ?1", [transport], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    pub fn set_cursor(&self, transport: &str, value: &str) -> Result<(), OutboxError> {
        self.conn
            .execute(
                "INSERT INTO cursors (transport, value) VALUES (?1, ?2)
                 ON CONFLICT (transport) DO UPDATE SET value = excluded.value",
                params![transport, value],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// How many messages are queued, sent and failed.
    pub fn counts(&self) -> Result<OutboxCounts, OutboxError> {
        let mut counts = OutboxCounts::default();
        let mut statement = self
            .conn
            .prepare_cached("SELECT state, COUNT(*) FROM outbox GROUP BY state")
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| self.sql(e))?;
        for row in rows {
            let (state, n) = row.map_err(|e| self.sql(e))?;
            let n = u64::try_from(n).unwrap_or(0);
            match state.as_str() {
                "queued" => counts.queued = n,
                "sent" => counts.sent = n,
                _ => counts.failed = n,
            }
        }
        Ok(counts)
    }
}

/// How long to wait before attempt `attempt` (1 = the first retry): the service's
/// `retry_after` when it gave one (capped), else 1 s doubling up to [`MAX_BACKOFF`].
pub fn retry_delay(attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(asked) = retry_after {
        return asked.min(MAX_RETRY_AFTER);
    }
    let doublings = attempt.saturating_sub(1).min(16);
    FIRST_BACKOFF.saturating_mul(1 << doublings).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Outbox) {
        let dir = tempfile::tempdir().unwrap();
        let outbox = Outbox::open(&dir.path().join("chat").join("chat.db")).unwrap();
        (dir, outbox)
    }

    #[test]
    fn a_queued_message_survives_the_process_and_keeps_its_transaction_id() {
        let (dir, outbox) = store();
        let id = outbox.enqueue("matrix", "!room", "report 1", 1_000).unwrap();
        let before = outbox.due("matrix", 1_000).unwrap();
        drop(outbox); // the host killed: only what is on disk remains
        let outbox = Outbox::open(&dir.path().join("chat").join("chat.db")).unwrap();
        let after = outbox.due("matrix", 1_000).unwrap();
        assert_eq!(before, after);
        assert_eq!(after[0].id, id);
        assert!(after[0].txn_id.starts_with("nucleic."), "{}", after[0].txn_id);
        let mode = std::fs::metadata(dir.path().join("chat/chat.db")).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);
    }

    #[test]
    fn a_chats_messages_go_in_order_and_wait_for_their_retry() {
        let (_dir, outbox) = store();
        let a1 = outbox.enqueue("telegram", "a", "a1", 0).unwrap();
        let a2 = outbox.enqueue("telegram", "a", "a2", 0).unwrap();
        let b1 = outbox.enqueue("telegram", "b", "b1", 0).unwrap();
        outbox.enqueue("matrix", "a", "m1", 0).unwrap();
        let ids =
            |now| outbox.due("telegram", now).unwrap().iter().map(|q| q.id).collect::<Vec<_>>();
        assert_eq!(ids(0), vec![a1, b1], "one per chat, the oldest");
        let retry =
            Attempt::Retry { retry_after: Some(Duration::from_secs(7)), error: "429".into() };
        outbox.record(a1, &retry, 0).unwrap();
        assert_eq!(ids(0), vec![b1], "a2 waits behind a1's retry");
        assert_eq!(outbox.next_due("telegram").unwrap(), Some(0));
        outbox.record(b1, &Attempt::Sent { remote_id: Some("55".into()) }, 0).unwrap();
        assert_eq!(outbox.next_due("telegram").unwrap(), Some(7_000));
        assert_eq!(ids(7_000), vec![a1], "retry_after honoured");
        outbox.record(a1, &Attempt::Sent { remote_id: None }, 7_000).unwrap();
        assert_eq!(ids(7_000), vec![a2]);
        outbox.record(a2, &Attempt::Failed { error: "chat not found".into() }, 7_000).unwrap();
        assert_eq!(outbox.counts().unwrap(), OutboxCounts { queued: 1, sent: 2, failed: 1 });
        // Recording twice changes nothing (a sent message is not sent again).
        outbox.record(b1, &retry, 8_000).unwrap();
        assert!(ids(100_000).is_empty());
    }

    #[test]
    fn an_update_is_acted_on_once_and_cursors_persist() {
        let (_dir, outbox) = store();
        assert!(outbox.receive("telegram", "901", 0).unwrap());
        assert!(!outbox.receive("telegram", "901", 5).unwrap(), "a redelivery is not new");
        assert!(outbox.receive("matrix", "901", 5).unwrap(), "per transport");
        outbox.handled("telegram", "901", 6).unwrap();
        assert_eq!(outbox.cursor("telegram").unwrap(), None);
        outbox.set_cursor("telegram", "902").unwrap();
        outbox.set_cursor("telegram", "903").unwrap();
        assert_eq!(outbox.cursor("telegram").unwrap().as_deref(), Some("903"));
    }

    #[test]
    fn backoff_doubles_to_a_cap_and_retry_after_wins() {
        assert_eq!(retry_delay(1, None), Duration::from_secs(1));
        assert_eq!(retry_delay(4, None), Duration::from_secs(8));
        assert_eq!(retry_delay(40, None), MAX_BACKOFF);
        assert_eq!(retry_delay(3, Some(Duration::from_secs(30))), Duration::from_secs(30));
        assert_eq!(retry_delay(1, Some(Duration::from_secs(86_400))), MAX_RETRY_AFTER);
    }
}
