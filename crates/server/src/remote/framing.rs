//! What one Noise message carries between a device and the host: a sync-protocol text frame,
//! a close with its code and reason, or a ping / pong — the few things a WebSocket's own
//! opcodes carry on `/ws`. The protocol's JSON inside is unchanged. The browser's side is
//! `web/src/remote/framing.ts`.

use crate::wire::{InFrame, OutFrame};

const TEXT: u8 = 0x00;
const CLOSE: u8 = 0x01;
const PING: u8 = 0x02;
const PONG: u8 = 0x03;

/// A channel message to the device.
pub fn encode(frame: &OutFrame) -> Vec<u8> {
    match frame {
        OutFrame::Text(text) => {
            let mut out = Vec::with_capacity(text.len() + 1);
            out.push(TEXT);
            out.extend_from_slice(text.as_bytes());
            out
        }
        OutFrame::Ping => vec![PING],
        OutFrame::Close { code, reason } => {
            let mut out = vec![CLOSE];
            out.extend_from_slice(&code.to_be_bytes());
            out.extend_from_slice(reason.as_bytes());
            out
        }
    }
}

/// A channel message from the device; `None` when it is malformed (the stream is then closed).
pub fn decode(message: &[u8]) -> Option<InFrame> {
    let (&kind, rest) = message.split_first()?;
    match kind {
        TEXT => match std::str::from_utf8(rest) {
            Ok(text) => Some(InFrame::Text(text.to_owned())),
            Err(_) => Some(InFrame::Binary),
        },
        CLOSE => Some(InFrame::Close),
        PING | PONG if rest.is_empty() => Some(InFrame::Alive),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_garbage_is_refused() {
        assert_eq!(encode(&OutFrame::Text("{}".into())), b"\0{}");
        assert!(matches!(decode(b"\0{\"a\":1}"), Some(InFrame::Text(t)) if t == "{\"a\":1}"));
        assert!(matches!(decode(&[TEXT, 0xff]), Some(InFrame::Binary)));
        assert!(matches!(decode(&[PONG]), Some(InFrame::Alive)));
        assert!(matches!(decode(&[CLOSE, 3, 232]), Some(InFrame::Close)));
        let close = encode(&OutFrame::Close { code: 4401, reason: "revoked".into() });
        assert_eq!(&close[..3], &[CLOSE, 0x11, 0x31]);
        assert!(decode(&[]).is_none());
        assert!(decode(&[9]).is_none());
        assert!(decode(&[PING, 1]).is_none());
    }

    /// The messages of the published vectors (`docs/channel-vectors.json`, `docs/channel.md`).
    #[test]
    fn the_published_vectors_messages_encode_and_decode() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../../docs/channel-vectors.json")).unwrap();
        let unhex = |s: &serde_json::Value| -> Vec<u8> {
            let s = s.as_str().unwrap();
            (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
        };
        let frames = &v["pairing"]["frames"];
        let hello = unhex(&frames[0]["message"]);
        let text = std::str::from_utf8(&hello[1..]).unwrap().to_owned();
        assert_eq!(encode(&OutFrame::Text(text.clone())), hello);
        assert!(matches!(decode(&hello), Some(InFrame::Text(t)) if t == text));
        assert_eq!(encode(&OutFrame::Ping), unhex(&frames[1]["message"]));
        assert!(matches!(decode(&unhex(&frames[2]["message"])), Some(InFrame::Alive)));
        let close = OutFrame::Close { code: 4401, reason: "device revoked: pair again".into() };
        assert_eq!(encode(&close), unhex(&frames[3]["message"]));
        let listed = unhex(&v["reconnect"]["frames"][0]["message"]);
        assert!(matches!(decode(&listed), Some(InFrame::Text(t)) if t.contains("listProjects")));
    }
}
