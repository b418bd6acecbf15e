//! Quiet hours evaluated in the device's own IANA time zone, read from the system's time zone
//! database (`/usr/share/zoneinfo`, or `$TZDIR`), so a window set as 22:00–07:00 stays
//! 22:00–07:00 on the device's clock across daylight saving changes.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use nucleic_protocol::QuietHours;

use crate::PushError;

/// A device's quiet hours with its time zone loaded.
#[derive(Debug, Clone)]
pub struct QuietWindow {
    hours: QuietHours,
    zone: TimeZone,
}

impl QuietWindow {
    /// Checks the hours and loads their zone: a zone the database does not know is refused.
    pub fn new(hours: &QuietHours) -> Result<Self, PushError> {
        if let Some(problem) = hours.problem() {
            return Err(PushError::QuietHours(problem));
        }
        let zone = TimeZone::get(&hours.time_zone).map_err(|e| {
            PushError::QuietHours(format!(
                "unknown time zone {:?}: not in this host's time zone database ({e})",
                hours.time_zone
            ))
        })?;
        Ok(Self { hours: hours.clone(), zone })
    }

    /// Whether the unix-milliseconds instant `now_ms` falls in the window on the device's clock.
    pub fn contains(&self, now_ms: i64) -> bool {
        let Ok(instant) = Timestamp::from_millisecond(now_ms) else {
            return false;
        };
        let local = instant.to_zoned(self.zone.clone());
        let minute = i32::from(local.hour()) * 60 + i32::from(local.minute());
        u16::try_from(minute).is_ok_and(|m| self.hours.contains_minute(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(zone: &str) -> QuietWindow {
        let hours = QuietHours { from_minute: 22 * 60, to_minute: 7 * 60, time_zone: zone.into() };
        QuietWindow::new(&hours).unwrap()
    }

    /// Unix milliseconds of an RFC 3339 instant.
    fn at(utc: &str) -> i64 {
        utc.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn the_window_follows_the_zone_into_summer_time() {
        // Berlin goes from UTC+1 to UTC+2 on 2026-03-29 at 01:00 UTC.
        let berlin = window("Europe/Berlin");
        // Winter: 22:00 local is 21:00 UTC, 07:00 local is 06:00 UTC.
        assert!(!berlin.contains(at("2026-03-27T20:59:00Z")));
        assert!(berlin.contains(at("2026-03-27T21:00:00Z")));
        assert!(berlin.contains(at("2026-03-28T05:59:00Z")));
        assert!(!berlin.contains(at("2026-03-28T06:00:00Z")));
        // Summer, the next nights: 22:00 local is 20:00 UTC, 07:00 local is 05:00 UTC. A fixed
        // offset taken in winter (UTC+1) would be quiet until 06:00 UTC = 08:00 local.
        assert!(!berlin.contains(at("2026-03-29T19:59:00Z")));
        assert!(berlin.contains(at("2026-03-29T20:00:00Z")));
        assert!(berlin.contains(at("2026-03-30T04:59:00Z")));
        assert!(!berlin.contains(at("2026-03-30T05:00:00Z")));
        assert!(!berlin.contains(at("2026-03-30T05:30:00Z")));
        // The night of the change itself: quiet through the skipped hour until 07:00 CEST.
        assert!(berlin.contains(at("2026-03-29T00:59:00Z")));
        assert!(berlin.contains(at("2026-03-29T01:00:00Z")));
        assert!(berlin.contains(at("2026-03-29T04:59:00Z")));
        assert!(!berlin.contains(at("2026-03-29T05:00:00Z")));
    }

    #[test]
    fn the_window_follows_the_zone_back_to_winter_time() {
        // New York goes from UTC-4 to UTC-5 on 2026-11-01 at 06:00 UTC (02:00 EDT → 01:00 EST).
        let new_york = window("America/New_York");
        // Summer: 22:00 local is 02:00 UTC, 07:00 local is 11:00 UTC.
        assert!(!new_york.contains(at("2026-10-30T01:59:00Z")));
        assert!(new_york.contains(at("2026-10-30T02:00:00Z")));
        assert!(new_york.contains(at("2026-10-30T10:59:00Z")));
        assert!(!new_york.contains(at("2026-10-30T11:00:00Z")));
        // The night of the change: quiet through the repeated hour until 07:00 EST (12:00 UTC).
        assert!(new_york.contains(at("2026-11-01T05:30:00Z")));
        assert!(new_york.contains(at("2026-11-01T06:30:00Z")));
        assert!(new_york.contains(at("2026-11-01T11:30:00Z")));
        assert!(!new_york.contains(at("2026-11-01T12:00:00Z")));
        // Winter: 22:00 local is 03:00 UTC. A fixed summer offset (UTC-4) would already be
        // quiet at 02:00 UTC = 21:00 local.
        assert!(!new_york.contains(at("2026-11-03T02:30:00Z")));
        assert!(new_york.contains(at("2026-11-03T03:00:00Z")));
        assert!(!new_york.contains(at("2026-11-03T12:00:00Z")));
    }

    #[test]
    fn a_zone_without_daylight_saving_and_utc_work() {
        let kolkata = window("Asia/Kolkata");
        // UTC+5:30: 22:00 local is 16:30 UTC all year.
        for day in ["2026-01-15", "2026-07-15"] {
            assert!(!kolkata.contains(at(&format!("{day}T16:29:00Z"))));
            assert!(kolkata.contains(at(&format!("{day}T16:30:00Z"))));
        }
        assert!(window("UTC").contains(at("2026-07-15T23:00:00Z")));
    }

    #[test]
    fn an_unknown_zone_is_refused_clearly() {
        let hours =
            QuietHours { from_minute: 60, to_minute: 120, time_zone: "Mars/Olympus_Mons".into() };
        let e = QuietWindow::new(&hours).unwrap_err().to_string();
        assert!(e.contains("unknown time zone \"Mars/Olympus_Mons\""), "{e}");
        let hours = QuietHours { time_zone: "../../etc/passwd".into(), ..hours };
        let e = QuietWindow::new(&hours).unwrap_err().to_string();
        assert!(e.contains("not an IANA time zone name"), "{e}");
    }
}
