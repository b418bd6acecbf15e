//! What one channel message carries between a device and the host, inside the Noise transport:
//! a kind byte, then a sync-protocol text (UTF-8 JSON, unchanged), a close with its code
//! (big-endian `u16`) and reason, or an empty ping / pong — what a WebSocket's own opcodes carry
//! on `/ws`. Used by the host (`nucleic-server`) and by Rust devices (`nucleic-client`); the
//! browser's side is `web/src/remote/framing.ts`.

/// A sync-protocol message (UTF-8 JSON).
pub const TEXT: u8 = 0x00;
/// The sender closes the channel: a `u16` code (big-endian), then a UTF-8 reason.
pub const CLOSE: u8 = 0x01;
/// Are you there? Answered with [`PONG`]; no body.
pub const PING: u8 = 0x02;
/// The answer to a [`PING`]; no body.
pub const PONG: u8 = 0x03;

/// The close code of a close message too short to carry one (as WebSocket's 1005).
pub const NO_CODE: u16 = 1005;

/// A decoded channel message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelFrame {
    Text(String),
    Close { code: u16, reason: String },
    Ping,
    Pong,
}

/// Why a channel message is malformed (the receiver then closes the channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("an empty channel message")]
    Empty,
    #[error("a text message that is not UTF-8")]
    NotUtf8,
    #[error("a ping or pong with a body")]
    ControlWithBody,
    #[error("unknown channel message kind {0:#04x}")]
    UnknownKind(u8),
}

/// A text message.
pub fn encode_text(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    out.push(TEXT);
    out.extend_from_slice(text.as_bytes());
    out
}

/// A close message.
pub fn encode_close(code: u16, reason: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(reason.len() + 3);
    out.push(CLOSE);
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(reason.as_bytes());
    out
}

/// One channel message. A close too short for a code has [`NO_CODE`]; its reason is read
/// leniently (a close is honoured whatever its reason holds).
pub fn decode(message: &[u8]) -> Result<ChannelFrame, FrameError> {
    let (&kind, rest) = message.split_first().ok_or(FrameError::Empty)?;
    match kind {
        TEXT => std::str::from_utf8(rest)
            .map(|t| ChannelFrame::Text(t.to_owned()))
            .map_err(|_| FrameError::NotUtf8),
        CLOSE => Ok(match rest {
            [hi, lo, reason @ ..] => ChannelFrame::Close {
                code: u16::from_be_bytes([*hi, *lo]),
                reason: String::from_utf8_lossy(reason).into_owned(),
            },
            _ => ChannelFrame::Close { code: NO_CODE, reason: String::new() },
        }),
        PING | PONG if !rest.is_empty() => Err(FrameError::ControlWithBody),
        PING => Ok(ChannelFrame::Ping),
        PONG => Ok(ChannelFrame::Pong),
        other => Err(FrameError::UnknownKind(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        assert_eq!(encode_text("{}"), b"\0{}");
        assert_eq!(decode(b"\0{\"a\":1}"), Ok(ChannelFrame::Text("{\"a\":1}".into())));
        assert_eq!(decode(&[TEXT, 0xff]), Err(FrameError::NotUtf8));
        assert_eq!(decode(&[PING]), Ok(ChannelFrame::Ping));
        assert_eq!(decode(&[PONG]), Ok(ChannelFrame::Pong));
        let close = encode_close(4401, "revoked");
        assert_eq!(&close[..3], &[CLOSE, 0x11, 0x31]);
        assert_eq!(
            decode(&close),
            Ok(ChannelFrame::Close { code: 4401, reason: "revoked".into() })
        );
        assert_eq!(
            decode(&[CLOSE, 3]),
            Ok(ChannelFrame::Close { code: NO_CODE, reason: "".into() })
        );
        assert_eq!(decode(&[]), Err(FrameError::Empty));
        assert_eq!(decode(&[9]), Err(FrameError::UnknownKind(9)));
        assert_eq!(decode(&[PING, 1]), Err(FrameError::ControlWithBody));
    }
}
