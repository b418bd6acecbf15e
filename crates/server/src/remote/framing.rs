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
}
