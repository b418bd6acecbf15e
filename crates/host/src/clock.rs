//! Now, as the protocol's timestamp and as Unix milliseconds.

use nucleic_protocol::Timestamp;

pub(crate) fn now() -> Timestamp {
    Timestamp::from_datetime(time::OffsetDateTime::now_utc())
}

/// Now, in Unix milliseconds.
pub(crate) fn unix_millis() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}
