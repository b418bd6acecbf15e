//! Remembered responses to client message ids, so a retried message is answered, not re-run.

use rusqlite::{OptionalExtension, params};

use crate::Catalog;
use crate::error::{Result, SqlContext};
use crate::wire::now_millis;

impl Catalog {
    /// Remembers the response (JSON text) to `message_id` from `client_id`, stamped now. The
    /// first response recorded for an id wins; later ones are ignored.
    pub fn remember_response(
        &self,
        client_id: &str,
        message_id: &str,
        response_json: &str,
    ) -> Result<()> {
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO client_messages (client_id, message_id, response, at) \
             VALUES (?, ?, ?, ?) ON CONFLICT(client_id, message_id) DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![client_id, message_id, response_json, now_millis()])
        })
        .ctx("remember client response")?;
        Ok(())
    }

    /// The response remembered for `message_id` from `client_id`, if any.
    pub fn recall_response(&self, client_id: &str, message_id: &str) -> Result<Option<String>> {
        let conn = self.conn();
        conn.prepare_cached(
            "SELECT response FROM client_messages WHERE client_id = ? AND message_id = ?",
        )
        .and_then(|mut stmt| stmt.query_row([client_id, message_id], |row| row.get(0)).optional())
        .ctx("recall client response")
    }

    /// Forgets responses remembered before `at` (unix millis); returns how many.
    pub fn forget_responses_before(&self, at: i64) -> Result<usize> {
        self.conn()
            .execute("DELETE FROM client_messages WHERE at < ?", [at])
            .ctx("forget client responses")
    }
}
