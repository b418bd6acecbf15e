//! RFC 3339 UTC timestamps for `at`: whole seconds print as `…:SSZ`, otherwise milliseconds.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// A UTC instant with millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

/// A string that is not an RFC 3339 timestamp.
#[derive(Debug)]
pub struct TimestampError(String);

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an RFC 3339 timestamp: {:?}", self.0)
    }
}

impl std::error::Error for TimestampError {}

impl Timestamp {
    /// From milliseconds since the Unix epoch; out-of-range values clamp to the epoch.
    pub fn from_unix_millis(ms: i64) -> Timestamp {
        let nanos = i128::from(ms) * 1_000_000;
        Timestamp(
            OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH),
        )
    }

    /// Wraps an instant, converting to UTC and truncating to milliseconds.
    pub fn from_datetime(dt: OffsetDateTime) -> Timestamp {
        let utc = dt.to_offset(UtcOffset::UTC);
        let ms = utc.unix_timestamp_nanos() / 1_000_000;
        Timestamp::from_unix_millis(i64::try_from(ms).unwrap_or(0))
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(self) -> i64 {
        i64::try_from(self.0.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
    }

    /// Parses any RFC 3339 string.
    pub fn parse(s: &str) -> Result<Timestamp, TimestampError> {
        OffsetDateTime::parse(s, &Rfc3339)
            .map(Timestamp::from_datetime)
            .map_err(|_| TimestampError(s.to_owned()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        )?;
        let ms = d.millisecond();
        if ms != 0 {
            write!(f, ".{ms:03}")?;
        }
        f.write_str("Z")
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_round_trip_exactly() {
        let t = Timestamp::parse("2026-06-12T23:13:03Z").unwrap();
        assert_eq!(t.to_string(), "2026-06-12T23:13:03Z");
    }

    #[test]
    fn millis_are_kept_and_offsets_normalized() {
        let t = Timestamp::parse("2026-06-12T23:13:03.120+02:00").unwrap();
        assert_eq!(t.to_string(), "2026-06-12T21:13:03.120Z");
        assert_eq!(Timestamp::from_unix_millis(t.unix_millis()), t);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Timestamp::parse("yesterday").is_err());
    }
}
