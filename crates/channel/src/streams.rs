//! The host's side of many devices over one relay connection: each relay stream gets its own
//! handshake, then its own transport. Pure state machine: relay frames in, relay frames and
//! events out; the caller does the I/O and owns the device registry.
//!
//! A device's first frame on a stream is a mode byte and the handshake's message 1:
//! [`MODE_PAIR`] (`XXpsk3`, the open pairing secret as PSK) or [`MODE_CONNECT`] (`IK`, a paired
//! device). Every later frame is a Noise message. Anything wrong on a stream closes that stream
//! only.

use std::collections::HashMap;

use crate::relay::{RelayFrame, close_frame, data_frame};
use crate::{
    ChannelError, Handshake, PairingSecret, PublicKey, StaticKeypair, Transport, prologue,
};

/// First byte of a stream that pairs.
pub const MODE_PAIR: u8 = 0x01;
/// First byte of a stream of a paired device reconnecting.
pub const MODE_CONNECT: u8 = 0x02;

/// What the host knows about devices: asked by [`DeviceStreams`] during handshakes.
pub trait DeviceRegistry {
    /// The pairing secret on offer, if a pairing link is open and unexpired.
    fn pairing_secret(&self) -> Option<PairingSecret>;
    /// A device proved `secret`: record it and spend the secret. False if it was spent or
    /// replaced meanwhile (another device finished first): the stream is then closed.
    fn complete_pairing(&mut self, device: &PublicKey, secret: &PairingSecret) -> bool;
    /// Whether this key is a paired, unrevoked device.
    fn is_paired(&self, device: &PublicKey) -> bool;
}

/// What happened on the streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A device paired (and is recorded); its stream is open.
    Paired { stream: u32, device: PublicKey },
    /// A paired device connected.
    Connected { stream: u32, device: PublicKey },
    /// A whole message from a device.
    Message { stream: u32, device: PublicKey, message: Vec<u8> },
    /// A stream ended: the device left, or the host closed it (with why).
    Closed { stream: u32, reason: String },
}

enum Stream {
    /// Opened by the relay; the mode byte and message 1 are awaited.
    New,
    /// Pairing, with the secret it was started with (spent when it finishes).
    Handshaking(Box<Handshake>, PairingSecret),
    Open(Box<Transport>),
}

/// Every device stream of one relay connection.
pub struct DeviceStreams {
    local: StaticKeypair,
    prologue: Vec<u8>,
    streams: HashMap<u32, Stream>,
    max_streams: usize,
}

impl std::fmt::Debug for DeviceStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceStreams")
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

/// Relay frames to send and events, from one step.
#[derive(Debug, Default)]
pub struct Step {
    pub to_relay: Vec<Vec<u8>>,
    pub events: Vec<StreamEvent>,
}

impl DeviceStreams {
    pub fn new(local: StaticKeypair, host_id: &str, max_streams: usize) -> Self {
        Self { local, prologue: prologue(host_id), streams: HashMap::new(), max_streams }
    }

    /// One frame from the relay (after the host authenticated). Only a malformed relay frame is
    /// an error (the relay connection is then suspect); a device's failure closes its stream.
    pub fn on_relay_frame(
        &mut self,
        frame: &[u8],
        devices: &mut impl DeviceRegistry,
    ) -> Result<Step, ChannelError> {
        let mut step = Step::default();
        match RelayFrame::parse(frame)? {
            RelayFrame::Challenge(_) | RelayFrame::Ready => {}
            RelayFrame::Open(stream) => {
                if self.streams.len() >= self.max_streams {
                    step.to_relay.push(close_frame(stream));
                } else {
                    self.streams.insert(stream, Stream::New);
                }
            }
            RelayFrame::Close(stream) => {
                if self.streams.remove(&stream).is_some() {
                    step.events
                        .push(StreamEvent::Closed { stream, reason: "the device left".into() });
                }
            }
            RelayFrame::Data { stream, payload } => {
                if let Err(e) = self.on_data(stream, &payload, devices, &mut step) {
                    self.streams.remove(&stream);
                    step.to_relay.push(close_frame(stream));
                    step.events.push(StreamEvent::Closed { stream, reason: e.to_string() });
                }
            }
        }
        Ok(step)
    }

    fn on_data(
        &mut self,
        stream: u32,
        payload: &[u8],
        devices: &mut impl DeviceRegistry,
        step: &mut Step,
    ) -> Result<(), ChannelError> {
        let state = self
            .streams
            .remove(&stream)
            .ok_or(ChannelError::Malformed("data for an unknown stream"))?;
        let next = match state {
            Stream::New => {
                let (&mode, msg1) =
                    payload.split_first().ok_or(ChannelError::Malformed("empty first frame"))?;
                let (mut hs, secret) = match mode {
                    MODE_PAIR => {
                        let secret = devices.pairing_secret().ok_or(ChannelError::NoPairingOpen)?;
                        (
                            Handshake::pair_responder(&self.local, &secret, &self.prologue)?,
                            Some(secret),
                        )
                    }
                    MODE_CONNECT => {
                        (Handshake::connect_responder(&self.local, &self.prologue)?, None)
                    }
                    _ => return Err(ChannelError::Malformed("unknown stream mode")),
                };
                hs.read_message(msg1)?;
                if mode == MODE_CONNECT {
                    let device = hs.remote_static().ok_or(ChannelError::HandshakeUnfinished)?;
                    if !devices.is_paired(&device) {
                        return Err(ChannelError::UnknownDevice);
                    }
                    hs.accept_remote()?;
                }
                step.to_relay.push(data_frame(stream, &hs.write_message(b"")?));
                match secret {
                    None if hs.is_finished() => {
                        let t = hs.into_transport()?;
                        step.events
                            .push(StreamEvent::Connected { stream, device: t.remote_static() });
                        Stream::Open(Box::new(t))
                    }
                    Some(secret) if !hs.is_finished() => Stream::Handshaking(Box::new(hs), secret),
                    _ => return Err(ChannelError::HandshakeUnfinished),
                }
            }
            Stream::Handshaking(mut hs, secret) => {
                // Only pairing has a third message.
                hs.read_message(payload)?;
                let t = hs.into_transport()?;
                let device = t.remote_static();
                if !devices.complete_pairing(&device, &secret) {
                    return Err(ChannelError::NoPairingOpen);
                }
                step.events.push(StreamEvent::Paired { stream, device });
                Stream::Open(Box::new(t))
            }
            Stream::Open(mut t) => {
                if let Some(message) = t.open(payload)? {
                    step.events.push(StreamEvent::Message {
                        stream,
                        device: t.remote_static(),
                        message,
                    });
                }
                Stream::Open(t)
            }
        };
        self.streams.insert(stream, next);
        Ok(())
    }

    /// Relay frames carrying `message` to the device on `stream`.
    pub fn send(&mut self, stream: u32, message: &[u8]) -> Result<Vec<Vec<u8>>, ChannelError> {
        let Some(Stream::Open(t)) = self.streams.get_mut(&stream) else {
            return Err(ChannelError::Malformed("no open stream with that id"));
        };
        match t.seal(message) {
            Ok(frames) => Ok(frames.iter().map(|f| data_frame(stream, f)).collect()),
            Err(e) => {
                self.streams.remove(&stream);
                Err(e)
            }
        }
    }

    /// Closes every stream of a device (it was revoked): the relay frames to send.
    pub fn drop_device(&mut self, device: &PublicKey) -> Vec<Vec<u8>> {
        let ids: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| matches!(s, Stream::Open(t) if t.remote_static() == *device))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .map(|id| {
                self.streams.remove(&id);
                close_frame(id)
            })
            .collect()
    }

    /// Closes one stream (the host ends that device's connection): the relay frame to send.
    pub fn close(&mut self, stream: u32) -> Vec<u8> {
        self.streams.remove(&stream);
        close_frame(stream)
    }

    /// Open streams (handshakes finished).
    pub fn open_streams(&self) -> usize {
        self.streams.values().filter(|s| matches!(s, Stream::Open(_))).count()
    }
}
