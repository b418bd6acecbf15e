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
/// The window may span midnight (`from` 22:00, `to` 07:00).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QuietHours {
    /// Minutes after local midnight, 0–1439.
    #[serde(rename = "fromMinute")]
    pub from_minute: u16,
    /// Minutes after local midnight, 0–1439 (exclusive).
    #[serde(rename = "toMinute")]
    pub to_minute: u16,
    /// The device's offset from UTC in minutes (`+120` for UTC+2), as of setting.
    #[serde(rename = "utcOffsetMinutes")]
    pub utc_offset_minutes: i16,
}

impl QuietHours {
    /// Whether the unix-milliseconds instant `now_ms` falls in the window.
    pub fn contains(&self, now_ms: i64) -> bool {
        let day = 24 * 60;
        let local =
            (now_ms.div_euclid(60_000) + i64::from(self.utc_offset_minutes)).rem_euclid(day);
        let (from, to) = (i64::from(self.from_minute), i64::from(self.to_minute));
        if from <= to { (from..to).contains(&local) } else { local >= from || local < to }
    }

    /// Why these hours are not valid, if they are not.
    pub fn problem(&self) -> Option<String> {
        if self.from_minute >= 1440 || self.to_minute >= 1440 {
            return Some("quiet hours are minutes after midnight, 0 to 1439".into());
        }
        if !(-14 * 60..=14 * 60).contains(&self.utc_offset_minutes) {
            return Some("utcOffsetMinutes must be within ±14 hours".into());
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
    fn quiet_hours_span_midnight_and_follow_the_offset() {
        let night = QuietHours { from_minute: 22 * 60, to_minute: 7 * 60, utc_offset_minutes: 60 };
        let at = |h: i64, m: i64| (h * 60 + m) * 60_000 + 20_000 * 86_400_000;
        // 21:30 UTC is 22:30 local: quiet; 06:30 UTC is 07:30 local: not.
        assert!(night.contains(at(21, 30)));
        assert!(night.contains(at(5, 59)));
        assert!(!night.contains(at(6, 0)));
        assert!(!night.contains(at(12, 0)));
        let lunch = QuietHours { from_minute: 12 * 60, to_minute: 13 * 60, utc_offset_minutes: 0 };
        assert!(lunch.contains(at(12, 30)));
        assert!(!lunch.contains(at(13, 0)));
        let none = QuietHours { from_minute: 600, to_minute: 600, utc_offset_minutes: 0 };
        assert!(!none.contains(at(10, 0)));
        assert!(QuietHours { from_minute: 1440, ..none }.problem().is_some());
        assert!(QuietHours { utc_offset_minutes: 900, ..none }.problem().is_some());
        assert!(night.problem().is_none());
    }
}
