//! Web Push settings on the wire: a device's browser subscription and its quiet hours, and what
//! the host tells a device about push (its VAPID public key, whether this device is subscribed).

use serde::{Deserialize, Serialize};

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WebPushSubscription {
    /// The push service URL messages are posted to.
    pub endpoint: String,
    pub keys: WebPushKeys,
}

/// The keys the host encrypts a push message for (RFC 8291), base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WebPushKeys {
    /// The browser's P-256 public key (65 bytes uncompressed).
    pub p256dh: String,
    /// The 16-byte authentication secret.
    pub auth: String,
}

/// A daily window, in the device's local time, when no push is sent (`from == to`: none).
/// The window may span midnight (`from` 22:00, `to` 07:00). It is kept with the device's IANA
/// time zone and evaluated by the host in that zone, so 22:00 stays 22:00 across daylight saving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QuietHours {
    /// Minutes after local midnight, 0–1439.
    #[serde(rename = "fromMinute")]
    pub from_minute: u16,
    /// Minutes after local midnight, 0–1439 (exclusive).
    #[serde(rename = "toMinute")]
    pub to_minute: u16,
    /// The device's IANA time zone (`Europe/Berlin`, as
    /// `Intl.DateTimeFormat().resolvedOptions().timeZone` gives it); the host refuses one its
    /// time zone database does not know.
    #[serde(rename = "timeZone")]
    pub time_zone: String,
}

/// Longest time zone name taken (the longest IANA name is 32 bytes).
pub const MAX_TIME_ZONE_BYTES: usize = 64;

impl QuietHours {
    /// Whether `minute` (after local midnight, in the device's zone) falls in the window.
    pub fn contains_minute(&self, minute: u16) -> bool {
        let (from, to) = (self.from_minute, self.to_minute);
        if from <= to { (from..to).contains(&minute) } else { minute >= from || minute < to }
    }

    /// Why these hours are not valid, if they are not (whether the zone exists is the host's
    /// to say: this crate reads no time zone database).
    pub fn problem(&self) -> Option<String> {
        if self.from_minute >= 1440 || self.to_minute >= 1440 {
            return Some("quiet hours are minutes after midnight, 0 to 1439".into());
        }
        let zone = &self.time_zone;
        let shaped = !zone.is_empty()
            && zone.len() <= MAX_TIME_ZONE_BYTES
            && zone.bytes().all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b))
            && zone.split('/').all(|part| !part.is_empty() && !part.starts_with(['.', '-']));
        if !shaped {
            return Some(format!(
                "quiet hours: timeZone {zone:?} is not an IANA time zone name (like \"Europe/Berlin\")"
            ));
        }
        None
    }
}

/// Push as one device sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PushSettings {
    /// The host's VAPID public key: the browser's `applicationServerKey` (base64url).
    #[serde(rename = "vapidPublicKey")]
    pub vapid_public_key: String,
    /// This device has a subscription on the host.
    pub subscribed: bool,
    #[serde(rename = "quietHours", default, skip_serializing_if = "Option::is_none")]
    pub quiet_hours: Option<QuietHours>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_span_midnight_and_refuse_bad_input() {
        let night = QuietHours {
            from_minute: 22 * 60,
            to_minute: 7 * 60,
            time_zone: "Europe/Berlin".into(),
        };
        assert!(night.contains_minute(22 * 60 + 30));
        assert!(night.contains_minute(6 * 60 + 59));
        assert!(!night.contains_minute(7 * 60));
        assert!(!night.contains_minute(12 * 60));
        let lunch = QuietHours { from_minute: 12 * 60, to_minute: 13 * 60, ..night.clone() };
        assert!(lunch.contains_minute(12 * 60 + 30));
        assert!(!lunch.contains_minute(13 * 60));
        let none = QuietHours { from_minute: 600, to_minute: 600, ..night.clone() };
        assert!(!none.contains_minute(600));
        assert!(night.problem().is_none());
        assert!(QuietHours { from_minute: 1440, ..none }.problem().is_some());
        for zone in ["", "../../etc/passwd", "Europe//Berlin", "Europe/Berlin\n", "/etc/localtime"]
        {
            let bad = QuietHours { time_zone: zone.into(), ..night.clone() };
            assert!(bad.problem().is_some_and(|p| p.contains("IANA")), "{zone:?}");
        }
        for zone in ["UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince"]
        {
            assert_eq!(QuietHours { time_zone: zone.into(), ..night.clone() }.problem(), None);
        }
    }
}
