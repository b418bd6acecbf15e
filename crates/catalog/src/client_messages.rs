//! Remembered responses to client message ids, so a retried message is answered, not re-run.
//! Bounded: replies older than a day are forgotten, and the oldest go first when the table holds
//! more than [`ReplyCacheLimits::max_replies`] replies or [`ReplyCacheLimits::max_bytes`] bytes.

use rusqlite::{OptionalExtension, params};

use crate::Catalog;
use crate::error::{Result, SqlContext};
use crate::wire::now_millis;

/// How much the reply cache may hold (all clients together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyCacheLimits {
    /// Replies older than this (milliseconds) are forgotten.
    pub max_age_ms: i64,
    /// At most this many replies are kept; the oldest go first.
    pub max_replies: u64,
    /// At most this many bytes of reply text are kept; the oldest go first (a reply larger
    /// than this on its own is not kept at all).
    pub max_bytes: u64,
}

impl ReplyCacheLimits {
    /// What the host uses: one day, 10,000 replies, 8 MiB.
    pub const DEFAULT: ReplyCacheLimits =
        ReplyCacheLimits { max_age_ms: 24 * 3600 * 1000, max_replies: 10_000, max_bytes: 8 << 20 };
}

impl Default for ReplyCacheLimits {
    fn default() -> Self {
        ReplyCacheLimits::DEFAULT
    }
}

impl Catalog {
    /// Remembers the response (JSON text) to `message_id` from `client_id`, stamped now, within
    /// [`ReplyCacheLimits::DEFAULT`]. The first response recorded for an id wins; later ones
    /// are ignored.
    pub fn remember_response(
        &self,
        client_id: &str,
        message_id: &str,
        response_json: &str,
    ) -> Result<()> {
        self.remember_response_within(
            client_id,
            message_id,
            response_json,
            ReplyCacheLimits::DEFAULT,
        )
    }

    /// [`Catalog::remember_response`] with explicit limits: after storing, forgets replies past
    /// their age, then the oldest until the count and byte limits hold.
    pub fn remember_response_within(
        &self,
        client_id: &str,
        message_id: &str,
        response_json: &str,
        limits: ReplyCacheLimits,
    ) -> Result<()> {
        let now = now_millis();
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO client_messages (client_id, message_id, response, at) \
             VALUES (?, ?, ?, ?) ON CONFLICT(client_id, message_id) DO NOTHING",
        )
        .and_then(|mut stmt| stmt.execute(params![client_id, message_id, response_json, now]))
        .ctx("remember client response")?;
        conn.prepare_cached("DELETE FROM client_messages WHERE at < ?")
            .and_then(|mut stmt| stmt.execute([now.saturating_sub(limits.max_age_ms)]))
            .ctx("forget old client responses")?;
        // Newest first: keep rows while both the running count and the running size fit.
        conn.prepare_cached(
            "DELETE FROM client_messages WHERE rowid IN (SELECT rowid FROM (SELECT rowid, \
             ROW_NUMBER() OVER newest AS n, SUM(LENGTH(CAST(response AS BLOB))) OVER newest AS size \
             FROM client_messages WINDOW newest AS (ORDER BY at DESC, rowid DESC)) \
             WHERE n > ?1 OR size > ?2)",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                i64::try_from(limits.max_replies).unwrap_or(i64::MAX),
                i64::try_from(limits.max_bytes).unwrap_or(i64::MAX)
            ])
        })
        .ctx("bound client responses")?;
        Ok(())
    }

    /// The response remembered for `message_id` from `client_id`, if any (and not older than
    /// [`ReplyCacheLimits::DEFAULT`]'s age).
    pub fn recall_response(&self, client_id: &str, message_id: &str) -> Result<Option<String>> {
        let oldest = now_millis().saturating_sub(ReplyCacheLimits::DEFAULT.max_age_ms);
        let conn = self.conn();
        conn.prepare_cached(
            "SELECT response FROM client_messages WHERE client_id = ? AND message_id = ? \
             AND at >= ?",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![client_id, message_id, oldest], |row| row.get(0)).optional()
        })
        .ctx("recall client response")
    }

    /// How many replies are remembered and their total size in bytes.
    pub fn remembered_responses(&self) -> Result<(u64, u64)> {
        let conn = self.conn();
        conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(response AS BLOB))), 0) FROM client_messages",
            [],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
        )
        .map(|(n, size)| (u64::try_from(n).unwrap_or(0), u64::try_from(size).unwrap_or(0)))
        .ctx("count client responses")
    }

    /// Forgets responses remembered before `at` (unix millis); returns how many.
    pub fn forget_responses_before(&self, at: i64) -> Result<usize> {
        self.conn()
            .execute("DELETE FROM client_messages WHERE at < ?", [at])
            .ctx("forget client responses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(&dir.path().join("c.db")).unwrap();
        (dir, cat)
    }

    #[test]
    fn the_oldest_replies_go_when_the_count_limit_is_reached() {
        let (_dir, cat) = catalog();
        let limits = ReplyCacheLimits { max_replies: 3, ..ReplyCacheLimits::DEFAULT };
        for i in 0..10 {
            cat.remember_response_within("c", &format!("m{i}"), "{}", limits).unwrap();
        }
        assert_eq!(cat.remembered_responses().unwrap().0, 3);
        assert_eq!(cat.recall_response("c", "m6").unwrap(), None);
        for kept in ["m7", "m8", "m9"] {
            assert!(cat.recall_response("c", kept).unwrap().is_some(), "{kept}");
        }
    }

    #[test]
    fn the_oldest_replies_go_when_the_byte_limit_is_reached() {
        let (_dir, cat) = catalog();
        let limits = ReplyCacheLimits { max_bytes: 10_000, ..ReplyCacheLimits::DEFAULT };
        let reply = format!("\"{}\"", "é".repeat(1000)); // 2002 bytes, 1002 characters
        for i in 0..20 {
            cat.remember_response_within("c", &format!("m{i}"), &reply, limits).unwrap();
        }
        let (count, bytes) = cat.remembered_responses().unwrap();
        assert_eq!((count, bytes), (4, 4 * 2002));
        assert!(cat.recall_response("c", "m19").unwrap().is_some());
        // A reply larger than the whole budget is not kept.
        cat.remember_response_within("c", "huge", &"x".repeat(20_000), limits).unwrap();
        assert_eq!(cat.recall_response("c", "huge").unwrap(), None);
    }

    #[test]
    fn replies_past_their_age_are_forgotten() {
        let (_dir, cat) = catalog();
        cat.remember_response("c", "old", "{}").unwrap();
        let day_ago = now_millis() - ReplyCacheLimits::DEFAULT.max_age_ms - 1;
        cat.conn().execute("UPDATE client_messages SET at = ?", [day_ago]).unwrap();
        assert_eq!(cat.recall_response("c", "old").unwrap(), None, "too old to be recalled");
        cat.remember_response("c", "new", "{}").unwrap();
        assert_eq!(cat.remembered_responses().unwrap().0, 1, "purged by the next insert");
    }
}
