//! Devices and the token: pairing, listing, revoking, rotating, announced to open connections.

use super::credentials::{
    CHANNEL_KEY_LEN, ChannelDevice, Revocation, new_token, same, write_token,
};
use crate::clock::unix_millis;
use crate::context::Context;
use crate::error::HostError;
use nucleic_catalog::{DeviceRow, NewDevice};
use nucleic_protocol::DeviceSummary;
use std::sync::Arc;
use tokio::sync::broadcast;

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
        let revoked = self
            .catalog(|c| {
                c.revoke_all_mcp_grants(unix_millis())?;
                c.revoke_all_devices(unix_millis())
            })
            .await?;
        let _ = self.credentials.revocations.send(Revocation::All);
        Ok(revoked)
    }
}
