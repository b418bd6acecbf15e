//! The handshake state machine: pairing (`XXpsk3`) and reconnect (`IK`), either role.

use crate::{
    CONNECT_PROTOCOL, ChannelError, PAIRING_PROTOCOL, PairingSecret, PublicKey, StaticKeypair,
    Transport,
};

/// Which handshake this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeKind {
    /// `XXpsk3` with the one-time pairing secret.
    Pairing,
    /// `IK`: a paired device that knows the host's static key.
    Connect,
}

/// Which side of the handshake. The device initiates; the host responds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Initiator,
    Responder,
}

/// Largest handshake message (a Noise message is at most 65,535 bytes).
const MAX_NOISE_MESSAGE: usize = 65_535;

/// One handshake in progress. Every error poisons it: the connection must be closed.
pub struct Handshake {
    state: snow::HandshakeState,
    kind: HandshakeKind,
    /// The remote static key this side insists on (the host's key from the link or the device's
    /// record), checked as soon as the remote's key arrives.
    expected_remote: Option<PublicKey>,
    /// A responder in `IK` learns the device's key from message 1 and must accept it (it is a
    /// paired, unrevoked device) before answering.
    remote_accepted: bool,
    poisoned: bool,
}

impl std::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handshake")
            .field("kind", &self.kind)
            .field("initiator", &self.state.is_initiator())
            .field("finished", &self.state.is_handshake_finished())
            .finish_non_exhaustive()
    }
}

impl Handshake {
    /// The device's side of pairing: it knows the host's static key and the secret from the
    /// link; the handshake fails if the host proves another key.
    pub fn pair_initiator(
        local: &StaticKeypair,
        secret: &PairingSecret,
        host_key: &PublicKey,
        prologue: &[u8],
    ) -> Result<Self, ChannelError> {
        Self::build(
            HandshakeKind::Pairing,
            Role::Initiator,
            local,
            Some(secret),
            Some(host_key),
            prologue,
            None,
        )
    }

    /// The host's side of pairing. The device's key it learns ([`Handshake::remote_static`]) is
    /// the one to record once the handshake finished (the secret proved the device holds the
    /// link).
    pub fn pair_responder(
        local: &StaticKeypair,
        secret: &PairingSecret,
        prologue: &[u8],
    ) -> Result<Self, ChannelError> {
        Self::build(
            HandshakeKind::Pairing,
            Role::Responder,
            local,
            Some(secret),
            None,
            prologue,
            None,
        )
    }

    /// A paired device reconnecting: it knows the host's static key.
    pub fn connect_initiator(
        local: &StaticKeypair,
        host_key: &PublicKey,
        prologue: &[u8],
    ) -> Result<Self, ChannelError> {
        Self::build(
            HandshakeKind::Connect,
            Role::Initiator,
            local,
            None,
            Some(host_key),
            prologue,
            None,
        )
    }

    /// The host answering a reconnect: after reading message 1 it must look the device's key
    /// ([`Handshake::remote_static`]) up and call [`Handshake::accept_remote`] before answering.
    pub fn connect_responder(local: &StaticKeypair, prologue: &[u8]) -> Result<Self, ChannelError> {
        Self::build(HandshakeKind::Connect, Role::Responder, local, None, None, prologue, None)
    }

    /// The same handshakes with a fixed ephemeral key, for the published test vectors only
    /// (`docs/channel.md`, "Test vectors"). Never for a connection: a reused ephemeral key
    /// gives up forward secrecy and makes every handshake of that side the same.
    #[doc(hidden)]
    pub fn for_test_vectors_only(
        kind: HandshakeKind,
        role: Role,
        local: &StaticKeypair,
        secret: Option<&PairingSecret>,
        expected_remote: Option<&PublicKey>,
        prologue: &[u8],
        ephemeral: &[u8; crate::KEY_LEN],
    ) -> Result<Self, ChannelError> {
        Self::build(kind, role, local, secret, expected_remote, prologue, Some(ephemeral))
    }

    fn build(
        kind: HandshakeKind,
        role: Role,
        local: &StaticKeypair,
        secret: Option<&PairingSecret>,
        expected_remote: Option<&PublicKey>,
        prologue: &[u8],
        ephemeral: Option<&[u8; crate::KEY_LEN]>,
    ) -> Result<Self, ChannelError> {
        let name = match kind {
            HandshakeKind::Pairing => PAIRING_PROTOCOL,
            HandshakeKind::Connect => CONNECT_PROTOCOL,
        };
        let params = name.parse().map_err(ChannelError::noise("protocol name"))?;
        let mut builder = snow::Builder::new(params)
            .local_private_key(local.private_bytes())
            .map_err(ChannelError::noise("local key"))?
            .prologue(prologue)
            .map_err(ChannelError::noise("prologue"))?;
        if let Some(e) = ephemeral {
            builder = builder.fixed_ephemeral_key_for_testing_only(e);
        }
        if let Some(secret) = secret {
            builder = builder.psk(3, &secret.0).map_err(ChannelError::noise("pre-shared key"))?;
        }
        // Only IK's initiator sends to a known static key; XX learns it (and checks it below).
        if let (HandshakeKind::Connect, Role::Initiator, Some(remote)) =
            (kind, role, expected_remote)
        {
            builder = builder
                .remote_public_key(remote.as_bytes())
                .map_err(ChannelError::noise("remote key"))?;
        }
        let state = match role {
            Role::Initiator => builder.build_initiator(),
            Role::Responder => builder.build_responder(),
        }
        .map_err(ChannelError::noise("building the handshake"))?;
        Ok(Self {
            state,
            kind,
            expected_remote: expected_remote.copied(),
            // Only IK's responder has to vouch for a key it did not expect.
            remote_accepted: !(kind == HandshakeKind::Connect && role == Role::Responder),
            poisoned: false,
        })
    }

    pub fn kind(&self) -> HandshakeKind {
        self.kind
    }

    pub fn is_my_turn(&self) -> bool {
        !self.poisoned && !self.state.is_handshake_finished() && self.state.is_my_turn()
    }

    pub fn is_finished(&self) -> bool {
        !self.poisoned && self.state.is_handshake_finished()
    }

    /// The remote's static key, once a handshake message carried it.
    pub fn remote_static(&self) -> Option<PublicKey> {
        self.state.get_remote_static().and_then(|k| PublicKey::from_slice(k).ok())
    }

    /// The host vouches for the device's key (it is paired and not revoked).
    pub fn accept_remote(&mut self) -> Result<(), ChannelError> {
        if self.poisoned {
            return Err(ChannelError::Poisoned);
        }
        if self.remote_static().is_none() {
            return Err(ChannelError::RemoteNotAccepted);
        }
        self.remote_accepted = true;
        Ok(())
    }

    /// Writes the next handshake message carrying `payload` (encrypted once keys exist).
    pub fn write_message(&mut self, payload: &[u8]) -> Result<Vec<u8>, ChannelError> {
        self.guard(|hs| {
            if !hs.state.is_my_turn() || hs.state.is_handshake_finished() {
                return Err(ChannelError::NotMyTurn);
            }
            if !hs.remote_accepted {
                return Err(ChannelError::RemoteNotAccepted);
            }
            let mut out = vec![0u8; MAX_NOISE_MESSAGE];
            let n = hs
                .state
                .write_message(payload, &mut out)
                .map_err(ChannelError::noise("writing a handshake message"))?;
            out.truncate(n);
            Ok(out)
        })
    }

    /// Reads the remote's next handshake message and returns its payload.
    pub fn read_message(&mut self, message: &[u8]) -> Result<Vec<u8>, ChannelError> {
        self.guard(|hs| {
            if hs.state.is_my_turn() || hs.state.is_handshake_finished() {
                return Err(ChannelError::NotMyTurn);
            }
            if message.len() > MAX_NOISE_MESSAGE {
                return Err(ChannelError::FrameTooLarge {
                    len: message.len(),
                    max: MAX_NOISE_MESSAGE,
                });
            }
            let mut out = vec![0u8; message.len()];
            let n = hs
                .state
                .read_message(message, &mut out)
                .map_err(ChannelError::noise("reading a handshake message"))?;
            out.truncate(n);
            if let (Some(expected), Some(got)) = (hs.expected_remote, hs.remote_static())
                && expected != got
            {
                return Err(ChannelError::HostKeyMismatch);
            }
            Ok(out)
        })
    }

    /// The finished handshake's transport, with the default message cap.
    pub fn into_transport(self) -> Result<Transport, ChannelError> {
        if self.poisoned {
            return Err(ChannelError::Poisoned);
        }
        if !self.state.is_handshake_finished() {
            return Err(ChannelError::HandshakeUnfinished);
        }
        let remote = self.remote_static().ok_or(ChannelError::HandshakeUnfinished)?;
        let handshake_hash = self.state.get_handshake_hash().to_vec();
        let state = self
            .state
            .into_transport_mode()
            .map_err(ChannelError::noise("entering transport mode"))?;
        Ok(Transport::new(state, remote, handshake_hash))
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
        }
        result
    }
}
