//! Parsing a text frame into a `ClientMessage` (or the reply saying why not). Answering it is
//! the host's (`nucleic_host::api`: the call behind each message, idempotent replies), so an
//! in-process front end gets the same answers.

use nucleic_protocol::{ClientMessage, HostMessage, ProtocolErrorCode};
use serde_json::Value;

pub use nucleic_host::api::{Client, Principal, error};

/// Parses a text frame: `Ok(message)`, or the reply explaining why not.
pub fn parse(text: &str) -> Result<ClientMessage, Box<HostMessage>> {
    if text.len() > nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES {
        return Err(Box::new(error(
            None,
            ProtocolErrorCode::TooLarge,
            format!(
                "message of {} bytes is over the {}-byte limit",
                text.len(),
                nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES
            ),
        )));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Box::new(error(None, ProtocolErrorCode::BadMessage, format!("not JSON: {e}")))
    })?;
    let message_id = value.get("messageID").and_then(Value::as_str).map(str::to_owned);
    let Some(kind) = value.get("type").and_then(Value::as_str).map(str::to_owned) else {
        return Err(Box::new(error(
            message_id,
            ProtocolErrorCode::BadMessage,
            "a message needs a string \"type\"",
        )));
    };
    if !nucleic_protocol::CLIENT_MESSAGE_TYPES.contains(&kind.as_str()) {
        return Err(Box::new(HostMessage::Unsupported { message_id, message_type: kind }));
    }
    serde_json::from_value(value).map_err(|e| {
        Box::new(error(message_id, ProtocolErrorCode::BadMessage, format!("malformed {kind}: {e}")))
    })
}
