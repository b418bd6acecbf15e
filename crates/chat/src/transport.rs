//! The one trait every chat service sits behind (Telegram, Matrix; a long-polling WeChat iLink
//! could follow): receive updates from a persisted cursor, send a queued message, answer a
//! choice, join a chat it was invited to, and the service-neutral shapes they exchange.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Value, json};

use crate::outbox::{Attempt, Queued};

/// A boxed future the trait returns (the trait is used as `dyn Transport`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A choice offered with a message (an inline button on Telegram, a code in the text on
/// Matrix): its label and the data a pick sends back (`a:K7` approves K7, see `exec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub data: String,
}

/// What arrived, service-neutral. `id` is the update's own id on the service (Telegram's
/// `update_id`, Matrix's `event_id`): the bridge records it before acting on it, so a
/// redelivery is never acted on twice. `chat` is the outbox's key of the chat; `user` the
/// service's id of the sender (`123`, `@alice:example.org`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A message (its text or caption, when it has some, and the file it carries).
    Message { id: String, chat: String, user: String, text: Option<String>, file: Option<InFile> },
    /// A pick of one of the bot's choices (`answer` is what [`Transport::answer_choice`] takes).
    Choice { id: String, answer: String, user: String, chat: Option<String>, data: String },
    /// The bot was invited to `chat` by `user` (Matrix): joined only for paired users, or while
    /// a pairing code is open.
    Invite { id: String, chat: String, user: String },
    /// An update the service sent that the bridge cannot read (kept, said, never acted on).
    Malformed { id: String, why: String },
    /// Anything else (an edit, a member change): only its id counts.
    Other { id: String },
}

impl Inbound {
    pub fn id(&self) -> &str {
        match self {
            Inbound::Message { id, .. }
            | Inbound::Choice { id, .. }
            | Inbound::Invite { id, .. }
            | Inbound::Malformed { id, .. }
            | Inbound::Other { id } => id,
        }
    }
}

/// One long poll's result: the updates, and the cursor to persist once they are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Polled {
    pub updates: Vec<Inbound>,
    pub next: Option<String>,
}

/// Why a poll failed, by what the poller should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollFailure {
    /// Try again (after the service's delay, or after backoff).
    Transient { retry_after: Option<Duration>, error: String },
    /// Another process polls this account: stop (a whole sentence, naming the service).
    Conflict(String),
    /// The credentials were refused: stop until a person fixes them (a whole sentence, saying
    /// what to do).
    Unauthorized(String),
}

/// A chat service. Implementations are cheap to share (`Arc<dyn Transport>`); every call has
/// its own deadline.
pub trait Transport: Debug + Send + Sync {
    /// The transport's name in the outbox (`telegram`, `matrix`).
    fn name(&self) -> &'static str;
    /// The account's key for its cursor and inbound records (`telegram:<token hash>`).
    fn account(&self) -> String;
    /// A message's longest text, and how the service measures it.
    fn message_limit(&self) -> (usize, fn(&str) -> usize);
    /// Updates after `cursor` (`None`: from now on, history skipped), waiting up to `wait`.
    fn poll(
        &self,
        cursor: Option<String>,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Polled, PollFailure>>;
    /// One attempt at a queued message; the same `txn_id` on every attempt.
    fn send<'a>(&'a self, queued: &'a Queued) -> BoxFuture<'a, Attempt>;
    /// Answers a pick of a choice (the small notice the picker sees), if the service has one.
    fn answer_choice<'a>(&'a self, answer: &'a str, text: &'a str) -> BoxFuture<'a, ()>;
    /// Joins `chat` after an invite; an error says why not.
    fn join<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// A chat of its own for a new session inside `chat` (a Telegram forum topic named `title`),
    /// its key; `None` when the service or the chat has none (the session reports to `chat`).
    fn open_topic<'a>(&'a self, _chat: &'a str, _title: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
    /// Whether a chat must ask for topics first (`/cc threads on`: Matrix, whose every room
    /// could have threads); otherwise the service decides (Telegram: forums only).
    fn topics_need_asking(&self) -> bool {
        false
    }
    /// What the service calls a chat of its own inside a chat (`topic`, `thread`).
    fn topic_name(&self) -> &'static str {
        "topic"
    }
    /// Downloads an inbound file, refusing one of more than `limit` bytes without reading
    /// past it; an error is a whole sentence.
    fn fetch<'a>(&'a self, file: &'a InFile, limit: u64) -> BoxFuture<'a, Result<Vec<u8>, String>>;
}

/// A file a queued message carries (`/cc send`): its name as the chat shows it, its MIME type,
/// its size, and the spool copy (0600, under the bridge's store) the sender reads and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    pub name: String,
    pub mime: String,
    pub size: u64,
    pub spool: std::path::PathBuf,
}

/// A file that arrived with a message: the service's handle to fetch it by (Telegram's
/// `file_id`, Matrix's `mxc://` URI), its name, MIME type and size as the sender declared them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFile {
    pub locator: String,
    pub name: String,
    pub mime: String,
    pub size: Option<u64>,
}

/// A queued message's body that carries a file, with `text` as its caption.
pub fn file_body(text: &str, file: &OutFile) -> String {
    json!({
        "text": text,
        "buttons": [],
        "file": {"name": file.name, "mime": file.mime, "size": file.size,
                 "spool": file.spool.to_string_lossy()},
    })
    .to_string()
}

/// The file a body carries, if any.
pub fn read_file_ref(body: &str) -> Option<OutFile> {
    let body: Value = serde_json::from_str(body).ok()?;
    let file = &body["file"];
    Some(OutFile {
        name: file["name"].as_str()?.to_owned(),
        mime: file["mime"].as_str().unwrap_or("application/octet-stream").to_owned(),
        size: file["size"].as_u64().unwrap_or(0),
        spool: file["spool"].as_str()?.into(),
    })
}

/// A queued message's body in the outbox: its text and choices.
pub fn outbox_body(text: &str, buttons: &[Vec<Button>]) -> String {
    let rows: Vec<Vec<[&str; 2]>> = buttons
        .iter()
        .map(|row| row.iter().map(|b| [b.label.as_str(), b.data.as_str()]).collect())
        .collect();
    json!({"text": text, "buttons": rows}).to_string()
}

/// The text and choices of an [`outbox_body`]; `None` when it is not one.
pub fn read_body(body: &str) -> Option<(String, Vec<Vec<Button>>)> {
    let body: Value = serde_json::from_str(body).ok()?;
    let text = body["text"].as_str()?.to_owned();
    Some((text, buttons_of(&body["buttons"])))
}

/// The rows of buttons [`outbox_body`] wrote.
fn buttons_of(rows: &Value) -> Vec<Vec<Button>> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    rows.as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| {
                    row.as_array()
                        .map(|r| {
                            r.iter()
                                .map(|b| Button { label: text(&b[0]), data: text(&b[1]) })
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `/cc` command a choice's data stands for, for services without buttons (Matrix): the
/// person types it (or its short form) instead of pressing.
pub fn choice_command(data: &str) -> Option<String> {
    let mut parts = data.splitn(3, ':');
    let (verb, code) = (parts.next()?, parts.next()?);
    Some(match verb {
        "a" => format!("/cc approve {code}"),
        "d" => format!("/cc deny {code}"),
        "p" => format!("/cc confirm {code}"),
        "r" => format!("/cc reject {code}"),
        // A question's option has no command: the person answers it with `/cc say`.
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_round_trips_and_choices_read_as_commands() {
        let buttons = vec![vec![
            Button { label: "Approve".into(), data: "a:K7".into() },
            Button { label: "Deny".into(), data: "d:K7".into() },
        ]];
        let body = outbox_body("run ls?", &buttons);
        assert_eq!(read_body(&body), Some(("run ls?".to_owned(), buttons)));
        assert_eq!(read_body("not json"), None);
        assert_eq!(choice_command("a:K7").as_deref(), Some("/cc approve K7"));
        assert_eq!(choice_command("r:P2").as_deref(), Some("/cc reject P2"));
        assert_eq!(choice_command("zz"), None);
    }
}
