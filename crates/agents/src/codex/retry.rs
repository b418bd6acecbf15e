//! codex's provider errors: "Reconnecting... n/m (reason)" retries and error classes.

use nucleic_protocol::{ApiRetry, ErrorCode, ErrorEvent, EventKind};

/// `attempt`, `max` and the reason of a `Reconnecting... 1/5 (reason)` message.
fn parse_reconnecting(message: &str) -> Option<(u32, u32, &str)> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let (counts, reason) = match rest.split_once(' ') {
        Some((counts, reason)) => (counts, reason),
        None => (rest, ""),
    };
    let reason = reason.trim().trim_start_matches('(').trim_end_matches(')');
    match counts.split_once('/') {
        Some((a, m)) => match (a.parse(), m.parse()) {
            (Ok(a), Ok(m)) => Some((a, m, reason)),
            _ => Some((0, 0, rest.trim_start_matches('(').trim_end_matches(')'))),
        },
        // "Reconnecting... waiting for network (…)": no counts.
        None => Some((0, 0, rest.trim_start_matches('(').trim_end_matches(')'))),
    }
}

/// `429` from "… last status: 429 Too Many Requests".
fn status_in_text(message: &str) -> Option<u16> {
    let (_, after) = message.split_once("status: ")?;
    after.get(..3)?.parse().ok()
}

/// The error class (`server_error`, `rate_limit`, …) of a codex provider failure.
pub(crate) fn error_class(http_status: Option<u16>, info: Option<&str>, message: &str) -> String {
    // codex replaces a 5xx body with this text, and 0.171.0 reports the retry of a 500 as a
    // `responseStreamDisconnected` without a status.
    if message.contains("high demand") {
        return "server_error".into();
    }
    match (http_status, info) {
        (Some(429), _) | (_, Some("rateLimitExceeded" | "usageLimitExceeded")) => {
            return "rate_limit".into();
        }
        (Some(500..=599), _) | (_, Some("internalServerError")) => return "server_error".into(),
        (_, Some("serverOverloaded")) => return "overloaded".into(),
        (_, Some("responseStreamDisconnected")) => return "stream_disconnected".into(),
        (_, Some("httpConnectionFailed" | "responseStreamConnectionFailed")) => {
            return "connection_failed".into();
        }
        (_, Some(other)) if other != "other" && other != "responseTooManyFailedAttempts" => {
            return other.to_owned();
        }
        _ => {}
    }
    if message.contains("stream disconnected") {
        "stream_disconnected".into()
    } else if message.contains("waiting for network") || message.contains("Connection failed") {
        "connection_failed".into()
    } else {
        "unknown".into()
    }
}

/// An `apiRetry` for a "Reconnecting..." message, else an `error`. `http_status` and `info`
/// come from app-server's `codexErrorInfo`; exec only has the text.
pub(crate) fn provider_error(
    message: &str,
    http_status: Option<u16>,
    info: Option<&str>,
    will_retry: bool,
) -> EventKind {
    let http_status = http_status.or_else(|| status_in_text(message));
    if let Some((attempt, max_retries, reason)) = parse_reconnecting(message) {
        return EventKind::ApiRetry(ApiRetry {
            attempt,
            max_retries,
            retry_delay_ms: 0,
            http_status,
            error: error_class(http_status, info, reason),
        });
    }
    if will_retry {
        return EventKind::ApiRetry(ApiRetry {
            attempt: 0,
            max_retries: 0,
            retry_delay_ms: 0,
            http_status,
            error: error_class(http_status, info, message),
        });
    }
    EventKind::Error(ErrorEvent {
        code: ErrorCode::ApiError,
        message: message.to_owned(),
        http_status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnecting_messages_are_retries() {
        let EventKind::ApiRetry(r) = provider_error(
            "Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)",
            None,
            None,
            false,
        ) else {
            panic!()
        };
        assert_eq!((r.attempt, r.max_retries, r.http_status), (1, 5, Some(429)));
        assert_eq!(r.error, "rate_limit");
        let EventKind::ApiRetry(r) = provider_error(
            "Reconnecting... waiting for network (Connection failed: error sending request)",
            None,
            None,
            false,
        ) else {
            panic!()
        };
        assert_eq!((r.attempt, r.error.as_str()), (0, "connection_failed"));
        let EventKind::ApiRetry(r) = provider_error(
            "Reconnecting... 2/5 (We’re currently experiencing high demand, which may cause temporary errors.)",
            None,
            None,
            true,
        ) else {
            panic!()
        };
        assert_eq!(r.error, "server_error");
    }

    #[test]
    fn final_errors_keep_their_text() {
        let EventKind::Error(e) = provider_error("{\"error\":{}}", Some(400), None, false) else {
            panic!()
        };
        assert_eq!((e.code, e.http_status), (ErrorCode::ApiError, Some(400)));
    }
}
