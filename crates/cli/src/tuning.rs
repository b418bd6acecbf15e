//! Timing knobs of `nucleic serve` read from the environment, in milliseconds, so tests can
//! shorten deadlines that are tens of seconds in use: `NUCLEIC_RELAY_MAX_BACKOFF_MS` (the longest
//! wait between two attempts to reach the relay), `NUCLEIC_PING_INTERVAL_MS` and
//! `NUCLEIC_IDLE_TIMEOUT_MS` (the keepalive of every client connection, devices through the
//! relay included). A malformed value is refused with its name.

use std::time::Duration;

use anyhow::bail;
use nucleic_server::ServerLimits;

/// The longest wait between two attempts to reach the relay, unless tuned.
pub const RELAY_MAX_BACKOFF: Duration = Duration::from_secs(30);

const RELAY_MAX_BACKOFF_VAR: &str = "NUCLEIC_RELAY_MAX_BACKOFF_MS";
const PING_INTERVAL_VAR: &str = "NUCLEIC_PING_INTERVAL_MS";
const IDLE_TIMEOUT_VAR: &str = "NUCLEIC_IDLE_TIMEOUT_MS";

/// `value` (from `name`) as a positive number of milliseconds.
fn millis(name: &str, value: Option<String>, default: Duration) -> anyhow::Result<Duration> {
    let Some(value) = value else { return Ok(default) };
    match value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => bail!("{name}={value:?}: expected a positive number of milliseconds"),
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The relay's backoff bound.
pub fn relay_max_backoff() -> anyhow::Result<Duration> {
    millis(RELAY_MAX_BACKOFF_VAR, var(RELAY_MAX_BACKOFF_VAR), RELAY_MAX_BACKOFF)
}

/// The server's limits with the keepalive knobs applied.
pub fn server_limits() -> anyhow::Result<ServerLimits> {
    limits_from(var(PING_INTERVAL_VAR), var(IDLE_TIMEOUT_VAR))
}

fn limits_from(ping: Option<String>, idle: Option<String>) -> anyhow::Result<ServerLimits> {
    let defaults = ServerLimits::default();
    let ping_interval = millis(PING_INTERVAL_VAR, ping, defaults.ping_interval)?;
    let idle_timeout = millis(IDLE_TIMEOUT_VAR, idle, defaults.idle_timeout)?;
    if idle_timeout <= ping_interval {
        bail!(
            "{IDLE_TIMEOUT_VAR} ({} ms) must be longer than {PING_INTERVAL_VAR} ({} ms): a live client only answers pings",
            idle_timeout.as_millis(),
            ping_interval.as_millis()
        );
    }
    Ok(ServerLimits { ping_interval, idle_timeout, ..defaults })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_default_parse_and_refuse_bad_values() {
        let none = limits_from(None, None).unwrap();
        assert_eq!(none, ServerLimits::default());
        let short = limits_from(Some("1000".into()), Some("3000".into())).unwrap();
        assert_eq!(short.ping_interval, Duration::from_millis(1000));
        assert_eq!(short.idle_timeout, Duration::from_millis(3000));
        for bad in ["", "0", "-5", "3s", "1.5"] {
            let e = limits_from(None, Some(bad.into())).unwrap_err().to_string();
            assert!(e.contains(IDLE_TIMEOUT_VAR), "{e}");
        }
        let e = limits_from(Some("5000".into()), Some("5000".into())).unwrap_err().to_string();
        assert!(e.contains("must be longer"), "{e}");
        assert_eq!(millis("X", None, RELAY_MAX_BACKOFF).unwrap(), RELAY_MAX_BACKOFF);
        assert_eq!(millis("X", Some("2000".into()), RELAY_MAX_BACKOFF).unwrap().as_secs(), 2);
    }
}
