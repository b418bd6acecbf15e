//! Signed-in browsers: devices known by the hash of their session cookie (kept across restarts).

use std::time::Duration;

use nucleic_catalog::NewDevice;

use crate::error::HostError;
use crate::host::Host;

fn unix_millis() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

impl Host {
    /// Remembers a signed-in browser by the hash of its session secret (never the secret).
    pub async fn add_browser(&self, session_hash: &str, name: &str) -> Result<(), HostError> {
        let device = NewDevice {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.to_owned(),
            public_key: None,
            paired_at: unix_millis(),
        };
        let hash = session_hash.to_owned();
        self.catalog(move |c| c.add_browser(&device, &hash).map(|_| ())).await
    }

    /// Every device (signed-in browsers included), revoked ones too.
    pub async fn list_devices(&self) -> Result<Vec<nucleic_catalog::DeviceRow>, HostError> {
        self.catalog(|c| c.list_devices()).await
    }

    /// Whether a browser session with this hash exists, is not revoked and is younger than
    /// `max_age`; notes that it was seen.
    pub async fn browser_signed_in(
        &self,
        session_hash: &str,
        max_age: Duration,
    ) -> Result<bool, HostError> {
        let hash = session_hash.to_owned();
        let now = unix_millis();
        let max_age = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        self.catalog(move |c| {
            let Some(row) = c.browser(&hash)? else { return Ok(false) };
            if row.revoked_at.is_some() || now.saturating_sub(row.paired_at) > max_age {
                return Ok(false);
            }
            c.touch_device(&row.id, now)?;
            Ok(true)
        })
        .await
    }
}
