//! Paired devices: who may connect, their public keys, when they were last seen or revoked.

use rusqlite::{OptionalExtension, Row, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext};

/// A device to pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDevice {
    pub id: String,
    pub name: String,
    /// The device's public key (SubjectPublicKeyInfo DER): what it proves itself with.
    pub public_key: Option<Vec<u8>>,
    pub paired_at: i64,
}

/// A paired device as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    pub public_key: Option<Vec<u8>>,
    pub paired_at: i64,
    pub last_seen_at: Option<i64>,
    /// Set once; a revoked device stays listed so its key is never accepted again.
    pub revoked_at: Option<i64>,
}

const COLUMNS: &str = "id, name, public_key, paired_at, last_seen_at, revoked_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<DeviceRow> {
    Ok(DeviceRow {
        id: row.get(0)?,
        name: row.get(1)?,
        public_key: row.get(2)?,
        paired_at: row.get(3)?,
        last_seen_at: row.get(4)?,
        revoked_at: row.get(5)?,
    })
}

impl Catalog {
    /// Records a newly paired device; an existing id is refused ([`CatalogError::DuplicateDevice`]).
    pub fn add_device(&self, device: &NewDevice) -> Result<DeviceRow> {
        let conn = self.conn();
        let n = conn
            .execute(
                "INSERT INTO devices (id, name, public_key, paired_at) VALUES (?, ?, ?, ?) \
                 ON CONFLICT(id) DO NOTHING",
                params![device.id, device.name, device.public_key, device.paired_at],
            )
            .ctx("add device")?;
        if n == 0 {
            return Err(CatalogError::DuplicateDevice { id: device.id.clone() });
        }
        Ok(DeviceRow {
            id: device.id.clone(),
            name: device.name.clone(),
            public_key: device.public_key.clone(),
            paired_at: device.paired_at,
            last_seen_at: None,
            revoked_at: None,
        })
    }

    /// The device with this id (revoked or not).
    pub fn device(&self, id: &str) -> Result<Option<DeviceRow>> {
        let conn = self.conn();
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM devices WHERE id = ?"))
            .and_then(|mut stmt| stmt.query_row([id], from_row).optional())
            .ctx("read device")
    }

    /// Every device, revoked ones included, in pairing order.
    pub fn list_devices(&self) -> Result<Vec<DeviceRow>> {
        let conn = self.conn();
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM devices ORDER BY paired_at, id"))
            .and_then(|mut stmt| stmt.query_map([], from_row)?.collect())
            .ctx("list devices")
    }

    /// Notes that a device connected at `at`.
    pub fn touch_device(&self, id: &str, at: i64) -> Result<()> {
        let n = self
            .conn()
            .execute("UPDATE devices SET last_seen_at = ? WHERE id = ?", params![at, id])
            .ctx("touch device")?;
        found(n, id)
    }

    /// Revokes a device at `at` and drops its push subscription; revoking again keeps the
    /// first time.
    pub fn revoke_device(&self, id: &str, at: i64) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction().ctx("revoke device")?;
        let n = tx
            .execute(
                "UPDATE devices SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                params![at, id],
            )
            .ctx("revoke device")?;
        tx.execute("DELETE FROM push_subscriptions WHERE device_id = ?", [id])
            .ctx("drop the revoked device's push subscription")?;
        tx.commit().ctx("revoke device")?;
        found(n, id)
    }
}

impl Catalog {
    /// Revokes every device not yet revoked (a rotated token) and drops every push
    /// subscription; returns how many devices.
    pub fn revoke_all_devices(&self, at: i64) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction().ctx("revoke all devices")?;
        let n = tx
            .execute("UPDATE devices SET revoked_at = ? WHERE revoked_at IS NULL", params![at])
            .ctx("revoke all devices")?;
        tx.execute("DELETE FROM push_subscriptions", []).ctx("drop push subscriptions")?;
        tx.commit().ctx("revoke all devices")?;
        Ok(n)
    }
}

fn found(changed: usize, id: &str) -> Result<()> {
    if changed == 0 { Err(CatalogError::DeviceNotFound { id: id.to_owned() }) } else { Ok(()) }
}
