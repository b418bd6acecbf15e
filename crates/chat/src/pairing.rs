//! Who may command the host from a chat: `nucleic chat pair` issues an 8-character one-time
//! code (10 minutes); `/cc pair <code>` binds that chat user. 5 wrong codes lock a user out, and
//! at most 30 attempts an hour are heard from everyone together, so guessing is bounded. Anyone
//! not paired is ignored — in groups too — and counted.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use thiserror::Error;

/// How long a code is good for.
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Wrong codes after which a user is locked out.
pub const MAX_FAILURES: u32 = 5;
/// Attempts heard per hour from all users together.
pub const MAX_ATTEMPTS_PER_HOUR: u32 = 30;
const HOUR_MS: i64 = 3600 * 1000;
/// A pairing code's length, from an alphabet without look-alikes (31^8 ≈ 8.5·10^11 codes).
pub const CODE_LEN: usize = 8;
const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Why the pairing tables failed.
#[derive(Debug, Error)]
pub enum PairingError {
    #[error(transparent)]
    Store(#[from] crate::OutboxError),
    #[error("pairing store {}: {source}", path.display())]
    Sql { path: PathBuf, source: rusqlite::Error },
}

/// What a `/cc pair <code>` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairOutcome {
    Paired,
    AlreadyPaired,
    /// Not a valid code; this many tries are left before the user is locked out.
    Wrong {
        left: u32,
    },
    /// Too many wrong codes from this user.
    Locked,
    /// Too many attempts from everyone this hour.
    Limited,
}

/// A user allowed to command the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedUser {
    pub user: String,
    /// The chat they paired from.
    pub chat: String,
    pub paired_at_ms: i64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pair_codes (
    code TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, used_by INTEGER
);
CREATE TABLE IF NOT EXISTS pair_attempts (at INTEGER NOT NULL, user INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pair_failures (user TEXT PRIMARY KEY, failures INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS paired (
    user TEXT PRIMARY KEY, chat TEXT NOT NULL, paired_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS strangers (
    user TEXT PRIMARY KEY, messages INTEGER NOT NULL, last_at INTEGER NOT NULL
);
";

/// The tables keyed by user that were `INTEGER PRIMARY KEY` (Telegram ids only) before users
/// became text (`123`, `@alice:example.org`): copied into text-keyed ones once.
const USER_TABLES: [(&str, &str); 3] = [
    ("pair_failures", "user TEXT PRIMARY KEY, failures INTEGER NOT NULL"),
    ("paired", "user TEXT PRIMARY KEY, chat TEXT NOT NULL, paired_at INTEGER NOT NULL"),
    ("strangers", "user TEXT PRIMARY KEY, messages INTEGER NOT NULL, last_at INTEGER NOT NULL"),
];

/// Moves a store made before users were text onto text keys (idempotent).
fn migrate_user_keys(conn: &Connection) -> rusqlite::Result<()> {
    for (table, columns) in USER_TABLES {
        let kind: Option<String> = conn
            .query_row(
                &format!("SELECT type FROM pragma_table_info('{table}') WHERE name = 'user'"),
                [],
                |r| r.get(0),
            )
            .optional()?;
        if kind.as_deref() != Some("INTEGER") {
            continue;
        }
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             ALTER TABLE {table} RENAME TO {table}_integer_users;
             CREATE TABLE {table} ({columns});
             INSERT INTO {table} SELECT * FROM {table}_integer_users;
             DROP TABLE {table}_integer_users;
             COMMIT;"
        ))?;
    }
    Ok(())
}

/// The pairing tables of `chat.db`.
#[derive(Debug)]
pub struct Pairing {
    path: PathBuf,
    conn: Connection,
}

impl Pairing {
    /// Opens the tables in the store at `path` (made by [`crate::Outbox::open`] or here).
    pub fn open(path: &Path) -> Result<Pairing, PairingError> {
        let sql = |source| PairingError::Sql { path: path.to_path_buf(), source };
        // The outbox makes the file 0600 in a 0700 directory; open it first when it is new.
        crate::Outbox::open(path)?;
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "busy_timeout", 5000).map_err(sql)?;
        migrate_user_keys(&conn).map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        Ok(Pairing { path: path.to_path_buf(), conn })
    }

    fn sql(&self, source: rusqlite::Error) -> PairingError {
        PairingError::Sql { path: self.path.clone(), source }
    }

    /// A fresh one-time code, good for [`CODE_TTL_MS`].
    pub fn issue(&self, now_ms: i64) -> Result<String, PairingError> {
        let code = random_code();
        self.conn
            .execute(
                "INSERT INTO pair_codes (code, expires_at) VALUES (?1, ?2)",
                params![code, now_ms + CODE_TTL_MS],
            )
            .map_err(|e| self.sql(e))?;
        Ok(code)
    }

    /// Whether a code issued and not yet used or expired is open at `now_ms` (a Matrix bridge
    /// joins a stranger's invite only then, so the stranger can send `/cc pair <code>`).
    pub fn code_open(&self, now_ms: i64) -> Result<bool, PairingError> {
        self.conn
            .query_row(
                "SELECT 1 FROM pair_codes WHERE used_by IS NULL AND expires_at > ?1 LIMIT 1",
                [now_ms],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.sql(e))
    }

    /// `user` in `chat` offers `code`.
    pub fn attempt(
        &self,
        user: &str,
        chat: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<PairOutcome, PairingError> {
        if self.is_paired(user)? {
            return Ok(PairOutcome::AlreadyPaired);
        }
        let failures = self.failures(user)?;
        if failures >= MAX_FAILURES {
            return Ok(PairOutcome::Locked);
        }
        let recent: u32 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM pair_attempts WHERE at > ?1",
                [now_ms - HOUR_MS],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        if recent >= MAX_ATTEMPTS_PER_HOUR {
            return Ok(PairOutcome::Limited);
        }
        // IMMEDIATE: the write lock is taken (waiting under busy_timeout) before the first read, so
        // another connection writing in between cannot fail the upgrade with SQLITE_BUSY.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(|e| self.sql(e))?;
        tx.execute("DELETE FROM pair_attempts WHERE at <= ?1", [now_ms - HOUR_MS])
            .map_err(|e| self.sql(e))?;
        tx.execute("INSERT INTO pair_attempts (at, user) VALUES (?1, ?2)", params![now_ms, user])
            .map_err(|e| self.sql(e))?;
        let taken = tx
            .execute(
                "UPDATE pair_codes SET used_by = ?1
                 WHERE code = ?2 AND used_by IS NULL AND expires_at > ?3",
                params![user, code.trim().to_ascii_uppercase(), now_ms],
            )
            .map_err(|e| self.sql(e))?;
        let outcome = if taken == 1 {
            tx.execute(
                "INSERT OR REPLACE INTO paired (user, chat, paired_at) VALUES (?1, ?2, ?3)",
                params![user, chat, now_ms],
            )
            .map_err(|e| self.sql(e))?;
            tx.execute("DELETE FROM pair_failures WHERE user = ?1", [user])
                .map_err(|e| self.sql(e))?;
            PairOutcome::Paired
        } else {
            tx.execute(
                "INSERT INTO pair_failures (user, failures) VALUES (?1, 1)
                 ON CONFLICT (user) DO UPDATE SET failures = failures + 1",
                [user],
            )
            .map_err(|e| self.sql(e))?;
            match MAX_FAILURES.saturating_sub(failures + 1) {
                0 => PairOutcome::Locked,
                left => PairOutcome::Wrong { left },
            }
        };
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(outcome)
    }

    fn failures(&self, user: &str) -> Result<u32, PairingError> {
        self.conn
            .query_row("SELECT failures FROM pair_failures WHERE user = ?1", [user], |r| r.get(0))
            .optional()
            .map(Option::unwrap_or_default)
            .map_err(|e| self.sql(e))
    }

    pub fn is_paired(&self, user: &str) -> Result<bool, PairingError> {
        self.conn
            .query_row("SELECT 1 FROM paired WHERE user = ?1", [user], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.sql(e))
    }

    pub fn list(&self) -> Result<Vec<PairedUser>, PairingError> {
        let mut statement = self
            .conn
            .prepare("SELECT CAST(user AS TEXT), chat, paired_at FROM paired ORDER BY paired_at")
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([], |r| {
                Ok(PairedUser { user: r.get(0)?, chat: r.get(1)?, paired_at_ms: r.get(2)? })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Forgets `user` (and their failures, so they may pair again); whether they were paired.
    pub fn unpair(&self, user: &str) -> Result<bool, PairingError> {
        let n = self
            .conn
            .execute("DELETE FROM paired WHERE user = ?1", [user])
            .map_err(|e| self.sql(e))?;
        self.conn
            .execute("DELETE FROM pair_failures WHERE user = ?1", [user])
            .map_err(|e| self.sql(e))?;
        Ok(n > 0)
    }

    /// Counts `messages` ignored from the stranger `user`.
    pub fn count_stranger(
        &self,
        user: &str,
        messages: u64,
        now_ms: i64,
    ) -> Result<(), PairingError> {
        let messages = i64::try_from(messages).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "INSERT INTO strangers (user, messages, last_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (user) DO UPDATE SET messages = messages + excluded.messages,
                     last_at = excluded.last_at",
                params![user, messages, now_ms],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Strangers heard from, and their messages ignored, in all.
    pub fn strangers(&self) -> Result<(u64, u64), PairingError> {
        self.conn
            .query_row("SELECT COUNT(*), COALESCE(SUM(messages), 0) FROM strangers", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .map(|(u, m)| (u64::try_from(u).unwrap_or(0), u64::try_from(m).unwrap_or(0)))
            .map_err(|e| self.sql(e))
    }
}

/// 8 characters of [`ALPHABET`] from a v4 UUID's random bits (122 of them; 40 used).
fn random_code() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut x = u128::from_le_bytes(bytes);
    let mut out = String::with_capacity(CODE_LEN);
    for _ in 0..CODE_LEN {
        out.push(char::from(ALPHABET[(x % ALPHABET.len() as u128) as usize]));
        x /= ALPHABET.len() as u128;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Pairing) {
        let dir = tempfile::tempdir().unwrap();
        let pairing = Pairing::open(&dir.path().join("chat.db")).unwrap();
        (dir, pairing)
    }

    #[test]
    fn a_code_pairs_once_within_ten_minutes() {
        let (_dir, p) = store();
        let code = p.issue(0).unwrap();
        assert_eq!(code.len(), CODE_LEN);
        assert!(code.bytes().all(|b| ALPHABET.contains(&b)));
        assert!(!p.is_paired("7").unwrap());
        assert_eq!(
            p.attempt("7", "7", &code.to_ascii_lowercase(), 1).unwrap(),
            PairOutcome::Paired
        );
        assert!(p.is_paired("7").unwrap());
        assert_eq!(p.attempt("7", "7", &code, 2).unwrap(), PairOutcome::AlreadyPaired);
        assert_eq!(p.attempt("8", "8", &code, 2).unwrap(), PairOutcome::Wrong { left: 4 }, "used");
        let late = p.issue(0).unwrap();
        assert_eq!(
            p.attempt("9", "9", &late, CODE_TTL_MS).unwrap(),
            PairOutcome::Wrong { left: 4 }
        );
        assert_eq!(p.list().unwrap().len(), 1);
        assert!(p.unpair("7").unwrap());
        assert!(!p.is_paired("7").unwrap());
    }

    #[test]
    fn a_store_with_integer_user_keys_is_moved_to_text_keys_and_matrix_users_pair() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        crate::Outbox::open(&path).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE paired (user INTEGER PRIMARY KEY, chat TEXT NOT NULL, paired_at INTEGER NOT NULL);
             INSERT INTO paired VALUES (42, '42', 7);",
        )
        .unwrap();
        drop(old);
        let p = Pairing::open(&path).unwrap();
        assert!(p.is_paired("42").unwrap(), "the Telegram user stays paired");
        assert_eq!(p.list().unwrap()[0].user, "42");
        let code = p.issue(0).unwrap();
        assert!(p.code_open(1).unwrap());
        let alice = "@alice:example.org";
        assert_eq!(p.attempt(alice, "!room:example.org", &code, 1).unwrap(), PairOutcome::Paired);
        assert!(!p.code_open(2).unwrap(), "a used code is not open");
        p.count_stranger("@eve:example.org", 2, 3).unwrap();
        assert_eq!(p.strangers().unwrap(), (1, 2));
        drop(p);
        assert!(Pairing::open(&path).unwrap().is_paired(alice).unwrap(), "opened again");
    }

    #[test]
    fn guessing_is_bounded_per_user_and_for_everyone() {
        let (_dir, p) = store();
        let code = p.issue(0).unwrap();
        for left in (1..MAX_FAILURES).rev() {
            assert_eq!(p.attempt("1", "1", "AAAAAAAA", 0).unwrap(), PairOutcome::Wrong { left });
        }
        assert_eq!(p.attempt("1", "1", "AAAAAAAA", 0).unwrap(), PairOutcome::Locked);
        assert_eq!(
            p.attempt("1", "1", &code, 0).unwrap(),
            PairOutcome::Locked,
            "even the right one"
        );
        // Many users: 30 attempts an hour in all, then nobody is heard, the right code included.
        for user in 100..125 {
            p.attempt(&user.to_string(), "g", "BBBBBBBB", 10).unwrap();
        }
        assert_eq!(p.attempt("200", "g", &code, 11).unwrap(), PairOutcome::Limited);
        assert!(!p.is_paired("200").unwrap());
        let fresh = p.issue(HOUR_MS).unwrap();
        assert_eq!(p.attempt("200", "g", &fresh, HOUR_MS + 11).unwrap(), PairOutcome::Paired);
    }
}
