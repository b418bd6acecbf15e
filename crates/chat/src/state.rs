//! The bridge's own state in `chat.db`: per chat its project, current session and last
//! `/cc sessions` list; what waits on a person (approvals, plans, questions) under short codes
//! that are never given out twice, so an old code is answered "already resolved"; the sessions
//! the bridge follows and the next `seq` of each.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StateError {
    #[error(transparent)]
    Store(#[from] crate::OutboxError),
    #[error("chat state {}: {source}", path.display())]
    Sql { path: PathBuf, source: rusqlite::Error },
}

/// What a code stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingKind {
    Approval,
    Plan,
    Question,
}

impl PendingKind {
    fn as_str(self) -> &'static str {
        match self {
            PendingKind::Approval => "approval",
            PendingKind::Plan => "plan",
            PendingKind::Question => "question",
        }
    }

    fn parse(text: &str) -> PendingKind {
        match text {
            "plan" => PendingKind::Plan,
            "question" => PendingKind::Question,
            _ => PendingKind::Approval,
        }
    }
}

/// Something that waits (or waited) on a person, by its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub code: String,
    pub chat: String,
    pub session: String,
    pub request: String,
    pub kind: PendingKind,
    /// `low`, `medium`, `high`, `critical`, when the host classified it.
    pub risk: Option<String>,
    /// `None` while it waits; who answered once it was resolved.
    pub resolved_by: Option<String>,
    /// A critical approval's first "approve", waiting for the second (unix ms).
    pub confirm_armed_at: Option<i64>,
}

impl Pending {
    pub fn is_critical(&self) -> bool {
        self.risk.as_deref() == Some("critical")
    }
}

/// A chat's selections.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatState {
    pub project: Option<String>,
    pub session: Option<String>,
    /// Whether tasks go to `session` (picked with `/cc resume`) instead of starting new ones.
    pub selected: bool,
    /// The session ids of the last `/cc sessions`, in the order shown.
    pub listing: Vec<String>,
    /// A title `/cc new-session` gave for the next task's session.
    pub next_title: Option<String>,
    /// When `/cc rollback` was asked once (unix ms): a second one within the window does it.
    pub rollback_armed_at: Option<i64>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chat_settings (
    chat TEXT PRIMARY KEY, needs_you_only INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chat_threads (chat TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS attachment_notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chat TEXT NOT NULL, note TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chats (
    chat TEXT PRIMARY KEY, project TEXT, session TEXT, listing TEXT NOT NULL DEFAULT '',
    next_title TEXT, rollback_at INTEGER, selected INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS pending (
    code TEXT PRIMARY KEY, chat TEXT NOT NULL, session TEXT NOT NULL, request TEXT NOT NULL,
    kind TEXT NOT NULL, risk TEXT, resolved_by TEXT, confirm_at INTEGER, input TEXT,
    UNIQUE (session, request)
);
CREATE TABLE IF NOT EXISTS followed (
    session TEXT PRIMARY KEY, chat TEXT NOT NULL, next_seq INTEGER NOT NULL
);
";

/// The bridge's state tables.
#[derive(Debug)]
pub struct State {
    path: PathBuf,
    conn: Connection,
}

const PENDING_COLUMNS: &str = "code, chat, session, request, kind, risk, resolved_by, confirm_at";

fn pending_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Pending> {
    Ok(Pending {
        code: r.get(0)?,
        chat: r.get(1)?,
        session: r.get(2)?,
        request: r.get(3)?,
        kind: PendingKind::parse(&r.get::<_, String>(4)?),
        risk: r.get(5)?,
        resolved_by: r.get(6)?,
        confirm_armed_at: r.get(7)?,
    })
}

impl State {
    pub fn open(path: &Path) -> Result<State, StateError> {
        crate::Outbox::open(path)?;
        let sql = |source| StateError::Sql { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "busy_timeout", 5000).map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        Ok(State { path: path.to_path_buf(), conn })
    }

    fn sql(&self, source: rusqlite::Error) -> StateError {
        StateError::Sql { path: self.path.clone(), source }
    }

    /// Whether `chat` gets only "needs you" notices, without content.
    pub fn needs_you_only(&self, chat: &str) -> Result<bool, StateError> {
        let on: Option<i64> = self
            .conn
            .query_row("SELECT needs_you_only FROM chat_settings WHERE chat = ?1", [chat], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(on.unwrap_or(0) != 0)
    }

    /// Sets whether `chat` gets only "needs you" notices.
    pub fn set_needs_you_only(&self, chat: &str, on: bool) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO chat_settings (chat, needs_you_only) VALUES (?1, ?2)
                 ON CONFLICT (chat) DO UPDATE SET needs_you_only = excluded.needs_you_only",
                params![chat, i64::from(on)],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Whether new sessions of `chat` report in a thread of their own (`/cc threads on`).
    pub fn threads(&self, chat: &str) -> Result<bool, StateError> {
        let on = self
            .conn
            .query_row("SELECT 1 FROM chat_threads WHERE chat = ?1", [chat], |_| Ok(()))
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(on.is_some())
    }

    /// Sets whether new sessions of `chat` report in a thread of their own.
    pub fn set_threads(&self, chat: &str, on: bool) -> Result<(), StateError> {
        let sql = match on {
            true => "INSERT OR IGNORE INTO chat_threads (chat) VALUES (?1)",
            false => "DELETE FROM chat_threads WHERE chat = ?1",
        };
        self.conn.execute(sql, [chat]).map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Keeps the note of a file attached in `chat` until a message to its agent carries it.
    pub fn add_attachment_note(&self, chat: &str, note: &str) -> Result<(), StateError> {
        self.conn
            .execute("INSERT INTO attachment_notes (chat, note) VALUES (?1, ?2)", [chat, note])
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The notes of files attached in `chat` not yet told to its agent, oldest first, and the
    /// last one's id (0 when there are none), for [`State::attachment_notes_delivered`].
    pub fn attachment_notes(&self, chat: &str) -> Result<(Vec<String>, i64), StateError> {
        let mut statement = self
            .conn
            .prepare("SELECT id, note FROM attachment_notes WHERE chat = ?1 ORDER BY id")
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([chat], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.sql(e))?;
        let mut notes = Vec::new();
        let mut last = 0;
        for row in rows {
            let (id, note) = row.map_err(|e| self.sql(e))?;
            last = id;
            notes.push(note);
        }
        Ok((notes, last))
    }

    /// Forgets `chat`'s notes up to id `last`: a message carrying them reached the host.
    pub fn attachment_notes_delivered(&self, chat: &str, last: i64) -> Result<(), StateError> {
        self.conn
            .execute(
                "DELETE FROM attachment_notes WHERE chat = ?1 AND id <= ?2",
                params![chat, last],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The code of `request` of `session` (the one it has, or a new one never used before).
    pub fn add_pending(
        &self,
        chat: &str,
        session: &str,
        request: &str,
        kind: PendingKind,
        risk: Option<&str>,
        input: Option<&str>,
    ) -> Result<String, StateError> {
        if let Some(code) = self
            .conn
            .query_row(
                "SELECT code FROM pending WHERE session = ?1 AND request = ?2",
                [session, request],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?
        {
            return Ok(code);
        }
        // IMMEDIATE: the write lock is taken (waiting under busy_timeout) before the first read, so
        // another connection writing in between cannot fail the upgrade with SQLITE_BUSY.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(|e| self.sql(e))?;
        let mut next: i64 = tx
            .query_row("SELECT value FROM state_meta WHERE key = 'next_code'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            // A store's first code starts somewhere random, so codes do not read as a count.
            .unwrap_or_else(|| i64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 997 + 1);
        let code = loop {
            let code = crate::codes::nth(u64::try_from(next).unwrap_or(0));
            next += 1;
            let used = tx
                .query_row("SELECT 1 FROM pending WHERE code = ?1", [&code], |_| Ok(()))
                .optional()
                .map_err(|e| self.sql(e))?;
            if used.is_none() {
                break code;
            }
        };
        tx.execute(
            "INSERT INTO state_meta (key, value) VALUES ('next_code', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [next],
        )
        .map_err(|e| self.sql(e))?;
        tx.execute(
            "INSERT INTO pending (code, chat, session, request, kind, risk, input)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![code, chat, session, request, kind.as_str(), risk, input],
        )
        .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(code)
    }

    /// What `code` names in `chat`, waiting or resolved.
    pub fn pending_by_code(&self, chat: &str, code: &str) -> Result<Option<Pending>, StateError> {
        self.conn
            .query_row(
                &format!("SELECT {PENDING_COLUMNS} FROM pending WHERE code = ?1 AND chat = ?2"),
                [code.to_ascii_uppercase(), chat.to_owned()],
                pending_row,
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// The request's input as it was kept (questions keep theirs, for their choices).
    pub fn pending_input(&self, code: &str) -> Result<Option<String>, StateError> {
        self.conn
            .query_row("SELECT input FROM pending WHERE code = ?1", [code], |r| r.get(0))
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.sql(e))
    }

    /// What still waits in `chat`, oldest first.
    pub fn open_pending(&self, chat: &str) -> Result<Vec<Pending>, StateError> {
        let mut statement = self
            .conn
            .prepare(&format!(
                "SELECT {PENDING_COLUMNS} FROM pending WHERE chat = ?1 AND resolved_by IS NULL ORDER BY rowid"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = statement.query_map([chat], pending_row).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// `request` of `session` was answered by `by`; its code, if it had one.
    pub fn resolve(
        &self,
        session: &str,
        request: &str,
        by: &str,
    ) -> Result<Option<String>, StateError> {
        let code = self
            .conn
            .query_row(
                "SELECT code FROM pending WHERE session = ?1 AND request = ?2",
                [session, request],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        self.conn
            .execute(
                "UPDATE pending SET resolved_by = ?3 WHERE session = ?1 AND request = ?2 AND resolved_by IS NULL",
                params![session, request, by],
            )
            .map_err(|e| self.sql(e))?;
        Ok(code)
    }

    /// Arms (or disarms, `None`) a critical approval's second confirmation.
    pub fn arm_confirm(&self, code: &str, at: Option<i64>) -> Result<(), StateError> {
        self.conn
            .execute("UPDATE pending SET confirm_at = ?2 WHERE code = ?1", params![code, at])
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    pub fn chat(&self, chat: &str) -> Result<ChatState, StateError> {
        let row = self
            .conn
            .query_row(
                "SELECT project, session, listing, next_title, rollback_at, selected
                 FROM chats WHERE chat = ?1",
                [chat],
                |r| {
                    let listing: String = r.get(2)?;
                    Ok(ChatState {
                        project: r.get(0)?,
                        session: r.get(1)?,
                        listing: listing
                            .split(' ')
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned)
                            .collect(),
                        next_title: r.get(3)?,
                        rollback_armed_at: r.get(4)?,
                        selected: r.get::<_, i64>(5)? != 0,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(row.unwrap_or_default())
    }

    pub fn set_chat(&self, chat: &str, state: &ChatState) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO chats (chat, project, session, listing, next_title, rollback_at, selected)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (chat) DO UPDATE SET project = excluded.project,
                    session = excluded.session, listing = excluded.listing,
                    next_title = excluded.next_title, rollback_at = excluded.rollback_at,
                    selected = excluded.selected",
                params![
                    chat,
                    state.project,
                    state.session,
                    state.listing.join(" "),
                    state.next_title,
                    state.rollback_armed_at,
                    i64::from(state.selected)
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Follows `session` for `chat` from `from_seq` (kept when already followed further).
    pub fn follow(&self, session: &str, chat: &str, from_seq: u64) -> Result<u64, StateError> {
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "INSERT INTO followed (session, chat, next_seq) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session) DO UPDATE SET chat = excluded.chat",
                params![session, chat, from],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.followed_from(session)?.unwrap_or(from_seq))
    }

    fn followed_from(&self, session: &str) -> Result<Option<u64>, StateError> {
        self.conn
            .query_row("SELECT next_seq FROM followed WHERE session = ?1", [session], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map(|v| v.map(|n| u64::try_from(n).unwrap_or(1)))
            .map_err(|e| self.sql(e))
    }

    /// Every followed session: (session, chat, next seq).
    pub fn followed(&self) -> Result<Vec<(String, String, u64)>, StateError> {
        let mut statement = self
            .conn
            .prepare("SELECT session, chat, next_seq FROM followed")
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, u64::try_from(r.get::<_, i64>(2)?).unwrap_or(1)))
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The chat following `session`.
    pub fn chat_of(&self, session: &str) -> Result<Option<String>, StateError> {
        self.conn
            .query_row("SELECT chat FROM followed WHERE session = ?1", [session], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Events of `session` below `next_seq` were reported.
    pub fn advance(&self, session: &str, next_seq: u64) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE followed SET next_seq = MAX(next_seq, ?2) WHERE session = ?1",
                params![session, i64::try_from(next_seq).unwrap_or(i64::MAX)],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod attachment_note_tests {
    use super::*;

    #[test]
    fn attachment_notes_outlive_a_reopen_until_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        let state = State::open(&path).unwrap();
        state.add_attachment_note("c1", "[Attached file: a]").unwrap();
        state.add_attachment_note("c2", "[Attached file: other chat]").unwrap();
        drop(state);
        let state = State::open(&path).unwrap();
        let (notes, last) = state.attachment_notes("c1").unwrap();
        assert_eq!(notes, ["[Attached file: a]"]);
        // One attached while the message was on its way stays for the next message.
        state.add_attachment_note("c1", "[Attached file: b]").unwrap();
        state.attachment_notes_delivered("c1", last).unwrap();
        assert_eq!(state.attachment_notes("c1").unwrap().0, ["[Attached file: b]"]);
        assert_eq!(state.attachment_notes("c2").unwrap().0, ["[Attached file: other chat]"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_never_given_out_twice_and_resolved_ones_are_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        let state = State::open(&path).unwrap();
        let a = state
            .add_pending("1", "s1", "r1", PendingKind::Approval, Some("critical"), None)
            .unwrap();
        assert_eq!(
            state.add_pending("1", "s1", "r1", PendingKind::Approval, None, None).unwrap(),
            a
        );
        state.resolve("s1", "r1", "telegram:1").unwrap();
        drop(state);
        let state = State::open(&path).unwrap();
        let b = state.add_pending("1", "s1", "r2", PendingKind::Plan, None, None).unwrap();
        assert_ne!(a, b, "a new code after a restart");
        let old = state.pending_by_code("1", &a.to_ascii_lowercase()).unwrap().unwrap();
        assert_eq!(old.resolved_by.as_deref(), Some("telegram:1"));
        assert!(old.is_critical());
        assert!(state.pending_by_code("2", &b).unwrap().is_none(), "another chat's code");
        assert_eq!(state.open_pending("1").unwrap().len(), 1);
        assert_eq!(state.follow("s1", "1", 1).unwrap(), 1);
        state.advance("s1", 9).unwrap();
        assert_eq!(state.follow("s1", "1", 1).unwrap(), 9, "a followed session keeps its place");
        let chat = ChatState { listing: vec!["s1".into(), "s2".into()], ..ChatState::default() };
        state.set_chat("1", &chat).unwrap();
        assert_eq!(state.chat("1").unwrap(), chat);
    }
}
