//! The connection's frames inside a channel message (`nucleic_channel::framing`, shared with
//! Rust devices): a sync-protocol text, a close, a ping / pong — what a WebSocket's own opcodes
//! carry on `/ws`. The browser's side is `web/src/remote/framing.ts`.

use nucleic_channel::framing::{self, ChannelFrame, FrameError, PING};

use crate::wire::{InFrame, OutFrame};

/// A channel message to the device.
pub fn encode(frame: &OutFrame) -> Vec<u8> {
    match frame {
        OutFrame::Text(text) => framing::encode_text(text),
        OutFrame::Ping => vec![PING],
        OutFrame::Close { code, reason } => framing::encode_close(*code, reason),
    }
}

/// A channel message from the device; `None` when it is malformed (the stream is then closed).
pub fn decode(message: &[u8]) -> Option<InFrame> {
    match framing::decode(message) {
        Ok(ChannelFrame::Text(text)) => Some(InFrame::Text(text)),
        Err(FrameError::NotUtf8) => Some(InFrame::Binary),
        Ok(ChannelFrame::Close { .. }) => Some(InFrame::Close),
        Ok(ChannelFrame::Ping | ChannelFrame::Pong) => Some(InFrame::Alive),
        Err(FrameError::Empty | FrameError::ControlWithBody | FrameError::UnknownKind(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_channel::framing::{CLOSE, PONG, TEXT};

    #[test]
    fn frames_map_to_the_connection_and_garbage_is_refused() {
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
