//! Devices' Web Push subscriptions: one per device, gone with the device (revoked or deleted).

use nucleic_protocol::QuietHours;
use rusqlite::{OptionalExtension, Row, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext};

/// A device's push subscription as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscriptionRow {
    pub device_id: String,
    /// The push service URL.
    pub endpoint: String,
    /// The browser's P-256 public key, 65 bytes uncompressed.
    pub p256dh: Vec<u8>,
    /// The browser's 16-byte auth secret.
    pub auth: Vec<u8>,
    pub quiet_hours: Option<QuietHours>,
    pub created_at: i64,
}

const COLUMNS: &str = "s.device_id, s.endpoint, s.p256dh, s.auth, s.quiet_from, s.quiet_to, \
                       s.time_zone, s.created_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<PushSubscriptionRow> {
    let quiet = match (
        row.get::<_, Option<u16>>(4)?,
        row.get::<_, Option<u16>>(5)?,
        row.get::<_, Option<String>>(6)?,
    ) {
        (Some(from_minute), Some(to_minute), Some(time_zone)) => {
            Some(QuietHours { from_minute, to_minute, time_zone })
        }
        _ => None,
    };
    Ok(PushSubscriptionRow {
        device_id: row.get(0)?,
        endpoint: row.get(1)?,
        p256dh: row.get(2)?,
        auth: row.get(3)?,
        quiet_hours: quiet,
        created_at: row.get(7)?,
    })
}

impl Catalog {
    /// Stores (or replaces) the subscription of a device that is not revoked.
    pub fn set_push_subscription(&self, sub: &PushSubscriptionRow) -> Result<()> {
        let q = sub.quiet_hours.as_ref();
        let n = self
            .conn()
            .execute(
                "INSERT INTO push_subscriptions \
                   (device_id, endpoint, p256dh, auth, quiet_from, quiet_to, time_zone, created_at) \
                 SELECT id, ?2, ?3, ?4, ?5, ?6, ?7, ?8 FROM devices WHERE id = ?1 AND revoked_at IS NULL \
                 ON CONFLICT(device_id) DO UPDATE SET endpoint = excluded.endpoint, \
                   p256dh = excluded.p256dh, auth = excluded.auth, quiet_from = excluded.quiet_from, \
                   quiet_to = excluded.quiet_to, time_zone = excluded.time_zone, \
                   created_at = excluded.created_at",
                params![
                    sub.device_id,
                    sub.endpoint,
                    sub.p256dh,
                    sub.auth,
                    q.map(|q| q.from_minute),
                    q.map(|q| q.to_minute),
                    q.map(|q| q.time_zone.as_str()),
                    sub.created_at
                ],
            )
            .ctx("set push subscription")?;
        if n == 0 {
            return Err(CatalogError::DeviceNotFound { id: sub.device_id.clone() });
        }
        Ok(())
    }

    /// The device's subscription, if it has one.
    pub fn push_subscription(&self, device_id: &str) -> Result<Option<PushSubscriptionRow>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions s WHERE s.device_id = ?"
            ))
            .and_then(|mut stmt| stmt.query_row([device_id], from_row).optional())
            .ctx("read push subscription")
    }

    /// Drops the device's subscription (only if it is still for `endpoint`, when given: a
    /// device that subscribed again meanwhile keeps its new one); true if one was dropped.
    pub fn delete_push_subscription(
        &self,
        device_id: &str,
        endpoint: Option<&str>,
    ) -> Result<bool> {
        self.conn()
            .execute(
                "DELETE FROM push_subscriptions WHERE device_id = ?1 AND (?2 IS NULL OR endpoint = ?2)",
                params![device_id, endpoint],
            )
            .map(|n| n > 0)
            .ctx("delete push subscription")
    }

    /// Every subscription of a device that is not revoked.
    pub fn active_push_subscriptions(&self) -> Result<Vec<PushSubscriptionRow>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions s JOIN devices d ON d.id = s.device_id \
                 WHERE d.revoked_at IS NULL ORDER BY s.created_at, s.device_id"
            ))
            .and_then(|mut stmt| stmt.query_map([], from_row)?.collect())
            .ctx("list push subscriptions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewDevice;

    fn device(c: &Catalog, id: &str) {
        let d =
            NewDevice { id: id.into(), name: id.into(), public_key: Some(vec![1]), paired_at: 1 };
        c.add_device(&d).unwrap();
    }

    fn sub(device_id: &str, endpoint: &str) -> PushSubscriptionRow {
        PushSubscriptionRow {
            device_id: device_id.into(),
            endpoint: endpoint.into(),
            p256dh: vec![4; 65],
            auth: vec![9; 16],
            quiet_hours: Some(QuietHours {
                from_minute: 1320,
                to_minute: 420,
                time_zone: "America/Chicago".into(),
            }),
            created_at: 5,
        }
    }

    #[test]
    fn a_subscription_goes_with_its_revoked_device() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        device(&c, "phone");
        device(&c, "laptop");
        c.set_push_subscription(&sub("phone", "http://push/a")).unwrap();
        c.set_push_subscription(&sub("phone", "http://push/b")).unwrap();
        c.set_push_subscription(&PushSubscriptionRow {
            quiet_hours: None,
            ..sub("laptop", "http://push/c")
        })
        .unwrap();
        assert_eq!(c.push_subscription("phone").unwrap().unwrap(), sub("phone", "http://push/b"));
        assert_eq!(c.active_push_subscriptions().unwrap().len(), 2);
        c.revoke_device("phone", 10).unwrap();
        assert_eq!(c.push_subscription("phone").unwrap(), None);
        assert!(matches!(
            c.set_push_subscription(&sub("phone", "http://push/d")),
            Err(CatalogError::DeviceNotFound { .. })
        ));
        assert!(matches!(
            c.set_push_subscription(&sub("nobody", "http://x")),
            Err(CatalogError::DeviceNotFound { .. })
        ));
        let left = c.active_push_subscriptions().unwrap();
        assert_eq!(left.iter().map(|s| s.device_id.as_str()).collect::<Vec<_>>(), ["laptop"]);
        assert_eq!(left[0].quiet_hours, None);
        assert!(!c.delete_push_subscription("laptop", Some("http://push/old")).unwrap());
        assert!(c.delete_push_subscription("laptop", Some("http://push/c")).unwrap());
        assert!(!c.delete_push_subscription("laptop", None).unwrap());
        c.set_push_subscription(&sub("laptop", "http://push/e")).unwrap();
        c.revoke_all_devices(11).unwrap();
        assert!(c.active_push_subscriptions().unwrap().is_empty());
        assert_eq!(c.push_subscription("laptop").unwrap(), None);
    }
}
