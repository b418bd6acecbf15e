//! What can go wrong talking to a host, each error saying what it was doing.

use std::path::PathBuf;
use std::time::Duration;

use nucleic_protocol::{HostMessage, ProtocolErrorCode};

/// An error of the client side of the sync protocol.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A wait passed its deadline; `what` says what was waited for.
    #[error("{what}: nothing within {}", seconds(*within))]
    Timeout { what: String, within: Duration },
    /// The socket could not be opened or the WebSocket upgrade failed.
    #[error("cannot connect to the host {at}: {message}")]
    Connect { at: String, message: String },
    /// The connection broke (reset, closed by the host).
    #[error("the host {at} closed the connection{}", close_text(*code, reason))]
    Closed { at: String, code: Option<u16>, reason: String },
    /// The host would not let us in: `unauthorized`, `badHandshake`, or no `welcome`.
    #[error("the host refused the connection: {0}")]
    Refused(String),
    /// The connection was lost and could not be made again before the reconnect deadline.
    #[error("the connection to the host was lost ({cause}) and not regained within {}: {last}", seconds(*within))]
    Reconnect { cause: String, within: Duration, last: Box<ClientError> },
    /// The host sent something that is not a message this client knows.
    #[error("the host sent a message this client cannot read ({error}): {preview}")]
    BadMessage { error: String, preview: String },
    /// The host answered a request with `error` or `unsupported`.
    #[error("{0}")]
    Rejected(Rejection),
    /// The host answered a request with a reply of another kind than expected.
    #[error("unexpected reply to {request}: {reply}")]
    Unexpected { request: String, reply: String },
    /// An `ack`'s result is not what the request produces.
    #[error("the host's answer to {request} is not {expected}: {error}")]
    BadResult { request: String, expected: &'static str, error: String },
    /// Finding or starting the local daemon failed.
    #[error("{0}")]
    Daemon(String),
    /// A file of the daemon's home could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A message could not be encoded, or a request had no message id.
    #[error("cannot send {what}: {message}")]
    Send { what: String, message: String },
}

/// An `error` or `unsupported` reply, as the host gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// `None` for `unsupported` (the host does not know the message type).
    pub code: Option<ProtocolErrorCode>,
    pub message: String,
    /// For `alreadyResolved`: who answered first.
    pub resolved_by: Option<String>,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(code) = self.code else {
            return f.write_str(&self.message);
        };
        let code = code_name(code);
        match &self.resolved_by {
            Some(by) => write!(f, "{} [{code}; answered by {by}]", self.message),
            None => write!(f, "{} [{code}]", self.message),
        }
    }
}

impl ClientError {
    /// Whether a new connection may help: not when the host refused our credential or
    /// handshake, or when a request was answered.
    pub fn is_connection_loss(&self) -> bool {
        match self {
            ClientError::Closed { code, .. } => !matches!(code, Some(1002 | 4401)),
            ClientError::Connect { .. } | ClientError::Timeout { .. } => true,
            ClientError::Refused(_)
            | ClientError::Reconnect { .. }
            | ClientError::BadMessage { .. }
            | ClientError::Rejected(_)
            | ClientError::Unexpected { .. }
            | ClientError::BadResult { .. }
            | ClientError::Daemon(_)
            | ClientError::Io { .. }
            | ClientError::Send { .. } => false,
        }
    }

    /// The host's error code, when a request was refused with one.
    pub fn code(&self) -> Option<ProtocolErrorCode> {
        match self {
            ClientError::Rejected(r) => r.code,
            _ => None,
        }
    }
}

/// The rejection in `message`, if it is an `error` or `unsupported` reply.
pub fn rejection(message: &HostMessage) -> Option<Rejection> {
    match message {
        HostMessage::Error { code, message, resolved_by, .. } => Some(Rejection {
            code: Some(*code),
            message: message.clone(),
            resolved_by: resolved_by.clone(),
        }),
        HostMessage::Unsupported { message_type, .. } => Some(Rejection {
            code: None,
            message: format!("the host does not support {message_type}"),
            resolved_by: None,
        }),
        HostMessage::Welcome { .. }
        | HostMessage::Ack { .. }
        | HostMessage::Projects { .. }
        | HostMessage::Sessions { .. }
        | HostMessage::GitFacts { .. }
        | HostMessage::Files { .. }
        | HostMessage::Branches { .. }
        | HostMessage::Devices { .. }
        | HostMessage::Push { .. }
        | HostMessage::FileContent { .. }
        | HostMessage::Event { .. }
        | HostMessage::Events { .. }
        | HostMessage::SessionChanged { .. } => None,
    }
}

/// One line for a person: a rejection as the host worded it, anything else as its JSON.
pub fn describe(message: &HostMessage) -> String {
    match rejection(message) {
        Some(r) => r.to_string(),
        None => serde_json::to_string(message).unwrap_or_default(),
    }
}

/// The wire name of an error code (`notFound`, …).
pub fn code_name(code: ProtocolErrorCode) -> String {
    serde_json::to_value(code).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// `5 s`, `0.2 s`.
pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn close_text(code: Option<u16>, reason: &str) -> String {
    match (code, reason.is_empty()) {
        (None, _) => String::new(),
        (Some(code), true) => format!(" (close {code})"),
        (Some(code), false) => format!(" (close {code}: {reason})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_read_as_the_cli_printed_them() {
        let error = HostMessage::Error {
            message_id: Some("m1".into()),
            code: ProtocolErrorCode::AlreadyResolved,
            message: "already answered".into(),
            resolved_by: Some("phone".into()),
        };
        assert_eq!(describe(&error), "already answered [alreadyResolved; answered by phone]");
        let unsupported =
            HostMessage::Unsupported { message_id: None, message_type: "frobnicate".into() };
        assert_eq!(describe(&unsupported), "the host does not support frobnicate");
        assert_eq!(rejection(&HostMessage::Ack { message_id: "m".into(), result: None }), None);
    }

    #[test]
    fn only_losses_are_worth_a_new_connection() {
        let closed = |code| ClientError::Closed { at: "x".into(), code, reason: String::new() };
        assert!(closed(Some(1001)).is_connection_loss());
        assert!(closed(None).is_connection_loss());
        assert!(!closed(Some(4401)).is_connection_loss());
        assert!(!closed(Some(1002)).is_connection_loss());
        assert!(!ClientError::Refused("no".into()).is_connection_loss());
        let timeout =
            ClientError::Timeout { what: "welcome".into(), within: Duration::from_secs(5) };
        assert_eq!(timeout.to_string(), "welcome: nothing within 5 s");
    }
}
