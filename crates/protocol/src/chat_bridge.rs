//! Chat bridges as the host knows them: each bridge (`nucleic chat`) reports itself — its state
//! and the chat users paired with it — and the person sees and unpairs those users from any
//! client. A chat user's connection (`hello.onBehalfOf`) is accepted only while a bridge lists
//! them as paired and they were not unpaired since.

use serde::{Deserialize, Serialize};

/// Longest bridge id, person or chat id a report may carry.
pub const MAX_CHAT_ID: usize = 200;
/// Most paired users one report may list.
pub const MAX_CHAT_PEOPLE: usize = 1000;

/// How a bridge is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ChatBridgeState {
    /// Polling the chat service and delivering.
    Running,
    /// The chat service failed lately; the bridge is retrying.
    Retrying,
    /// The chat service refused the bridge's credential (a revoked bot token): it waits for
    /// a new one and polls nothing.
    Refused,
}

/// A chat user paired with a bridge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChatPerson {
    /// Who they act as (`telegram:42`, `matrix:@alice:example.org`): `hello.onBehalfOf`.
    pub person: String,
    /// The chat they paired from.
    pub chat: String,
    /// When they paired, in Unix milliseconds.
    #[serde(rename = "pairedAt")]
    pub paired_at: i64,
}

/// `reportChatBridge`: what a bridge says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChatBridgeReport {
    /// The bridge (`telegram:<bot id>`, `matrix:@bot:example.org`).
    pub bridge: String,
    pub state: ChatBridgeState,
    /// The last failure, in words (never a token).
    #[serde(rename = "lastError", default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Every user paired with it now.
    pub paired: Vec<ChatPerson>,
    /// Messages from people who are not paired, ignored so far.
    #[serde(rename = "strangersIgnored", default)]
    pub strangers_ignored: u64,
    /// Messages to chats not sent yet.
    #[serde(rename = "outboxQueued", default)]
    pub outbox_queued: u64,
}

/// A bridge as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChatBridgeSummary {
    pub bridge: String,
    pub state: ChatBridgeState,
    #[serde(rename = "lastError", default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Its paired users, less those the person unpaired.
    pub paired: Vec<ChatPerson>,
    #[serde(rename = "strangersIgnored")]
    pub strangers_ignored: u64,
    #[serde(rename = "outboxQueued")]
    pub outbox_queued: u64,
    /// When it last reported, in Unix milliseconds.
    #[serde(rename = "reportedAt")]
    pub reported_at: i64,
    /// Whether it has been silent for longer than it reports (it stopped, or lost the host).
    pub silent: bool,
}

/// `listChatBridges`' and `unpairChatPerson`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChatBridges {
    pub bridges: Vec<ChatBridgeSummary>,
}

/// `reportChatBridge`'s result: the users of the report the person unpaired, for the bridge to
/// drop (and tell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ChatBridgeReported {
    pub unpaired: Vec<String>,
}

impl ChatBridgeReport {
    /// Why the report is refused (ids empty, too long, or with control characters; too many
    /// users), or `None`.
    pub fn refused(&self) -> Option<String> {
        let bad =
            |s: &str| s.is_empty() || s.len() > MAX_CHAT_ID || s.chars().any(char::is_control);
        if bad(&self.bridge) {
            return Some(format!(
                "a chat bridge's id is 1 to {MAX_CHAT_ID} bytes without control characters"
            ));
        }
        if self.paired.len() > MAX_CHAT_PEOPLE {
            return Some(format!("a report lists at most {MAX_CHAT_PEOPLE} paired users"));
        }
        if let Some(p) = self.paired.iter().find(|p| bad(&p.person) || bad(&p.chat)) {
            return Some(format!(
                "paired user {:?}: a person and a chat are 1 to {MAX_CHAT_ID} bytes without control characters",
                p.person.chars().take(40).collect::<String>()
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> ChatBridgeReport {
        ChatBridgeReport {
            bridge: "telegram:1".into(),
            state: ChatBridgeState::Running,
            last_error: None,
            paired: vec![ChatPerson {
                person: "telegram:42".into(),
                chat: "42".into(),
                paired_at: 1,
            }],
            strangers_ignored: 0,
            outbox_queued: 0,
        }
    }

    #[test]
    fn reports_with_bad_ids_or_too_many_people_are_refused() {
        assert_eq!(report().refused(), None);
        let mut r = report();
        r.bridge = String::new();
        assert!(r.refused().is_some());
        let mut r = report();
        r.paired[0].person = "telegram:\u{1b}[2J".into();
        assert!(r.refused().unwrap().contains("paired user"));
        let mut r = report();
        r.paired = vec![r.paired[0].clone(); MAX_CHAT_PEOPLE + 1];
        assert!(r.refused().unwrap().contains("at most"));
    }
}
