//! Nucleic's end-to-end encrypted channel between a device (a phone's browser) and the host.
//!
//! Two Noise handshakes, both `25519_ChaChaPoly_SHA256`, device = initiator, host = responder:
//!
//! - **Pairing** ([`PAIRING_PROTOCOL`], `XXpsk3`): the device got the host's static key and a
//!   one-time pairing secret from the pairing link; the secret is the pre-shared key, so only the
//!   holder of the link can finish the handshake, and both static keys are exchanged encrypted.
//! - **Reconnect** ([`CONNECT_PROTOCOL`], `IK`): a paired device already knows the host's static
//!   key; one round trip, and the host learns (and must accept) the device's key from message 1.
//!
//! After the handshake, [`Transport`] seals and opens frames with Noise's counter nonces: a frame
//! replayed, dropped or reordered by anyone in between fails to open, and the transport then
//! refuses everything (the connection must be closed and a fresh handshake made). Messages larger
//! than one Noise frame are split into frames and reassembled up to a size cap.
//!
//! [`relay`] is the host's side of the relay's wire format (`relay/`): proving the room with the
//! host's relay key and the frames that carry each device's stream.
//!
//! This crate does no I/O: it turns bytes into bytes. The browser's side is
//! `web/src/channel/` (TypeScript on `@noble/*`), checked against the same test vectors and
//! against this crate both ways (`tests/channel/interop.rs`).
//!
//! Built on `snow` (X25519, ChaChaPoly, SHA-256):
//!
//! - `handshake`: [`Handshake`]: pairing `Noise_XXpsk3` with the one-time pairing secret as PSK,
//!   reconnect `Noise_IK`; the device initiates; an IK responder must `accept_remote` the device
//!   key before answering.
//! - `transport`: [`Transport`]: strict counter nonces (a replayed, reordered or forged frame fails
//!   and poisons the channel); messages split into ≤ 65,535-byte frames ([`MAX_FRAME`]) and
//!   reassembled under a cap.
//! - `keys`: [`StaticKeypair`], [`PublicKey`], [`PairingSecret`].
//! - [`relay`]: the host's relay key answering the relay's challenge, the relay's frame codec.
//! - [`streams`]: [`streams::DeviceStreams`], the host's demultiplexer of device streams over one
//!   relay connection: a mode byte picks pairing or reconnect, a [`streams::DeviceRegistry`]
//!   supplies the open pairing secret and the paired keys, a failing stream closes alone,
//!   revocation drops a device's streams.
//! - [`framing`]: what one channel message carries (text, close, ping, pong).
//! - [`link`]: [`link::PairingLink`], the pairing link, written and read.
//! - `error`: [`ChannelError`].
//!
//! The wire, byte for byte with test vectors, is specified in `docs/channel.md`; the reasons are in
//! `docs/security.md`, "Remote access".

mod error;
pub mod framing;
mod handshake;
mod keys;
pub mod link;
pub mod relay;
pub mod streams;
mod transport;

pub use error::ChannelError;
pub use handshake::{Handshake, HandshakeKind, Role};
pub use keys::{KEY_LEN, PairingSecret, PublicKey, StaticKeypair};
pub use transport::{DEFAULT_MAX_MESSAGE, MAX_FRAME, Transport};

/// Noise protocol of the pairing handshake (device = initiator, the pairing secret as PSK).
pub const PAIRING_PROTOCOL: &str = "Noise_XXpsk3_25519_ChaChaPoly_SHA256";
/// Noise protocol of every later connection of a paired device (device = initiator).
pub const CONNECT_PROTOCOL: &str = "Noise_IK_25519_ChaChaPoly_SHA256";

/// The prologue both sides mix into every handshake: the channel's version and the host's id, so
/// a handshake meant for one host (or one version) cannot complete with another.
pub fn prologue(host_id: &str) -> Vec<u8> {
    let mut p = b"nucleic-channel/1\n".to_vec();
    p.extend_from_slice(host_id.as_bytes());
    p
}
