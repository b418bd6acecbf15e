//! A mock of the Telegram Bot API on loopback (`/bot<token>/<method>`): `getUpdates` long
//! polling with offsets, `sendMessage`, `editMessageText`, `answerCallbackQuery`,
//! `sendDocument` (multipart), `getFile` and the file downloads (`/file/bot<token>/<path>`);
//! updates the test pushes (texts, button presses, documents and photos); sends recorded; faults the test queues for the next sends (`429 retry_after`,
//! `502`, a connection broken before or after the message was accepted, no answer); a revoked
//! token; a second poller's `409`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::mock_http::{CONTENT_TYPE_JSON, End, MockServer, Scenario, Shared, streamed};

/// What the next send gets instead of a plain success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendFault {
    /// `429 Too Many Requests` with `parameters.retry_after` (seconds); not sent.
    RetryAfter(u32),
    /// `502 Bad Gateway`; not sent.
    BadGateway,
    /// The connection breaks before the message is taken: not sent.
    DropBeforeAccept,
    /// The message is taken (recorded), then the connection breaks before the answer.
    DropAfterAccept,
    /// The message is taken, then no answer until the server is dropped.
    HangAfterAccept,
}

/// A message the bot sent (or edited).
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub method: String,
    pub chat_id: i64,
    pub thread_id: Option<i64>,
    pub text: String,
    pub message_id: i64,
    /// The request as sent (`reply_markup`, `parse_mode`, …; a document's text fields).
    pub body: Value,
    /// A document's file name and bytes (`sendDocument`).
    pub file: Option<(String, Vec<u8>)>,
}

/// A file the mock serves (`getFile`, then its download).
#[derive(Debug, Clone)]
struct Stored {
    path: String,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
struct State_ {
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    sent: Vec<Sent>,
    faults: VecDeque<SendFault>,
    revoked: bool,
    conflict: bool,
    calls: Vec<String>,
    files: std::collections::HashMap<String, Stored>,
    downloads: Vec<String>,
    forums: std::collections::HashSet<i64>,
    topics: Vec<(i64, i64, String)>,
}

/// No scripted scenario of the shared scaffolding: the faults live in the mock's own state.
#[derive(Debug, Clone)]
struct NoScenario;

impl Scenario for NoScenario {
    type FaultKind = ();
    fn fault(&self) -> Option<((), Option<u32>)> {
        None
    }
}

#[derive(Debug)]
struct Bot {
    token: String,
    state: Mutex<State_>,
    arrived: Notify,
}

impl Bot {
    fn lock(&self) -> MutexGuard<'_, State_> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running mock Bot API; it stops when dropped.
#[derive(Debug)]
pub struct MockTelegram {
    server: MockServer<NoScenario>,
    bot: Arc<Bot>,
}

impl MockTelegram {
    /// Starts the mock for the bot with `token` on `127.0.0.1:0`.
    pub async fn start(token: &str) -> std::io::Result<MockTelegram> {
        let bot = Arc::new(Bot {
            token: token.to_owned(),
            state: Mutex::new(State_ {
                next_update_id: 100,
                next_message_id: 1,
                ..State_::default()
            }),
            arrived: Notify::new(),
        });
        let handler_bot = Arc::clone(&bot);
        let handler = move |State(shared): State<Arc<Shared<NoScenario>>>, request: Request| {
            let bot = Arc::clone(&handler_bot);
            async move { handle(bot, shared, request).await }
        };
        let server = MockServer::start(NoScenario, handler).await?;
        Ok(MockTelegram { server, bot })
    }

    /// The API base (`http://127.0.0.1:PORT`), for `<base>/bot<token>/<method>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// A text message from `user` in `chat` (and forum topic `thread`) arrives; its update id.
    pub fn push_message(&self, chat: i64, thread: Option<i64>, user: i64, text: &str) -> i64 {
        let mut state = self.bot.lock();
        let update_id = state.next_update_id;
        state.next_update_id += 1;
        let message_id = state.next_message_id;
        state.next_message_id += 1;
        let mut message = json!({
            "message_id": message_id,
            "from": {"id": user, "is_bot": false, "first_name": "T", "username": format!("user{user}")},
            "chat": {"id": chat, "type": if chat < 0 { "supergroup" } else { "private" }},
            "date": 0,
            "text": text,
        });
        if let Some(thread) = thread {
            message["message_thread_id"] = json!(thread);
            message["is_topic_message"] = json!(true);
        }
        state.updates.push(json!({"update_id": update_id, "message": message}));
        drop(state);
        self.bot.arrived.notify_waiters();
        update_id
    }

    /// A document `name` (`bytes`, declaring `declared` bytes: Telegram's `file_size`) from
    /// `user` in `chat`, with `caption`; its update id.
    pub fn push_document(
        &self,
        chat: i64,
        user: i64,
        name: &str,
        bytes: &[u8],
        declared: u64,
        caption: Option<&str>,
    ) -> i64 {
        let file_id = self.store(bytes, &format!("documents/{name}"));
        let document = json!({"file_id": file_id, "file_unique_id": format!("u{file_id}"),
            "file_name": name, "mime_type": "application/octet-stream", "file_size": declared});
        self.push_media(chat, user, "document", document, caption)
    }

    /// A photo (`bytes`, in two sizes as Telegram sends them) from `user` in `chat`.
    pub fn push_photo(&self, chat: i64, user: i64, bytes: &[u8]) -> i64 {
        let small = self.store(&bytes[..bytes.len().min(16)], "photos/small.jpg");
        let large = self.store(bytes, "photos/large.jpg");
        let size = |id: &str, n: usize| {
            json!({"file_id": id, "file_unique_id": format!("u{id}"),
            "width": 90, "height": 90, "file_size": n})
        };
        let photo = json!([size(&small, bytes.len().min(16)), size(&large, bytes.len())]);
        self.push_media(chat, user, "photo", photo, None)
    }

    fn store(&self, bytes: &[u8], path: &str) -> String {
        let mut state = self.bot.lock();
        let id = format!("F{}", state.files.len() + 1);
        let path = format!("{path}.{id}");
        state.files.insert(id.clone(), Stored { path, bytes: bytes.to_vec() });
        id
    }

    fn push_media(
        &self,
        chat: i64,
        user: i64,
        field: &str,
        media: Value,
        caption: Option<&str>,
    ) -> i64 {
        let mut state = self.bot.lock();
        let update_id = state.next_update_id;
        state.next_update_id += 1;
        let message_id = state.next_message_id;
        state.next_message_id += 1;
        let mut message = json!({
            "message_id": message_id,
            "from": {"id": user, "is_bot": false, "first_name": "T"},
            "chat": {"id": chat, "type": if chat < 0 { "supergroup" } else { "private" }},
            "date": 0,
        });
        message[field] = media;
        if let Some(caption) = caption {
            message["caption"] = json!(caption);
        }
        state.updates.push(json!({"update_id": update_id, "message": message}));
        drop(state);
        self.bot.arrived.notify_waiters();
        update_id
    }

    /// `chat` is a forum supergroup: `createForumTopic` works there.
    pub fn set_forum(&self, chat: i64) {
        self.bot.lock().forums.insert(chat);
    }

    /// Every topic made: (chat, `message_thread_id`, name).
    pub fn topics(&self) -> Vec<(i64, i64, String)> {
        self.bot.lock().topics.clone()
    }

    /// The paths of every file downloaded, in order.
    pub fn downloads(&self) -> Vec<String> {
        self.bot.lock().downloads.clone()
    }

    /// A button press by `user` on the bot's message `message_id` in `chat`; its update id.
    pub fn push_callback(&self, chat: i64, user: i64, message_id: i64, data: &str) -> i64 {
        let mut state = self.bot.lock();
        let update_id = state.next_update_id;
        state.next_update_id += 1;
        state.updates.push(json!({"update_id": update_id, "callback_query": {
            "id": format!("cb{update_id}"),
            "from": {"id": user, "is_bot": false, "first_name": "T"},
            "message": {"message_id": message_id, "chat": {"id": chat, "type": "private"}, "date": 0},
            "chat_instance": "ci",
            "data": data,
        }}));
        drop(state);
        self.bot.arrived.notify_waiters();
        update_id
    }

    /// The same update delivered again (Telegram may, after a lost `getUpdates` answer).
    pub fn redeliver(&self, update_id: i64) {
        let mut state = self.bot.lock();
        let again = state.updates.iter().find(|u| u["update_id"] == update_id).cloned();
        if let Some(update) = again {
            state.updates.push(update);
        }
    }

    /// The next sends get these faults, in order.
    pub fn fail_next_sends(&self, faults: impl IntoIterator<Item = SendFault>) {
        self.bot.lock().faults.extend(faults);
    }

    /// Every message sent or edited, in order (duplicates included).
    pub fn sent(&self) -> Vec<Sent> {
        self.bot.lock().sent.clone()
    }

    /// Every method called, in order.
    pub fn calls(&self) -> Vec<String> {
        self.bot.lock().calls.clone()
    }

    /// From now on every call is `401 Unauthorized` (the token was revoked).
    pub fn revoke(&self) {
        self.bot.lock().revoked = true;
    }

    /// `getUpdates` answers `409 Conflict`, as when another process polls the same bot.
    pub fn set_conflict(&self, conflict: bool) {
        self.bot.lock().conflict = conflict;
    }
}

fn api_error(status: StatusCode, description: &str, retry_after: Option<u32>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({"retry_after": seconds});
    }
    (status, Json(body)).into_response()
}

async fn handle(bot: Arc<Bot>, shared: Arc<Shared<NoScenario>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    if let Some(rest) = path.strip_prefix("/file/bot") {
        return download(&bot, rest);
    }
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let Some((token, method)) = path.strip_prefix("/bot").and_then(|rest| rest.split_once('/'))
    else {
        return api_error(StatusCode::NOT_FOUND, "Not Found", None);
    };
    let (token, method) = (token.to_owned(), method.to_owned());
    let bytes: Bytes =
        axum::body::to_bytes(request.into_body(), 64 << 20).await.unwrap_or_default();
    let (body, file) = match content_type.split_once("boundary=") {
        Some((_, boundary)) => multipart(&bytes, boundary.trim_matches('"')),
        None => (serde_json::from_slice(&bytes).unwrap_or(Value::Null), None),
    };
    {
        let mut state = bot.lock();
        state.calls.push(method.clone());
        if state.revoked || token != bot.token {
            return api_error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
        }
    }
    match method.as_str() {
        "getUpdates" => get_updates(&bot, &shared, &body).await,
        "sendMessage" | "editMessageText" => send(&bot, &shared, &method, body, None).await,
        "sendDocument" if file.is_none() => {
            api_error(StatusCode::BAD_REQUEST, "Bad Request: there is no document in the request", None)
        }
        "sendDocument" => send(&bot, &shared, &method, body, file).await,
        "getFile" => get_file(&bot, &body),
        "createForumTopic" => create_topic(&bot, &body),
        "answerCallbackQuery" => Json(json!({"ok": true, "result": true})).into_response(),
        "getMe" => Json(json!({"ok": true, "result": {"id": 1, "is_bot": true, "username": "nucleic_test_bot"}}))
            .into_response(),
        _ => api_error(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}

async fn get_updates(bot: &Bot, shared: &Shared<NoScenario>, body: &Value) -> Response {
    if bot.lock().conflict {
        return api_error(
            StatusCode::CONFLICT,
            "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            None,
        );
    }
    let offset = body["offset"].as_i64().unwrap_or(0);
    let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(50));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let arrived = bot.arrived.notified();
        {
            let mut state = bot.lock();
            // An offset confirms every update before it: they are never sent again.
            state.updates.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            if !state.updates.is_empty() {
                let result = state.updates.clone();
                return Json(json!({"ok": true, "result": result})).into_response();
            }
        }
        let mut shutdown = shared.shutdown();
        tokio::select! {
            () = arrived => {}
            () = tokio::time::sleep_until(deadline) => {
                return Json(json!({"ok": true, "result": []})).into_response();
            }
            _ = shutdown.changed() => return api_error(StatusCode::BAD_GATEWAY, "shutting down", None),
        }
    }
}

/// A `multipart/form-data` body's text fields (as JSON, numbers parsed) and its one file.
fn multipart(bytes: &[u8], boundary: &str) -> (Value, Option<(String, Vec<u8>)>) {
    let mut fields = serde_json::Map::new();
    let mut file = None;
    let delimiter = format!("--{boundary}");
    let parts = split_bytes(bytes, delimiter.as_bytes());
    for part in parts {
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let Some(end) = find(part, b"\r\n\r\n") else { continue };
        let headers = String::from_utf8_lossy(&part[..end]).into_owned();
        let value = &part[end + 4..];
        let value = value.strip_suffix(b"\r\n").unwrap_or(value);
        let param = |key: &str| {
            headers.split(';').find_map(|p| {
                p.trim()
                    .strip_prefix(&format!("{key}=\""))
                    .map(|v| v.split('"').next().unwrap_or_default().to_owned())
            })
        };
        let Some(name) = param("name") else { continue };
        match param("filename") {
            Some(file_name) => file = Some((file_name, value.to_vec())),
            None => {
                let text = String::from_utf8_lossy(value).into_owned();
                let value = text.parse::<i64>().map_or_else(|_| json!(text), |n| json!(n));
                fields.insert(name, value);
            }
        }
    }
    (Value::Object(fields), file)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split_bytes<'a>(mut bytes: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    while let Some(at) = find(bytes, delimiter) {
        if at > 0 {
            parts.push(&bytes[..at]);
        }
        bytes = &bytes[at + delimiter.len()..];
    }
    parts
}

fn create_topic(bot: &Bot, body: &Value) -> Response {
    let mut state = bot.lock();
    let chat = body["chat_id"].as_i64().unwrap_or(0);
    if !state.forums.contains(&chat) {
        return api_error(StatusCode::BAD_REQUEST, "Bad Request: the chat is not a forum", None);
    }
    let thread = state.next_message_id;
    state.next_message_id += 1;
    let name = body["name"].as_str().unwrap_or_default().to_owned();
    state.topics.push((chat, thread, name.clone()));
    Json(json!({"ok": true, "result": {"message_thread_id": thread, "name": name, "icon_color": 7322096}}))
        .into_response()
}

fn get_file(bot: &Bot, body: &Value) -> Response {
    let state = bot.lock();
    let id = body["file_id"].as_str().unwrap_or_default();
    match state.files.get(id) {
        Some(stored) => Json(json!({"ok": true, "result": {"file_id": id,
            "file_size": stored.bytes.len(), "file_path": stored.path}}))
        .into_response(),
        None => api_error(StatusCode::BAD_REQUEST, "Bad Request: invalid file_id", None),
    }
}

fn download(bot: &Bot, rest: &str) -> Response {
    let Some((token, path)) = rest.split_once('/') else {
        return api_error(StatusCode::NOT_FOUND, "Not Found", None);
    };
    let mut state = bot.lock();
    if state.revoked || token != bot.token {
        return api_error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    state.downloads.push(path.to_owned());
    match state.files.values().find(|f| f.path == path) {
        Some(stored) => (StatusCode::OK, stored.bytes.clone()).into_response(),
        None => api_error(StatusCode::NOT_FOUND, "Not Found", None),
    }
}

/// `sendMessage`'s and `editMessageText`'s limit on `text`, and a document's on `caption`.
const TEXT_LIMIT: usize = 4096;
const CAPTION_LIMIT: usize = 1024;

async fn send(
    bot: &Bot,
    shared: &Shared<NoScenario>,
    method: &str,
    body: Value,
    file: Option<(String, Vec<u8>)>,
) -> Response {
    let fault = bot.lock().faults.pop_front();
    match fault {
        Some(SendFault::RetryAfter(seconds)) => {
            return api_error(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("Too Many Requests: retry after {seconds}"),
                Some(seconds),
            );
        }
        Some(SendFault::BadGateway) => {
            return api_error(StatusCode::BAD_GATEWAY, "Bad Gateway", None);
        }
        Some(SendFault::DropBeforeAccept) => {
            return streamed(
                CONTENT_TYPE_JSON,
                Vec::new(),
                Duration::ZERO,
                End::Break,
                "x-mock-id",
            );
        }
        _ => {}
    }
    // The Bot API's own limits (UTF-16 units): a longer text or caption is refused, not cut.
    let units = |key: &str| body[key].as_str().map_or(0, |t| t.encode_utf16().count());
    if units("text") > TEXT_LIMIT {
        return api_error(StatusCode::BAD_REQUEST, "Bad Request: message is too long", None);
    }
    if units("caption") > CAPTION_LIMIT {
        return api_error(
            StatusCode::BAD_REQUEST,
            "Bad Request: message caption is too long",
            None,
        );
    }
    let result = {
        let mut state = bot.lock();
        let message_id = match body["message_id"].as_i64() {
            Some(id) => id,
            None => {
                let id = state.next_message_id;
                state.next_message_id += 1;
                id
            }
        };
        state.sent.push(Sent {
            method: method.to_owned(),
            chat_id: body["chat_id"].as_i64().unwrap_or(0),
            thread_id: body["message_thread_id"].as_i64(),
            text: body["text"].as_str().or(body["caption"].as_str()).unwrap_or_default().to_owned(),
            message_id,
            body: body.clone(),
            file,
        });
        json!({"ok": true, "result": {"message_id": message_id, "chat": {"id": body["chat_id"]}, "date": 0,
            "text": body["text"]}})
    };
    match fault {
        Some(SendFault::DropAfterAccept) => {
            streamed(CONTENT_TYPE_JSON, Vec::new(), Duration::ZERO, End::Break, "x-mock-id")
        }
        Some(SendFault::HangAfterAccept) => {
            shared.until_shutdown().await;
            api_error(StatusCode::BAD_GATEWAY, "shutting down", None)
        }
        _ => Json(result).into_response(),
    }
}
