//! The transport after a handshake: strictly ordered frames, and messages split into frames up to
//! a size cap.
//!
//! Each frame is one Noise transport message (at most [`MAX_FRAME`] bytes, 16 of them the tag).
//! Its plaintext is one flag byte — `0` the message's last frame, `1` more frames follow — and a
//! chunk of the message. Noise's nonce is the frame's counter on each side, so a frame that is
//! replayed, dropped or reordered fails authentication; the transport then refuses everything.

use crate::{ChannelError, PublicKey};

/// Largest frame on the wire (Noise's maximum message size).
pub const MAX_FRAME: usize = 65_535;
/// Default cap on one reassembled message (the sync protocol's largest is a catch-up batch).
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

const TAG_LEN: usize = 16;
const MAX_CHUNK: usize = MAX_FRAME - TAG_LEN - 1;
const FINAL: u8 = 0;
const MORE: u8 = 1;

/// An established channel. Every error poisons it: the connection must be closed and a fresh
/// handshake made (then the sync protocol resumes from its seq cursor).
pub struct Transport {
    state: snow::TransportState,
    remote: PublicKey,
    handshake_hash: Vec<u8>,
    max_message: usize,
    partial: Vec<u8>,
    poisoned: bool,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("remote", &self.remote)
            .field("sent", &self.state.sending_nonce())
            .field("received", &self.state.receiving_nonce())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl Transport {
    pub(crate) fn new(
        state: snow::TransportState,
        remote: PublicKey,
        handshake_hash: Vec<u8>,
    ) -> Self {
        Self {
            state,
            remote,
            handshake_hash,
            max_message: DEFAULT_MAX_MESSAGE,
            partial: Vec::new(),
            poisoned: false,
        }
    }

    /// Caps the size of one reassembled message (default [`DEFAULT_MAX_MESSAGE`]).
    pub fn with_max_message(mut self, max: usize) -> Self {
        self.max_message = max;
        self
    }

    /// The remote's static key, as authenticated by the handshake.
    pub fn remote_static(&self) -> PublicKey {
        self.remote
    }

    /// The handshake hash: the same on both sides, unique to this channel.
    pub fn handshake_hash(&self) -> &[u8] {
        &self.handshake_hash
    }

    /// Frames sent so far (the next frame's nonce).
    pub fn frames_sent(&self) -> u64 {
        self.state.sending_nonce()
    }

    /// Seals one message into one or more frames, to send in order.
    pub fn seal(&mut self, message: &[u8]) -> Result<Vec<Vec<u8>>, ChannelError> {
        self.guard(|t| {
            if message.len() > t.max_message {
                return Err(ChannelError::MessageTooLarge { max: t.max_message });
            }
            let mut frames = Vec::with_capacity(message.len() / MAX_CHUNK + 1);
            let mut chunks = message.chunks(MAX_CHUNK).peekable();
            if chunks.peek().is_none() {
                frames.push(t.seal_frame(FINAL, &[])?);
            }
            while let Some(chunk) = chunks.next() {
                let flag = if chunks.peek().is_some() { MORE } else { FINAL };
                frames.push(t.seal_frame(flag, chunk)?);
            }
            Ok(frames)
        })
    }

    /// Opens the next frame; returns the whole message once its last frame arrived.
    pub fn open(&mut self, frame: &[u8]) -> Result<Option<Vec<u8>>, ChannelError> {
        self.guard(|t| {
            if frame.len() > MAX_FRAME {
                return Err(ChannelError::FrameTooLarge { len: frame.len(), max: MAX_FRAME });
            }
            if frame.len() < TAG_LEN + 1 {
                return Err(ChannelError::Malformed("shorter than a tag and a flag"));
            }
            let mut plain = vec![0u8; frame.len()];
            let n = t
                .state
                .read_message(frame, &mut plain)
                .map_err(ChannelError::noise("opening a frame (replayed, reordered or forged)"))?;
            let (flag, chunk) =
                plain[..n].split_first().ok_or(ChannelError::Malformed("empty frame"))?;
            if t.partial.len() + chunk.len() > t.max_message {
                return Err(ChannelError::MessageTooLarge { max: t.max_message });
            }
            t.partial.extend_from_slice(chunk);
            match *flag {
                FINAL => Ok(Some(std::mem::take(&mut t.partial))),
                MORE => Ok(None),
                _ => Err(ChannelError::Malformed("unknown frame flag")),
            }
        })
    }

    fn seal_frame(&mut self, flag: u8, chunk: &[u8]) -> Result<Vec<u8>, ChannelError> {
        let mut plain = Vec::with_capacity(chunk.len() + 1);
        plain.push(flag);
        plain.extend_from_slice(chunk);
        let mut out = vec![0u8; plain.len() + TAG_LEN];
        let n = self
            .state
            .write_message(&plain, &mut out)
            .map_err(ChannelError::noise("sealing a frame"))?;
        out.truncate(n);
        Ok(out)
    }

    fn guard<T>(
        &mut self,
        step: impl FnOnce(&mut Self) -> Result<T, ChannelError>,
    ) -> Result<T, ChannelError> {
        if self.poisoned {
            return Err(ChannelError::Poisoned);
        }
        let result = step(self);
        if result.is_err() {
            self.poisoned = true;
            self.partial = Vec::new();
        }
        result
    }
}
