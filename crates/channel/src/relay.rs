//! The host's side of the relay's wire format (`relay/src/wire.ts`): proving it owns its room,
//! and the frames that carry each device's stream. No I/O.
//!
//! A room is the lowercase hex SHA-256 of the host's relay key (ECDSA P-256, SPKI DER). That key
//! only proves the room to the relay; the devices' channel is authenticated by the Noise static
//! key, so a leaked relay key lets someone squat the room (deny service), never read or forge.

use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use sha2::{Digest, Sha256};

use crate::ChannelError;

const CHALLENGE: u8 = 0x01;
const AUTH: u8 = 0x02;
const READY: u8 = 0x03;
const DATA: u8 = 0x10;
const OPEN: u8 = 0x11;
const CLOSE: u8 = 0x12;
const NONCE_LEN: usize = 32;
const HEADER_LEN: usize = 5;
/// DER of SubjectPublicKeyInfo { id-ecPublicKey, prime256v1 } up to the 65-byte point.
const SPKI_P256_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The host's relay key: proves to the relay that this host owns its room.
#[derive(Clone)]
pub struct RelayKey(SigningKey);

impl std::fmt::Debug for RelayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RelayKey").field(&self.room()).finish()
    }
}

impl RelayKey {
    /// A fresh key from the OS's random source.
    pub fn generate() -> Result<Self, ChannelError> {
        loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| ChannelError::Random(e.to_string()))?;
            if let Ok(key) = Self::from_bytes(&bytes) {
                return Ok(key);
            }
        }
    }

    /// A key from its stored 32-byte scalar.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, ChannelError> {
        SigningKey::from_bytes(bytes.into())
            .map(Self)
            .map_err(|_| ChannelError::Malformed("not a P-256 private key"))
    }

    /// The 32-byte scalar, for the host to store (0600).
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes().into()
    }

    /// The public key as SPKI DER (what the relay hashes into the room id): the fixed
    /// `id-ecPublicKey, prime256v1` header and the uncompressed point, as WebCrypto exports it.
    pub fn spki_der(&self) -> Vec<u8> {
        let point = self.0.verifying_key().to_encoded_point(false);
        let mut out = SPKI_P256_PREFIX.to_vec();
        out.extend_from_slice(point.as_bytes());
        out
    }

    /// The room id: lowercase hex SHA-256 of the SPKI DER.
    pub fn room(&self) -> String {
        Sha256::digest(self.spki_der()).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The answer to the relay's CHALLENGE frame: AUTH with the key and a signature over
    /// `nucleic-relay-host/1\n<room>\n<hex nonce>`.
    pub fn answer(&self, challenge: &[u8; NONCE_LEN]) -> Vec<u8> {
        let room = self.room();
        let nonce: String = challenge.iter().map(|b| format!("{b:02x}")).collect();
        let signature: Signature =
            self.0.sign(format!("nucleic-relay-host/1\n{room}\n{nonce}").as_bytes());
        let spki = self.spki_der();
        let mut out = Vec::with_capacity(3 + spki.len() + 64);
        out.push(AUTH);
        out.extend_from_slice(&(spki.len() as u16).to_be_bytes());
        out.extend_from_slice(&spki);
        out.extend_from_slice(&signature.to_bytes());
        out
    }
}

/// What the relay sends the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayFrame {
    /// Prove the room: answer with [`RelayKey::answer`].
    Challenge([u8; NONCE_LEN]),
    /// The relay accepted the answer: devices can now connect.
    Ready,
    /// A device connected as this stream.
    Open(u32),
    /// A frame from a device (a Noise message).
    Data { stream: u32, payload: Vec<u8> },
    /// A device left (or the host's frame named a stream that is gone).
    Close(u32),
}

impl RelayFrame {
    /// Parses a frame from the relay.
    pub fn parse(bytes: &[u8]) -> Result<Self, ChannelError> {
        let (&kind, rest) =
            bytes.split_first().ok_or(ChannelError::Malformed("empty relay frame"))?;
        let stream = || -> Result<u32, ChannelError> {
            let id: [u8; 4] = rest
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or(ChannelError::Malformed("relay frame without a stream id"))?;
            Ok(u32::from_be_bytes(id))
        };
        match kind {
            CHALLENGE => rest
                .try_into()
                .map(Self::Challenge)
                .map_err(|_| ChannelError::Malformed("challenge of the wrong length")),
            READY if rest.is_empty() => Ok(Self::Ready),
            OPEN if rest.len() == 4 => Ok(Self::Open(stream()?)),
            CLOSE if rest.len() == 4 => Ok(Self::Close(stream()?)),
            DATA => Ok(Self::Data { stream: stream()?, payload: rest[4..].to_vec() }),
            _ => Err(ChannelError::Malformed("unknown relay frame")),
        }
    }
}

/// A frame for one device's stream.
pub fn data_frame(stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.push(DATA);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Asks the relay to disconnect a device (failed handshake, revoked device).
pub fn close_frame(stream: u32) -> Vec<u8> {
    let mut out = vec![CLOSE];
    out.extend_from_slice(&stream.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_garbage_is_refused() {
        assert_eq!(RelayFrame::parse(&[READY]).unwrap(), RelayFrame::Ready);
        let mut challenge = vec![CHALLENGE];
        challenge.extend_from_slice(&[9; 32]);
        assert_eq!(RelayFrame::parse(&challenge).unwrap(), RelayFrame::Challenge([9; 32]));
        let d = data_frame(7, b"noise");
        assert_eq!(
            RelayFrame::parse(&d).unwrap(),
            RelayFrame::Data { stream: 7, payload: b"noise".to_vec() }
        );
        let mut close = close_frame(7);
        assert_eq!(RelayFrame::parse(&close).unwrap(), RelayFrame::Close(7));
        close.push(0);
        assert!(RelayFrame::parse(&close).is_err());
        assert!(RelayFrame::parse(&[]).is_err());
        assert!(RelayFrame::parse(&[0xff]).is_err());
        assert!(RelayFrame::parse(&[CHALLENGE, 1, 2]).is_err());
        assert!(RelayFrame::parse(&[DATA, 0, 0]).is_err());
    }

    #[test]
    fn the_answer_matches_the_committed_fixture_the_relay_verifies() {
        // relay/test/wire.test.ts verifies this same fixture with the relay's own check.
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../testdata/relay-auth.json")).unwrap();
        let key = RelayKey::from_bytes(&[7; 32]).unwrap();
        let answer = key.answer(&[1; 32]);
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        if std::env::var_os("NUCLEIC_UPDATE_FIXTURES").is_some() {
            let doc = serde_json::json!({
                "about": "RelayKey::from_bytes(&[7; 32]).answer(&[1; 32]) (RFC 6979 signatures are deterministic)",
                "room": key.room(),
                "nonce": hex(&[1; 32]),
                "auth": hex(&answer),
            });
            std::fs::write(
                concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/relay-auth.json"),
                serde_json::to_string_pretty(&doc).unwrap() + "\n",
            )
            .unwrap();
            return;
        }
        assert_eq!(fixture["room"], key.room());
        assert_eq!(fixture["auth"], hex(&answer));
        assert_eq!(key.room().len(), 64);
        assert_eq!(RelayKey::from_bytes(&key.to_bytes()).unwrap().room(), key.room());
    }
}
