//! The host's remote identity, kept 0600 in `$NUCLEIC_HOME/remote-identity.json`: its Noise
//! static key (what devices authenticate it by) and its relay key (what proves its room to the
//! relay; the room's id is also the host id). Created on first use.

use std::path::Path;

use nucleic_channel::StaticKeypair;
use nucleic_channel::relay::RelayKey;
use serde::{Deserialize, Serialize};

/// The identity file's name inside `$NUCLEIC_HOME`.
pub const IDENTITY_FILE: &str = "remote-identity.json";

/// The host's keys for remote access.
#[derive(Debug, Clone)]
pub struct Identity {
    pub noise: StaticKeypair,
    pub relay: RelayKey,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(rename = "noisePrivate")]
    noise_private: String,
    #[serde(rename = "noisePublic")]
    noise_public: String,
    #[serde(rename = "relayKey")]
    relay_key: String,
}

/// Why the identity could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot read or write {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(
        "{path} is damaged ({why}); move it aside to make a new identity (paired devices must then pair again)"
    )]
    Damaged { path: String, why: String },
    #[error("cannot make keys: {0}")]
    Keys(#[from] nucleic_channel::ChannelError),
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

impl Identity {
    /// The host id: its room at the relay (hex SHA-256 of the relay key), bound into every
    /// handshake's prologue.
    pub fn host_id(&self) -> String {
        self.relay.room()
    }

    /// Reads the identity of `home`, making and storing one (0600) the first time.
    pub fn load_or_create(home: &Path) -> Result<Identity, IdentityError> {
        let path = home.join(IDENTITY_FILE);
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let damaged =
                    |why: &str| IdentityError::Damaged { path: shown.clone(), why: why.into() };
                let stored: Stored =
                    serde_json::from_str(&text).map_err(|e| damaged(&e.to_string()))?;
                let private =
                    unhex(&stored.noise_private).ok_or_else(|| damaged("noisePrivate"))?;
                let public = unhex(&stored.noise_public).ok_or_else(|| damaged("noisePublic"))?;
                let relay: [u8; 32] = unhex(&stored.relay_key)
                    .and_then(|k| k.try_into().ok())
                    .ok_or_else(|| damaged("relayKey"))?;
                Ok(Identity {
                    noise: StaticKeypair::from_keys(&private, &public)
                        .map_err(|e| damaged(&e.to_string()))?,
                    relay: RelayKey::from_bytes(&relay).map_err(|e| damaged(&e.to_string()))?,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let identity =
                    Identity { noise: StaticKeypair::generate()?, relay: RelayKey::generate()? };
                let stored = Stored {
                    noise_private: hex(identity.noise.private_for_storage()),
                    noise_public: hex(identity.noise.public().as_bytes()),
                    relay_key: hex(&identity.relay.to_bytes()),
                };
                let text = serde_json::to_string_pretty(&stored).unwrap_or_default();
                nucleic_host::write_private_file(&path, text.as_bytes())
                    .map_err(|source| IdentityError::Io { path: shown, source })?;
                Ok(identity)
            }
            Err(source) => Err(IdentityError::Io { path: shown, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_identity_is_made_once_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = Identity::load_or_create(dir.path()).unwrap();
        let b = Identity::load_or_create(dir.path()).unwrap();
        assert_eq!(a.noise.public(), b.noise.public());
        assert_eq!(a.host_id(), b.host_id());
        let mode = std::fs::metadata(dir.path().join(IDENTITY_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join(IDENTITY_FILE), "{").unwrap();
        assert!(matches!(Identity::load_or_create(dir.path()), Err(IdentityError::Damaged { .. })));
    }
}
