//! The channel's errors: each one ends the handshake or the transport for good.

/// What went wrong in a handshake or on the transport. After any of these the handshake or
/// transport refuses further use; the connection must be closed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ChannelError {
    #[error("noise: {context}: {source}")]
    Noise { context: &'static str, source: snow::Error },
    #[error("a key must be {expected} bytes, got {got}")]
    KeyLength { expected: usize, got: usize },
    #[error("the host's static key is not the one in the pairing link")]
    HostKeyMismatch,
    #[error("the remote's static key was not accepted before answering (call accept_remote)")]
    RemoteNotAccepted,
    #[error("it is not this side's turn in the handshake")]
    NotMyTurn,
    #[error("the handshake is not finished")]
    HandshakeUnfinished,
    #[error("frame of {len} bytes is over the {max}-byte cap")]
    FrameTooLarge { len: usize, max: usize },
    #[error("message of more than {max} bytes refused")]
    MessageTooLarge { max: usize },
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    #[error("the OS's random source failed: {0}")]
    Random(String),
    #[error("no pairing is open (the link expired or was used)")]
    NoPairingOpen,
    #[error("this device is not paired, or was revoked")]
    UnknownDevice,
    #[error("the channel failed earlier and refuses further use")]
    Poisoned,
}

impl ChannelError {
    pub(crate) fn noise(context: &'static str) -> impl FnOnce(snow::Error) -> Self {
        move |source| Self::Noise { context, source }
    }
}
