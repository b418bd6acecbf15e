//! Who may act on the host: its token (file 0600 in `$NUCLEIC_HOME`, for the CLI and scripts on
//! this machine) and its devices (browsers and, later, phones, each proving a key pair of its
//! own). Revoking a device or rotating the token is announced so open connections close at once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use nucleic_catalog::{DeviceRow, NewDevice};
use nucleic_protocol::DeviceSummary;
use tokio::sync::broadcast;

use crate::clock::unix_millis;
use crate::context::Context;
use crate::error::HostError;

/// The token file's name inside `$NUCLEIC_HOME`.
pub const TOKEN_FILE: &str = nucleic_protocol::TOKEN_FILE;

/// Length of a device key paired over the Noise channel (X25519).
const CHANNEL_KEY_LEN: usize = 32;

/// A device paired over the Noise channel (`nucleic pair`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDevice {
    pub id: String,
    pub name: String,
    /// Its X25519 static key.
    pub key: Vec<u8>,
}

/// Something that ends connections: one device revoked, or every credential (a rotated token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    Device(String),
    All,
}

/// The token in force and the revocation announcements.
#[derive(Debug)]
pub(crate) struct Credentials {
    token: RwLock<Arc<str>>,
    revocations: broadcast::Sender<Revocation>,
}

impl Credentials {
    pub(crate) fn load(home: &Path) -> Result<Credentials, HostError> {
        let token = load_or_create_token(home).map_err(|e| {
            HostError::Invalid(format!(
                "cannot read or create {}: {e}",
                home.join(TOKEN_FILE).display()
            ))
        })?;
        let (revocations, _) = broadcast::channel(64);
        Ok(Credentials { token: RwLock::new(token.into()), revocations })
    }
}

/// Reads the token, creating a random one (0600) on first use.
pub fn load_or_create_token(home: &Path) -> std::io::Result<String> {
    let path = home.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(t.trim().to_owned());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let token = new_token();
    write_token(home, &token)?;
    Ok(token)
}

fn new_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// Replaces the token file atomically (0600 from the start).
fn write_token(home: &Path, token: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(home)?;
    crate::private::write_private_file(&home.join(TOKEN_FILE), token.as_bytes())
}

/// Constant-time comparison (length aside).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Context {
    /// Whether `candidate` is the token in force.
    pub fn token_matches(&self, candidate: &str) -> bool {
        let token =
            self.credentials.token.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        same(candidate, &token)
    }

    /// The token in force (for printing sign-in instructions on this machine only).
    pub fn token(&self) -> Arc<str> {
        self.credentials.token.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Revocations as they happen, for open connections.
    pub fn revocations(&self) -> broadcast::Receiver<Revocation> {
        self.credentials.revocations.subscribe()
    }

    /// Records a new device with its public key (SubjectPublicKeyInfo DER, already checked by
    /// the caller); its id is fresh and random.
    pub async fn register_device(
        &self,
        name: &str,
        public_key: Vec<u8>,
    ) -> Result<DeviceRow, HostError> {
        let device = NewDevice {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.to_owned(),
            public_key: Some(public_key),
            paired_at: unix_millis(),
        };
        self.catalog(move |c| c.add_device(&device)).await
    }

    /// The device `id` if it exists, has a key and is not revoked; notes that it was seen.
    pub async fn active_device(&self, id: &str) -> Result<Option<DeviceRow>, HostError> {
        let id = id.to_owned();
        self.catalog(move |c| {
            let Some(row) = c.device(&id)? else { return Ok(None) };
            if row.revoked_at.is_some() || row.public_key.is_none() {
                return Ok(None);
            }
            c.touch_device(&row.id, unix_millis())?;
            Ok(Some(row))
        })
        .await
    }

    /// Unrevoked devices paired over the Noise channel (their key is a 32-byte X25519 key, not
    /// an ECDSA SubjectPublicKeyInfo): what the relay connection accepts.
    pub async fn channel_devices(&self) -> Result<Vec<ChannelDevice>, HostError> {
        let rows = self.catalog(|c| c.list_devices()).await?;
        Ok(rows
            .into_iter()
            .filter(|d| d.revoked_at.is_none())
            .filter_map(|d| {
                let key = d.public_key.filter(|k| k.len() == CHANNEL_KEY_LEN)?;
                Some(ChannelDevice { id: d.id, name: d.name, key })
            })
            .collect())
    }

    /// Notes that channel device `id` connected now.
    pub async fn touch_device(&self, id: &str) -> Result<(), HostError> {
        let id = id.to_owned();
        self.catalog(move |c| c.touch_device(&id, unix_millis())).await
    }

    /// Every device, revoked ones too; `current` is marked as the one asking.
    pub async fn list_devices(
        &self,
        current: Option<&str>,
    ) -> Result<Vec<DeviceSummary>, HostError> {
        let current = current.map(str::to_owned);
        let rows = self.catalog(|c| c.list_devices()).await?;
        Ok(rows
            .into_iter()
            .map(|d| DeviceSummary {
                current: current.as_deref() == Some(d.id.as_str()),
                device_id: d.id,
                name: d.name,
                paired_at: d.paired_at,
                last_seen_at: d.last_seen_at,
                revoked_at: d.revoked_at,
            })
            .collect())
    }

    /// Revokes device `id` for good and closes its connections.
    pub async fn revoke_device(&self, id: &str) -> Result<(), HostError> {
        let owned = id.to_owned();
        self.catalog(move |c| c.revoke_device(&owned, unix_millis())).await.map_err(
            |e| match e {
                HostError::Catalog(nucleic_catalog::CatalogError::DeviceNotFound { .. }) => {
                    HostError::NotFound(format!("device {id}"))
                }
                other => other,
            },
        )?;
        let _ = self.credentials.revocations.send(Revocation::Device(id.to_owned()));
        Ok(())
    }

    /// A new token: written to the token file, every device revoked, every connection closed.
    /// Returns how many devices were revoked.
    pub async fn rotate_token(&self) -> Result<usize, HostError> {
        let token = new_token();
        let home = self.config.home.clone();
        let written = token.clone();
        crate::error::blocking(move || {
            write_token(&home, &written)
                .map_err(|e| HostError::Invalid(format!("cannot write the new token: {e}")))
        })
        .await?;
        *self.credentials.token.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            token.into();
        let revoked = self.catalog(|c| c.revoke_all_devices(unix_millis())).await?;
        let _ = self.credentials.revocations.send(Revocation::All);
        Ok(revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create_token(dir.path()).unwrap();
        let b = load_or_create_token(dir.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        let mode =
            std::fs::metadata(dir.path().join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
