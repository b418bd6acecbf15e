//! The Telegram Bot API (`<base>/bot<token>/<method>`, JSON): long-polled `getUpdates`,
//! `sendMessage` with inline buttons and forum topics, `editMessageText`,
//! `answerCallbackQuery`, `sendDocument` (multipart) and `getFile` with the file's download;
//! every answer decoded, every failure classified so the outbox knows
//! whether to retry ([`TelegramError::attempt`]), and sending the outbox's due messages.

use std::time::Duration;

use nucleic_http::{Client, HttpError, Method, Request};
use serde_json::{Value, json};
use thiserror::Error;

use crate::outbox::{Attempt, Outbox, OutboxError, Queued};
use crate::transport::{BoxFuture, InFile, Inbound, OutFile, PollFailure, Polled, Transport};

/// The transport's name in the outbox.
pub const TRANSPORT: &str = "telegram";
/// The Bot API's own endpoint.
pub const PUBLIC_API: &str = "https://api.telegram.org";
/// A message's longest text (UTF-16 units, after entities).
pub const MESSAGE_LIMIT: usize = 4096;
/// How long one call may take beyond the long poll it asked for.
const SLACK: Duration = Duration::from_secs(10);
/// How long a send may take.
const SEND_DEADLINE: Duration = Duration::from_secs(30);
/// How long a file's download may take.
const FILE_DEADLINE: Duration = Duration::from_secs(120);
/// An answer's largest body.
const BODY_LIMIT: usize = 8 << 20;
/// A forum topic's longest name.
const TOPIC_NAME_LIMIT: usize = 128;
/// A document's longest caption (UTF-16 units).
pub const CAPTION_LIMIT: usize = 1024;

/// Why a call failed, by what the caller should do about it.
#[derive(Debug, Error)]
pub enum TelegramError {
    /// No answer, or a broken one: the request may or may not have been taken.
    #[error("telegram: {0}")]
    Http(#[from] HttpError),
    /// Flood control: try again after this long.
    #[error("telegram: too many requests, retry after {} s", .0.as_secs())]
    RetryAfter(Duration),
    /// The token is wrong or was revoked: nothing works until a person fixes it.
    #[error("telegram: the bot token was refused ({0}); set a valid one (docs/chat.md)")]
    Unauthorized(String),
    /// Another process polls this bot (`409`): this one must not poll.
    #[error("telegram: another process is polling this bot ({0})")]
    Conflict(String),
    /// The API refused the call (`error_code`, `description`).
    #[error("telegram: {method} refused ({code}): {description}")]
    Refused { method: String, code: u16, description: String },
    /// An answer that is not the Bot API's shape.
    #[error("telegram: {method}: malformed answer: {why}")]
    Malformed { method: String, why: String },
}

impl TelegramError {
    /// What the outbox records for a send that failed so.
    pub fn attempt(&self) -> Attempt {
        let error = self.to_string();
        match self {
            TelegramError::RetryAfter(after) => Attempt::Retry { retry_after: Some(*after), error },
            TelegramError::Refused { code, .. } if *code >= 500 => {
                Attempt::Retry { retry_after: None, error }
            }
            // A token fixed later sends what waited; backoff keeps this from being a busy loop.
            TelegramError::Http(_)
            | TelegramError::Unauthorized(_)
            | TelegramError::Conflict(_)
            | TelegramError::Malformed { .. } => Attempt::Retry { retry_after: None, error },
            TelegramError::Refused { .. } => Attempt::Failed { error },
        }
    }
}

/// A chat, and a forum topic in it (one topic per session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatRef {
    pub chat_id: i64,
    pub thread_id: Option<i64>,
}

impl ChatRef {
    /// As the outbox writes a chat (`<chat>` or `<chat>/<topic>`).
    pub fn key(&self) -> String {
        match self.thread_id {
            Some(thread) => format!("{}/{thread}", self.chat_id),
            None => self.chat_id.to_string(),
        }
    }

    /// The chat of an outbox key.
    pub fn from_key(key: &str) -> Option<ChatRef> {
        match key.split_once('/') {
            Some((chat, thread)) => {
                Some(ChatRef { chat_id: chat.parse().ok()?, thread_id: Some(thread.parse().ok()?) })
            }
            None => Some(ChatRef { chat_id: key.parse().ok()?, thread_id: None }),
        }
    }
}

pub use crate::transport::{Button, outbox_body};

/// What arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// A message (text, when it has some) from a user in a chat.
    Message {
        update_id: i64,
        chat: ChatRef,
        user: i64,
        message_id: i64,
        text: Option<String>,
        /// A document or photo it carries (the largest size of a photo).
        file: Option<InFile>,
    },
    /// A button press on one of the bot's messages.
    Callback {
        update_id: i64,
        callback_id: String,
        user: i64,
        chat: Option<ChatRef>,
        message_id: Option<i64>,
        data: String,
    },
    /// Anything else (an edit, a member change): only its id counts, to move the offset.
    Other { update_id: i64 },
}

impl Update {
    pub fn update_id(&self) -> i64 {
        match self {
            Update::Message { update_id, .. }
            | Update::Callback { update_id, .. }
            | Update::Other { update_id } => *update_id,
        }
    }
}

/// A bot.
#[derive(Debug, Clone)]
pub struct Telegram {
    http: Client,
    base: String,
    token: String,
    send_deadline: Duration,
}

impl Telegram {
    /// The bot with `token` at `base` (`PUBLIC_API`, or a mock's).
    pub fn new(http: Client, base: &str, token: &str) -> Telegram {
        Telegram {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            send_deadline: SEND_DEADLINE,
        }
    }

    /// How long a send may take before it counts as unanswered (default 30 s).
    pub fn with_send_deadline(mut self, deadline: Duration) -> Telegram {
        self.send_deadline = deadline;
        self
    }

    async fn call(
        &self,
        method: &str,
        body: Value,
        deadline: Duration,
    ) -> Result<Value, TelegramError> {
        let request = Request::new(Method::POST, self.method_url(method))
            .header("content-type", "application/json")
            .body(body.to_string());
        self.exchange(method, &request, deadline).await
    }

    fn method_url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.base, self.token)
    }

    async fn exchange(
        &self,
        method: &str,
        request: &Request,
        deadline: Duration,
    ) -> Result<Value, TelegramError> {
        let response = self.http.send(request, deadline, BODY_LIMIT).await?;
        let malformed = |why: String| TelegramError::Malformed { method: method.to_owned(), why };
        let answer: Value = serde_json::from_slice(&response.body)
            .map_err(|e| malformed(format!("HTTP {}: not JSON: {e}", response.status)))?;
        if answer["ok"] == Value::Bool(true) {
            return Ok(answer["result"].clone());
        }
        let code = answer["error_code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(response.status);
        let description = answer["description"].as_str().unwrap_or("no description").to_owned();
        Err(match code {
            429 => {
                let seconds = answer["parameters"]["retry_after"].as_u64().unwrap_or(1);
                TelegramError::RetryAfter(Duration::from_secs(seconds))
            }
            401 => TelegramError::Unauthorized(description),
            409 => TelegramError::Conflict(description),
            _ => TelegramError::Refused { method: method.to_owned(), code, description },
        })
    }

    /// Updates from `offset` on (which confirms every earlier one), waiting up to `wait` for
    /// one to arrive.
    pub async fn get_updates(
        &self,
        offset: Option<i64>,
        wait: Duration,
    ) -> Result<Vec<Update>, TelegramError> {
        let mut body =
            json!({"timeout": wait.as_secs(), "allowed_updates": ["message", "callback_query"]});
        if let Some(offset) = offset {
            body["offset"] = json!(offset);
        }
        let result = self.call("getUpdates", body, wait + SLACK).await?;
        let list = result.as_array().ok_or_else(|| TelegramError::Malformed {
            method: "getUpdates".into(),
            why: "the result is not a list".into(),
        })?;
        Ok(list.iter().filter_map(decode_update).collect())
    }

    /// Sends `text` to `to` with rows of `buttons`; the new message's id.
    pub async fn send_message(
        &self,
        to: ChatRef,
        text: &str,
        buttons: &[Vec<Button>],
    ) -> Result<i64, TelegramError> {
        let mut body = json!({"chat_id": to.chat_id, "text": text});
        if let Some(thread) = to.thread_id {
            body["message_thread_id"] = json!(thread);
        }
        if !buttons.is_empty() {
            body["reply_markup"] = keyboard(buttons);
        }
        let result = self.call("sendMessage", body, self.send_deadline).await?;
        result["message_id"].as_i64().ok_or_else(|| TelegramError::Malformed {
            method: "sendMessage".into(),
            why: "no message_id".into(),
        })
    }

    /// Replaces the text (and buttons) of the bot's message `message_id`.
    pub async fn edit_message_text(
        &self,
        to: ChatRef,
        message_id: i64,
        text: &str,
        buttons: &[Vec<Button>],
    ) -> Result<(), TelegramError> {
        let mut body = json!({"chat_id": to.chat_id, "message_id": message_id, "text": text});
        body["reply_markup"] = keyboard(buttons);
        self.call("editMessageText", body, self.send_deadline).await.map(|_| ())
    }

    /// Sends the spooled `file` to `to` as a document with `caption`; the new message's id.
    pub async fn send_document(
        &self,
        to: ChatRef,
        file: &OutFile,
        caption: &str,
    ) -> Result<i64, TelegramError> {
        let bytes = std::fs::read(&file.spool).map_err(|e| TelegramError::Malformed {
            method: "sendDocument".into(),
            why: format!("the spooled file {} is unreadable: {e}", file.spool.display()),
        })?;
        let caption = crate::split::split(caption, CAPTION_LIMIT, crate::split::utf16_units)
            .into_iter()
            .next()
            .unwrap_or_default();
        let mut form = crate::files::Multipart::new();
        form.text("chat_id", &to.chat_id.to_string());
        if let Some(thread) = to.thread_id {
            form.text("message_thread_id", &thread.to_string());
        }
        if !caption.is_empty() {
            form.text("caption", &caption);
        }
        form.file("document", &file.name, &file.mime, &bytes);
        let (content_type, body) = form.finish();
        let request = Request::new(Method::POST, self.method_url("sendDocument"))
            .header("content-type", content_type)
            .body(body);
        let result = self.exchange("sendDocument", &request, self.send_deadline).await?;
        result["message_id"].as_i64().ok_or_else(|| TelegramError::Malformed {
            method: "sendDocument".into(),
            why: "no message_id".into(),
        })
    }

    /// Downloads the file `file_id` (`getFile`, then `<base>/file/bot<token>/<file_path>`),
    /// refusing one over `limit` bytes by its declared size and by what arrives.
    pub async fn download(&self, file_id: &str, limit: u64) -> Result<Vec<u8>, TelegramError> {
        let result = self.call("getFile", json!({"file_id": file_id}), self.send_deadline).await?;
        let too_large = |size: u64| TelegramError::Refused {
            method: "getFile".into(),
            code: 413,
            description: format!(
                "the file is {} and the limit is {}",
                crate::files::human(size),
                crate::files::human(limit)
            ),
        };
        if let Some(size) = result["file_size"].as_u64()
            && size > limit
        {
            return Err(too_large(size));
        }
        let path = result["file_path"].as_str().ok_or_else(|| TelegramError::Malformed {
            method: "getFile".into(),
            why: "no file_path (a file over 20 MB is not downloadable by bots)".into(),
        })?;
        let url = format!("{}/file/bot{}/{path}", self.base, self.token);
        let cap = usize::try_from(limit).unwrap_or(usize::MAX);
        let response =
            match self.http.send(&Request::new(Method::GET, url), FILE_DEADLINE, cap).await {
                Err(HttpError::TooLarge { .. }) => return Err(too_large(limit.saturating_add(1))),
                other => other?,
            };
        if response.status != 200 {
            return Err(TelegramError::Refused {
                method: "file download".into(),
                code: response.status,
                description: String::from_utf8_lossy(&response.body).chars().take(200).collect(),
            });
        }
        Ok(response.body)
    }

    /// Makes a forum topic `name` in the forum supergroup `chat_id`; its `message_thread_id`.
    pub async fn create_topic(&self, chat_id: i64, name: &str) -> Result<i64, TelegramError> {
        let name: String = name.chars().take(TOPIC_NAME_LIMIT).collect();
        let body = json!({"chat_id": chat_id, "name": name});
        let result = self.call("createForumTopic", body, self.send_deadline).await?;
        result["message_thread_id"].as_i64().ok_or_else(|| TelegramError::Malformed {
            method: "createForumTopic".into(),
            why: "no message_thread_id".into(),
        })
    }

    /// Answers a button press (the small notice the presser sees).
    pub async fn answer_callback(
        &self,
        callback_id: &str,
        text: &str,
    ) -> Result<(), TelegramError> {
        let body = json!({"callback_query_id": callback_id, "text": text});
        self.call("answerCallbackQuery", body, self.send_deadline).await.map(|_| ())
    }
}

fn keyboard(buttons: &[Vec<Button>]) -> Value {
    let rows: Vec<Vec<Value>> = buttons
        .iter()
        .map(|row| row.iter().map(|b| json!({"text": b.label, "callback_data": b.data})).collect())
        .collect();
    json!({"inline_keyboard": rows})
}

/// One update of `getUpdates`' result; `None` when it has no id at all.
fn decode_update(update: &Value) -> Option<Update> {
    let update_id = update["update_id"].as_i64()?;
    let chat_of = |message: &Value| {
        Some(ChatRef {
            chat_id: message["chat"]["id"].as_i64()?,
            thread_id: message["message_thread_id"].as_i64(),
        })
    };
    let message = &update["message"];
    if message.is_object() {
        if let (Some(chat), Some(user), Some(message_id)) =
            (chat_of(message), message["from"]["id"].as_i64(), message["message_id"].as_i64())
        {
            let text = message["text"].as_str().or(message["caption"].as_str()).map(str::to_owned);
            let file = file_of(message);
            return Some(Update::Message { update_id, chat, user, message_id, text, file });
        }
        return Some(Update::Other { update_id });
    }
    let callback = &update["callback_query"];
    if let (Some(callback_id), Some(user)) =
        (callback["id"].as_str(), callback["from"]["id"].as_i64())
    {
        return Some(Update::Callback {
            update_id,
            callback_id: callback_id.to_owned(),
            user,
            chat: chat_of(&callback["message"]),
            message_id: callback["message"]["message_id"].as_i64(),
            data: callback["data"].as_str().unwrap_or_default().to_owned(),
        });
    }
    Some(Update::Other { update_id })
}

/// The document, or the largest photo, a message carries.
fn file_of(message: &Value) -> Option<InFile> {
    let document = &message["document"];
    if let Some(id) = document["file_id"].as_str() {
        return Some(InFile {
            locator: id.to_owned(),
            name: document["file_name"].as_str().unwrap_or("document").to_owned(),
            mime: document["mime_type"].as_str().unwrap_or("application/octet-stream").to_owned(),
            size: document["file_size"].as_u64(),
        });
    }
    let photo = message["photo"].as_array()?.last()?;
    Some(InFile {
        locator: photo["file_id"].as_str()?.to_owned(),
        name: format!("photo-{}.jpg", message["message_id"].as_i64().unwrap_or(0)),
        mime: "image/jpeg".into(),
        size: photo["file_size"].as_u64(),
    })
}

/// What one round of sending the outbox's due messages did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Round {
    pub sent: u32,
    pub retried: u32,
    pub failed: u32,
}

/// Sends every due Telegram message of the outbox once, recording each attempt.
pub async fn send_due(bot: &Telegram, outbox: &Outbox, now_ms: i64) -> Result<Round, OutboxError> {
    let mut round = Round::default();
    for queued in outbox.due(TRANSPORT, now_ms)? {
        let attempt = send_one(bot, &queued).await;
        round.count(&attempt);
        outbox.record(queued.id, &attempt, now_ms)?;
    }
    Ok(round)
}

impl Round {
    /// Counts one attempt's outcome.
    pub fn count(&mut self, attempt: &Attempt) {
        match attempt {
            Attempt::Sent { .. } => self.sent += 1,
            Attempt::Retry { .. } => self.retried += 1,
            Attempt::Failed { .. } => self.failed += 1,
        }
    }
}

/// One attempt at a queued message (the outbox is not touched: the caller records it).
pub async fn send_one(bot: &Telegram, queued: &Queued) -> Attempt {
    let (Some(chat), Some((text, buttons))) =
        (ChatRef::from_key(&queued.chat), crate::transport::read_body(&queued.body))
    else {
        return Attempt::Failed {
            error: format!("a queued message the bridge cannot read: {}", queued.chat),
        };
    };
    let sent = match crate::transport::read_file_ref(&queued.body) {
        Some(file) => bot.send_document(chat, &file, &text).await,
        None => bot.send_message(chat, &text, &buttons).await,
    };
    match sent {
        Ok(id) => Attempt::Sent { remote_id: Some(id.to_string()) },
        Err(e) => e.attempt(),
    }
}

impl Update {
    /// The service-neutral form (chats as outbox keys, users as text).
    pub fn inbound(self) -> Inbound {
        match self {
            Update::Message { update_id, chat, user, text, file, .. } => Inbound::Message {
                id: update_id.to_string(),
                chat: chat.key(),
                user: user.to_string(),
                text,
                file,
            },
            Update::Callback { update_id, callback_id, user, chat, data, .. } => Inbound::Choice {
                id: update_id.to_string(),
                answer: callback_id,
                user: user.to_string(),
                chat: chat.map(|c| c.key()),
                data,
            },
            Update::Other { update_id } => Inbound::Other { id: update_id.to_string() },
        }
    }
}

impl Transport for Telegram {
    fn name(&self) -> &'static str {
        TRANSPORT
    }

    fn account(&self) -> String {
        format!("{TRANSPORT}:{}", crate::lock::token_key(&self.token))
    }

    fn message_limit(&self) -> (usize, fn(&str) -> usize) {
        (MESSAGE_LIMIT, crate::split::utf16_units)
    }

    /// The cursor is the next `offset` (which confirms every earlier update to Telegram).
    fn poll(
        &self,
        cursor: Option<String>,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Polled, PollFailure>> {
        Box::pin(async move {
            let offset = cursor.as_deref().and_then(|c| c.parse::<i64>().ok());
            match self.get_updates(offset, wait).await {
                Ok(updates) => {
                    let next = updates.iter().map(Update::update_id).max().map(|l| l + 1);
                    let next = next.map(|n| n.to_string()).or(cursor);
                    Ok(Polled { updates: updates.into_iter().map(Update::inbound).collect(), next })
                }
                Err(TelegramError::Conflict(why)) => Err(PollFailure::Conflict(format!(
                    "another process polls this bot token (Telegram said {why}); only one `nucleic chat` per bot may run"
                ))),
                Err(TelegramError::Unauthorized(why)) => Err(PollFailure::Unauthorized(format!(
                    "Telegram refused the bot token ({why}); it was revoked or is wrong: set a valid one (docs/chat.md) and start `nucleic chat` again"
                ))),
                Err(TelegramError::RetryAfter(after)) => Err(PollFailure::Transient {
                    retry_after: Some(after),
                    error: format!("telegram: retry after {} s", after.as_secs()),
                }),
                Err(
                    e @ (TelegramError::Http(_)
                    | TelegramError::Refused { .. }
                    | TelegramError::Malformed { .. }),
                ) => Err(PollFailure::Transient { retry_after: None, error: e.to_string() }),
            }
        })
    }

    fn send<'a>(&'a self, queued: &'a Queued) -> BoxFuture<'a, Attempt> {
        Box::pin(send_one(self, queued))
    }

    fn answer_choice<'a>(&'a self, answer: &'a str, text: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.answer_callback(answer, text).await;
        })
    }

    /// A topic per session in a forum supergroup, opened from its General topic; other chats
    /// (private ones, groups that are not forums, a topic already) have none.
    fn open_topic<'a>(&'a self, chat: &'a str, title: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let chat = ChatRef::from_key(chat)?;
            if chat.chat_id >= 0 || chat.thread_id.is_some() {
                return None;
            }
            let thread = self.create_topic(chat.chat_id, title).await.ok()?;
            Some(ChatRef { chat_id: chat.chat_id, thread_id: Some(thread) }.key())
        })
    }

    fn fetch<'a>(&'a self, file: &'a InFile, limit: u64) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(
            async move { self.download(&file.locator, limit).await.map_err(|e| e.to_string()) },
        )
    }

    /// A bot is added to a chat by its members, never invited: nothing to do.
    fn join<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}
