//! The Matrix client-server API (`<homeserver>/_matrix/client/v3/…`, JSON, an access token):
//! `/sync` long polling from a persisted `since` (the first sync skips history), sends as
//! `PUT …/send/m.room.message/{txnId}` with the outbox's `txn_id` (idempotent, so a retried
//! send is delivered once), joins on invite, threads (`m.thread`) as chats of their own, and
//! media (files sent as `m.file`/`m.image` after an upload, inbound ones downloaded through
//! the authenticated media API), and every failure classified for the outbox.

use std::time::Duration;

use nucleic_http::{Client, HttpError, Method, Request};
use serde_json::{Value, json};
use thiserror::Error;

use crate::outbox::{Attempt, Queued};
use crate::transport::{
    BoxFuture, Button, InFile, Inbound, OutFile, PollFailure, Polled, Transport,
};

/// The transport's name in the outbox.
pub const TRANSPORT: &str = "matrix";
/// A message's longest body in bytes (an event may have 65,536 in all, with its envelope).
pub const MESSAGE_LIMIT: usize = 32_000;
/// How long one call may take beyond the long poll it asked for.
const SLACK: Duration = Duration::from_secs(10);
/// How long a send (or a join, a whoami) may take.
const CALL_DEADLINE: Duration = Duration::from_secs(30);
/// How long a media upload or download may take.
const MEDIA_DEADLINE: Duration = Duration::from_secs(120);
/// An answer's largest body (a sync of many rooms can be large).
const BODY_LIMIT: usize = 16 << 20;
/// The events one room's timeline may bring per sync before the homeserver says "limited".
const TIMELINE_LIMIT: u32 = 200;

/// Why a call failed, by what the caller should do about it.
#[derive(Debug, Error)]
pub enum MatrixError {
    /// No answer, or a broken one: the request may or may not have been taken.
    #[error("matrix: {0}")]
    Http(#[from] HttpError),
    /// `M_LIMIT_EXCEEDED`: try again after this long.
    #[error("matrix: rate limited, retry after {} ms", .0.as_millis())]
    RateLimited(Duration),
    /// The access token is wrong, expired or was logged out.
    #[error("matrix: the access token was refused ({0}); set a valid one (docs/chat.md)")]
    Unauthorized(String),
    /// The homeserver refused the call (HTTP status, `errcode`, `error`).
    #[error("matrix: {what} refused (HTTP {status} {errcode}): {error}")]
    Refused { what: String, status: u16, errcode: String, error: String },
    /// An answer that is not the client-server API's shape.
    #[error("matrix: {what}: malformed answer: {why}")]
    Malformed { what: String, why: String },
}

impl MatrixError {
    /// What the outbox records for a send that failed so.
    pub fn attempt(&self) -> Attempt {
        let error = self.to_string();
        match self {
            MatrixError::RateLimited(after) => Attempt::Retry { retry_after: Some(*after), error },
            MatrixError::Refused { status, .. } if *status >= 500 || *status == 404 => {
                // 404 on a send is a homeserver still starting its routes, or a proxy in front.
                Attempt::Retry { retry_after: None, error }
            }
            MatrixError::Http(_) | MatrixError::Unauthorized(_) | MatrixError::Malformed { .. } => {
                Attempt::Retry { retry_after: None, error }
            }
            MatrixError::Refused { .. } => Attempt::Failed { error },
        }
    }
}

/// One Matrix account (a bot user) on one homeserver.
#[derive(Debug, Clone)]
pub struct Matrix {
    http: Client,
    base: String,
    token: String,
    user_id: String,
}

impl Matrix {
    /// The account of `token` at `homeserver`: asks `whoami` who it is (its own events are
    /// then ignored).
    pub async fn connect(
        http: Client,
        homeserver: &str,
        token: &str,
    ) -> Result<Matrix, MatrixError> {
        let mut matrix = Matrix {
            http,
            base: homeserver.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            user_id: String::new(),
        };
        let me = matrix.call(Method::GET, "/account/whoami", None, CALL_DEADLINE, "whoami").await?;
        matrix.user_id = me["user_id"]
            .as_str()
            .ok_or_else(|| MatrixError::Malformed {
                what: "whoami".into(),
                why: "no user_id".into(),
            })?
            .to_owned();
        Ok(matrix)
    }

    /// The account's user id (`@bot:example.org`).
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        deadline: Duration,
        what: &str,
    ) -> Result<Value, MatrixError> {
        let url = format!("{}/_matrix/client/v3{path}", self.base);
        let mut request =
            Request::new(method, url).header("authorization", format!("Bearer {}", self.token));
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let response = self.http.send(&request, deadline, BODY_LIMIT).await?;
        answer_of(&response, what)
    }

    /// Uploads `bytes` (`POST /_matrix/media/v3/upload`); the `mxc://` URI.
    pub async fn upload(
        &self,
        name: &str,
        mime: &str,
        bytes: Vec<u8>,
    ) -> Result<String, MatrixError> {
        let url = format!("{}/_matrix/media/v3/upload?filename={}", self.base, encode(name));
        let request = Request::new(Method::POST, url)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", mime)
            .body(bytes);
        let response = self.http.send(&request, MEDIA_DEADLINE, BODY_LIMIT).await?;
        let answer = answer_of(&response, "upload")?;
        answer["content_uri"].as_str().map(str::to_owned).ok_or_else(|| MatrixError::Malformed {
            what: "upload".into(),
            why: "no content_uri".into(),
        })
    }

    /// Downloads `mxc://server/id` (`GET /_matrix/client/v1/media/download/…`), refusing more
    /// than `limit` bytes.
    pub async fn download(&self, mxc: &str, limit: u64) -> Result<Vec<u8>, MatrixError> {
        let Some((server, id)) = mxc.strip_prefix("mxc://").and_then(|r| r.split_once('/')) else {
            return Err(MatrixError::Malformed {
                what: "download".into(),
                why: format!("{mxc:?} is not an mxc:// URI"),
            });
        };
        let url = format!(
            "{}/_matrix/client/v1/media/download/{}/{}",
            self.base,
            encode(server),
            encode(id)
        );
        let request = Request::new(Method::GET, url)
            .header("authorization", format!("Bearer {}", self.token));
        let cap = usize::try_from(limit).unwrap_or(usize::MAX);
        let response = match self.http.send(&request, MEDIA_DEADLINE, cap).await {
            Err(HttpError::TooLarge { .. }) => {
                return Err(MatrixError::Refused {
                    what: "download".into(),
                    status: 413,
                    errcode: "M_TOO_LARGE".into(),
                    error: format!("the file is over the limit of {}", crate::files::human(limit)),
                });
            }
            other => other?,
        };
        if (200..300).contains(&response.status) {
            return Ok(response.body);
        }
        answer_of(&response, "download").map(|_| Vec::new())
    }

    /// Sends the spooled `file` to `chat` as transaction `txn_id` (uploaded first; a retry
    /// uploads again, but the event is still sent once), with `caption` as a text after it.
    pub async fn send_file(
        &self,
        chat: &str,
        txn_id: &str,
        file: &OutFile,
    ) -> Result<String, MatrixError> {
        let bytes = std::fs::read(&file.spool).map_err(|e| MatrixError::Malformed {
            what: "send".into(),
            why: format!("the spooled file {} is unreadable: {e}", file.spool.display()),
        })?;
        let size = bytes.len();
        let uri = self.upload(&file.name, &file.mime, bytes).await?;
        let msgtype = if file.mime.starts_with("image/") { "m.image" } else { "m.file" };
        let content = json!({
            "msgtype": msgtype, "body": file.name, "filename": file.name, "url": uri,
            "info": {"mimetype": file.mime, "size": size},
        });
        self.send_content(chat, txn_id, content).await
    }
}

/// A call's JSON answer, or its error classified.
fn answer_of(response: &nucleic_http::Response, what: &str) -> Result<Value, MatrixError> {
    {
        let malformed = |why: String| MatrixError::Malformed { what: what.to_owned(), why };
        let answer: Value = serde_json::from_slice(&response.body)
            .map_err(|e| malformed(format!("HTTP {}: not JSON: {e}", response.status)))?;
        if (200..300).contains(&response.status) {
            return Ok(answer);
        }
        let errcode = answer["errcode"].as_str().unwrap_or("M_UNKNOWN").to_owned();
        let error = answer["error"].as_str().unwrap_or("no description").to_owned();
        Err(match (response.status, errcode.as_str()) {
            (429, _) | (_, "M_LIMIT_EXCEEDED") => {
                let ms = answer["retry_after_ms"].as_u64().unwrap_or(1000);
                MatrixError::RateLimited(Duration::from_millis(ms))
            }
            (401, _) | (_, "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN") => {
                MatrixError::Unauthorized(format!("{errcode}: {error}"))
            }
            (status, _) => MatrixError::Refused { what: what.to_owned(), status, errcode, error },
        })
    }
}

impl Matrix {
    /// One `/sync`: from `since` waiting up to `wait` for something new; without `since`, the
    /// current position only (no history, pending invites included).
    pub async fn sync(&self, since: Option<&str>, wait: Duration) -> Result<Polled, MatrixError> {
        let limit = if since.is_some() { TIMELINE_LIMIT } else { 0 };
        let filter = json!({
            "room": {"timeline": {"limit": limit}, "state": {"lazy_load_members": true}},
            "presence": {"types": []},
            "account_data": {"types": []},
        });
        let mut path = format!("/sync?filter={}", encode(&filter.to_string()));
        if let Some(since) = since {
            path.push_str(&format!("&since={}&timeout={}", encode(since), wait.as_millis()));
        }
        let answer = self.call(Method::GET, &path, None, wait + SLACK, "sync").await?;
        decode_sync(&answer, &self.user_id, since.is_none())
    }

    /// Sends `text` to `chat` (a room, or `room/thread root`) as transaction `txn_id`; the
    /// event's id. The same `txn_id` again returns the same event, never a second one.
    pub async fn send_text(
        &self,
        chat: &str,
        txn_id: &str,
        text: &str,
    ) -> Result<String, MatrixError> {
        self.send_content(chat, txn_id, json!({"msgtype": "m.text", "body": text})).await
    }

    /// Sends one `m.room.message` with `content` (in the chat's thread, if it is one).
    async fn send_content(
        &self,
        chat: &str,
        txn_id: &str,
        mut content: Value,
    ) -> Result<String, MatrixError> {
        let (room, thread) = split_chat(chat);
        if let Some(root) = thread {
            content["m.relates_to"] = json!({
                "rel_type": "m.thread",
                "event_id": root,
                "is_falling_back": true,
                "m.in_reply_to": {"event_id": root},
            });
        }
        let path = format!("/rooms/{}/send/m.room.message/{}", encode(room), encode(txn_id));
        let answer = self.call(Method::PUT, &path, Some(content), CALL_DEADLINE, "send").await?;
        answer["event_id"].as_str().map(str::to_owned).ok_or_else(|| MatrixError::Malformed {
            what: "send".into(),
            why: "no event_id".into(),
        })
    }

    /// Joins `room` (after an invite).
    pub async fn join_room(&self, room: &str) -> Result<(), MatrixError> {
        let path = format!("/join/{}", encode(room));
        self.call(Method::POST, &path, Some(json!({})), CALL_DEADLINE, "join").await.map(|_| ())
    }
}

/// A chat key's room and thread root (`!room:hs/$root`).
pub fn split_chat(chat: &str) -> (&str, Option<&str>) {
    match chat.split_once('/') {
        Some((room, root)) => (room, Some(root)),
        None => (chat, None),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A `/sync` answer as updates: invites of the account, then each joined room's timeline in
/// order. An event without an id, or of the wrong shape, is a [`Inbound::Malformed`]; the
/// account's own events are [`Inbound::Other`]. `initial`: a first sync, whose timeline (if
/// any) is history and not acted on.
pub fn decode_sync(answer: &Value, me: &str, initial: bool) -> Result<Polled, MatrixError> {
    let next = answer["next_batch"].as_str().ok_or_else(|| MatrixError::Malformed {
        what: "sync".into(),
        why: "no next_batch".into(),
    })?;
    let mut updates = Vec::new();
    if let Some(invites) = answer["rooms"]["invite"].as_object() {
        for (room, invite) in invites {
            let inviter = invite["invite_state"]["events"].as_array().and_then(|events| {
                events.iter().find(|e| {
                    e["type"] == "m.room.member"
                        && e["state_key"] == me
                        && e["content"]["membership"] == "invite"
                })
            });
            match inviter.and_then(|e| e["sender"].as_str()) {
                Some(user) => updates.push(Inbound::Invite {
                    id: format!("invite:{room}:{user}"),
                    chat: room.clone(),
                    user: user.to_owned(),
                }),
                None => updates.push(Inbound::Malformed {
                    id: format!("invite:{room}:{next}"),
                    why: format!("an invite to {room} without its member event"),
                }),
            }
        }
    }
    if !initial && let Some(joined) = answer["rooms"]["join"].as_object() {
        for (room, joined) in joined {
            let events = joined["timeline"]["events"].as_array().map_or(&[][..], Vec::as_slice);
            for (i, event) in events.iter().enumerate() {
                updates.push(decode_event(room, event, me, &format!("{next}:{i}")));
            }
        }
    }
    Ok(Polled { updates, next: Some(next.to_owned()) })
}

/// One timeline event of `room`; `place` names it when it has no id.
fn decode_event(room: &str, event: &Value, me: &str, place: &str) -> Inbound {
    let Some(id) = event["event_id"].as_str().map(str::to_owned) else {
        return Inbound::Malformed {
            id: format!("malformed:{room}:{place}"),
            why: format!("an event in {room} without an event_id"),
        };
    };
    let (Some(kind), Some(sender)) = (event["type"].as_str(), event["sender"].as_str()) else {
        return Inbound::Malformed {
            id,
            why: format!("an event in {room} without type or sender"),
        };
    };
    if sender == me || kind != "m.room.message" {
        return Inbound::Other { id };
    }
    let content = &event["content"];
    let relation = &content["m.relates_to"];
    if relation["rel_type"] == "m.replace" {
        return Inbound::Other { id }; // an edit: the original was acted on, or not, already
    }
    let chat = match (relation["rel_type"].as_str(), relation["event_id"].as_str()) {
        (Some("m.thread"), Some(root)) => format!("{room}/{root}"),
        _ => room.to_owned(),
    };
    let file = match (content["msgtype"].as_str(), content["url"].as_str()) {
        (Some("m.file" | "m.image" | "m.video" | "m.audio"), Some(url)) => Some(InFile {
            locator: url.to_owned(),
            name: content["filename"]
                .as_str()
                .or(content["body"].as_str())
                .unwrap_or("file")
                .to_owned(),
            mime: content["info"]["mimetype"]
                .as_str()
                .unwrap_or("application/octet-stream")
                .to_owned(),
            size: content["info"]["size"].as_u64(),
        }),
        _ => None,
    };
    // A file's body is its name, not a command.
    let text = if file.is_some() { None } else { content["body"].as_str().map(str::to_owned) };
    Inbound::Message { id, chat, user: sender.to_owned(), text, file }
}

/// A queued message's text with its choices written out (Matrix has no buttons): each line
/// says the command that does what the button would.
pub fn render(text: &str, buttons: &[Vec<Button>]) -> String {
    let choices: Vec<(String, String)> = buttons
        .iter()
        .flatten()
        .filter_map(|b| crate::transport::choice_command(&b.data).map(|c| (b.label.clone(), c)))
        .collect();
    // A report that already spells its commands out is not told twice.
    if choices.iter().all(|(_, command)| text.contains(command.as_str())) {
        return text.to_owned();
    }
    let lines: Vec<String> = choices.iter().map(|(label, c)| format!("{label}: {c}")).collect();
    format!("{text}\n\n{}", lines.join("\n"))
}

impl Transport for Matrix {
    fn name(&self) -> &'static str {
        TRANSPORT
    }

    fn account(&self) -> String {
        format!("{TRANSPORT}:{}", self.user_id)
    }

    fn message_limit(&self) -> (usize, fn(&str) -> usize) {
        (MESSAGE_LIMIT, str::len)
    }

    fn poll(
        &self,
        cursor: Option<String>,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Polled, PollFailure>> {
        Box::pin(async move {
            self.sync(cursor.as_deref(), wait).await.map_err(|e| match e {
                MatrixError::Unauthorized(why) => PollFailure::Unauthorized(format!(
                    "the Matrix homeserver refused the access token of {} ({why}); it expired or was logged out: set a valid one (docs/chat.md) and start `nucleic chat` again",
                    self.user_id
                )),
                MatrixError::RateLimited(after) => {
                    PollFailure::Transient { retry_after: Some(after), error: e.to_string() }
                }
                MatrixError::Http(_) | MatrixError::Refused { .. } | MatrixError::Malformed { .. } => {
                    PollFailure::Transient { retry_after: None, error: e.to_string() }
                }
            })
        })
    }

    fn send<'a>(&'a self, queued: &'a Queued) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let Some((text, buttons)) = crate::transport::read_body(&queued.body) else {
                return Attempt::Failed {
                    error: format!("a queued message the bridge cannot read: {}", queued.chat),
                };
            };
            let sent = match crate::transport::read_file_ref(&queued.body) {
                Some(file) => self.send_file(&queued.chat, &queued.txn_id, &file).await,
                None => {
                    self.send_text(&queued.chat, &queued.txn_id, &render(&text, &buttons)).await
                }
            };
            match sent {
                Ok(event_id) => Attempt::Sent { remote_id: Some(event_id) },
                Err(e) => e.attempt(),
            }
        })
    }

    /// Matrix has no answer to a pick (a choice is a typed command): nothing to do.
    fn answer_choice<'a>(&'a self, _answer: &'a str, _text: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn join<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.join_room(split_chat(chat).0).await.map_err(|e| e.to_string()) })
    }

    /// A thread per session, in a room that asked for them: its root is a message naming the
    /// session (`None` inside a thread already, or when the root cannot be sent).
    fn open_topic<'a>(&'a self, chat: &'a str, title: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let (room, None) = split_chat(chat) else { return None };
            let txn = format!("thread-{}", uuid::Uuid::new_v4().simple());
            let root =
                format!("Session: {title}. Its approvals and reports follow in this thread.");
            let event = self.send_text(room, &txn, &root).await.ok()?;
            Some(format!("{room}/{event}"))
        })
    }

    fn topics_need_asking(&self) -> bool {
        true
    }

    fn topic_name(&self) -> &'static str {
        "thread"
    }

    fn fetch<'a>(&'a self, file: &'a InFile, limit: u64) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(
            async move { self.download(&file.locator, limit).await.map_err(|e| e.to_string()) },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "@bot:hs";

    #[test]
    fn a_sync_decodes_invites_messages_threads_and_says_what_is_malformed() {
        let answer = json!({
            "next_batch": "s2",
            "rooms": {
                "invite": {"!new:hs": {"invite_state": {"events": [
                    {"type": "m.room.member", "state_key": ME, "sender": "@alice:hs",
                     "content": {"membership": "invite"}}
                ]}}},
                "join": {"!r:hs": {"timeline": {"events": [
                    {"event_id": "$1", "type": "m.room.message", "sender": "@alice:hs",
                     "content": {"msgtype": "m.text", "body": "/cc help"}},
                    {"event_id": "$2", "type": "m.room.message", "sender": ME,
                     "content": {"body": "mine"}},
                    {"type": "m.room.message", "sender": "@alice:hs", "content": {}},
                    {"event_id": "$3", "type": "m.room.message", "sender": "@alice:hs",
                     "content": {"body": "/cc diff", "m.relates_to":
                        {"rel_type": "m.thread", "event_id": "$root"}}},
                    {"event_id": "$4", "sender": "@alice:hs"},
                ]}}}
            }
        });
        let polled = decode_sync(&answer, ME, false).unwrap();
        assert_eq!(polled.next.as_deref(), Some("s2"));
        let u = &polled.updates;
        assert_eq!(u.len(), 6, "{u:?}");
        assert!(
            matches!(&u[0], Inbound::Invite { chat, user, .. } if chat == "!new:hs" && user == "@alice:hs")
        );
        assert!(matches!(&u[1], Inbound::Message { id, chat, text: Some(t), .. }
            if id == "$1" && chat == "!r:hs" && t == "/cc help"));
        assert!(matches!(&u[2], Inbound::Other { id } if id == "$2"), "own event ignored");
        assert!(matches!(&u[3], Inbound::Malformed { id, .. } if id == "malformed:!r:hs:s2:2"));
        assert!(matches!(&u[4], Inbound::Message { chat, .. } if chat == "!r:hs/$root"));
        assert!(matches!(&u[5], Inbound::Malformed { id, .. } if id == "$4"));
        // The first sync is history: only the invite counts.
        assert_eq!(decode_sync(&answer, ME, true).unwrap().updates.len(), 1);
        assert!(decode_sync(&json!({"rooms": {}}), ME, false).is_err(), "no next_batch");
    }

    #[test]
    fn a_failed_send_is_retried_unless_the_homeserver_refused_it_for_good() {
        let retry_after = |e: MatrixError| match e.attempt() {
            Attempt::Retry { retry_after, .. } => Some(retry_after),
            Attempt::Failed { .. } | Attempt::Sent { .. } => None,
        };
        let refused = |status, errcode: &str| MatrixError::Refused {
            what: "send".into(),
            status,
            errcode: errcode.into(),
            error: "x".into(),
        };
        let limited = MatrixError::RateLimited(Duration::from_millis(1500));
        assert_eq!(retry_after(limited), Some(Some(Duration::from_millis(1500))));
        assert_eq!(retry_after(refused(502, "M_UNKNOWN")), Some(None));
        assert_eq!(retry_after(MatrixError::Unauthorized("M_UNKNOWN_TOKEN".into())), Some(None));
        assert_eq!(retry_after(refused(403, "M_FORBIDDEN")), None, "not in the room: failed");
    }

    #[test]
    fn choices_are_written_out_as_commands() {
        let buttons = vec![vec![
            Button { label: "Approve".into(), data: "a:K7".into() },
            Button { label: "Deny".into(), data: "d:K7".into() },
        ]];
        let text = render("Approval K7: run ls?", &buttons);
        assert_eq!(text, "Approval K7: run ls?\n\nApprove: /cc approve K7\nDeny: /cc deny K7");
        assert_eq!(render("plain", &[]), "plain");
        assert_eq!(encode("!r:hs/x y"), "%21r%3Ahs%2Fx%20y");
        assert_eq!(split_chat("!r:hs/$t"), ("!r:hs", Some("$t")));
    }
}
