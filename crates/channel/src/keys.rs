//! Static X25519 key pairs, public keys and the one-time pairing secret.

use std::fmt;

use crate::{CONNECT_PROTOCOL, ChannelError};

/// Length of an X25519 key and of the pairing secret, in bytes.
pub const KEY_LEN: usize = 32;

/// An X25519 public key (a host's or a device's static key).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; KEY_LEN]);

impl PublicKey {
    /// A public key from its 32 bytes (as carried in a pairing link or the device record).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ChannelError> {
        let key: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| ChannelError::KeyLength { expected: KEY_LEN, got: bytes.len() })?;
        Ok(Self(key))
    }

    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// A static X25519 key pair: the host's identity, or a device's.
#[derive(Clone)]
pub struct StaticKeypair {
    private: [u8; KEY_LEN],
    public: PublicKey,
}

impl StaticKeypair {
    /// A fresh key pair from the OS's random source.
    pub fn generate() -> Result<Self, ChannelError> {
        let params = CONNECT_PROTOCOL.parse().map_err(ChannelError::noise("protocol name"))?;
        let kp = snow::Builder::new(params)
            .generate_keypair()
            .map_err(ChannelError::noise("generating a key pair"))?;
        Self::from_keys(&kp.private, &kp.public)
    }

    /// A key pair from stored bytes (the private half is kept 0600 by the host).
    pub fn from_keys(private: &[u8], public: &[u8]) -> Result<Self, ChannelError> {
        let private: [u8; KEY_LEN] = private
            .try_into()
            .map_err(|_| ChannelError::KeyLength { expected: KEY_LEN, got: private.len() })?;
        Ok(Self { private, public: PublicKey::from_slice(public)? })
    }

    pub fn public(&self) -> PublicKey {
        self.public
    }

    pub(crate) fn private_bytes(&self) -> &[u8; KEY_LEN] {
        &self.private
    }

    /// The private half, for the host to store (never sent anywhere).
    pub fn private_for_storage(&self) -> &[u8; KEY_LEN] {
        &self.private
    }
}

impl fmt::Debug for StaticKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKeypair").field("public", &self.public).finish_non_exhaustive()
    }
}

/// The one-time pairing secret (256 bits) carried by a pairing link: the PSK of the pairing
/// handshake.
#[derive(Clone, PartialEq, Eq)]
pub struct PairingSecret(pub [u8; KEY_LEN]);

impl PairingSecret {
    /// A fresh secret from the OS's random source.
    pub fn generate() -> Result<Self, ChannelError> {
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| ChannelError::Random(e.to_string()))?;
        Ok(Self(key))
    }

    pub fn from_slice(bytes: &[u8]) -> Result<Self, ChannelError> {
        let key: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| ChannelError::KeyLength { expected: KEY_LEN, got: bytes.len() })?;
        Ok(Self(key))
    }
}

impl fmt::Debug for PairingSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PairingSecret(…)")
    }
}
