//! Content-free Web Push from the host: when a session needs a person, each subscribed device
//! gets a message that carries only the session's opaque id, encrypted for that browser
//! (RFC 8291) and signed with the host's VAPID key (RFC 8292); the push service sees neither
//! the id nor anything else about the session.
//!
//! - `vapid`: [`VapidKey`], the host's P-256 key (`$NUCLEIC_HOME/vapid.key`, made once 0600),
//!   signing ES256 JWTs per push-service [`origin`] (RFC 8292); [`verify_authorization`] for the
//!   mock.
//! - `ece`: [`encrypt`] / [`decrypt`] (RFC 8291 `aes128gcm`, checked against the RFC's example).
//! - `deliver`: [`deliver`], an HTTP/1.1 `POST` on hyper, TLS on rustls with Mozilla's roots,
//!   bounded retries ([`RetryPolicy`]); `404`/`410` is [`Delivery::Gone`].
//! - [`needs_person`]: which session changes push.
//! - `watch`: [`SessionWatch`], the notifier's last summary of each session still under way:
//!   finished ones are forgotten, so it does not grow with every session ever run.
//! - [`payload`]: the session id alone.
//! - `quiet`: [`QuietWindow`], quiet hours in the device's own time zone.
//! - [`b64`]: base64url as Web Push and JWTs use it.
//!
//! The host's `push.rs` stores subscriptions per device and runs the notifier; `docs/cockpit.md`
//! has the design.

mod deliver;
mod ece;
mod quiet;
mod vapid;
mod watch;

pub use deliver::{Delivery, PushRequest, RetryPolicy, Transport, deliver};
pub use ece::{
    BrowserKeys, MAX_PLAINTEXT, RECORD_SIZE, SubscriptionKeys, decrypt, encrypt, encrypt_with,
};
pub use quiet::QuietWindow;
pub use vapid::{JWT_LIFETIME_SECS, VAPID_KEY_FILE, VapidKey, origin, verify_authorization};
pub use watch::SessionWatch;

use nucleic_protocol::{SessionStatus, SessionSummary};

/// Why a push could not be made or sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    #[error("not a valid P-256 key")]
    BadKey,
    #[error("push message of {0} bytes is over one record")]
    TooLarge(usize),
    #[error("push encryption: {0}")]
    Crypto(&'static str),
    #[error("no randomness: {0}")]
    Random(String),
    #[error("VAPID key file {0}: {1}")]
    KeyFile(String, String),
    #[error("VAPID authorization refused: {0}")]
    Vapid(String),
    #[error("not a push endpoint URL: {0}")]
    BadEndpoint(String),
    #[error("push service unreachable: {0}")]
    Unreachable(String),
    #[error("{0}")]
    QuietHours(String),
}

/// base64url without padding (what Web Push and JWTs use); decoding also takes padding.
pub mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    pub fn encode(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
        URL_SAFE_NO_PAD.decode(text.trim().trim_end_matches('='))
    }
}

/// Why a session needs a person (never sent: the payload carries the id only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedsPerson {
    /// An approval or a question waits.
    Approval,
    /// The turn is over and the agent waits for the next prompt.
    TurnFinished,
    /// The agent finished for good.
    Finished,
    /// The agent stopped with an error.
    Failed,
}

/// Whether the change `before → after` of a session's summary deserves a push (the same rule
/// as the cockpit's in-tab notifications, `web/src/notify.ts`, except that a turn ending right
/// after an approval counts too).
pub fn needs_person(
    before: Option<&SessionSummary>,
    after: &SessionSummary,
) -> Option<NeedsPerson> {
    let waiting = after.status == SessionStatus::AwaitingApproval || after.pending_approvals > 0;
    let Some(before) = before else {
        return waiting.then_some(NeedsPerson::Approval);
    };
    if before.status == after.status {
        return (after.pending_approvals > before.pending_approvals)
            .then_some(NeedsPerson::Approval);
    }
    match after.status {
        SessionStatus::AwaitingApproval => Some(NeedsPerson::Approval),
        // After an approval the summary can go straight to awaiting-input (no `running` in
        // between): the turn ended all the same.
        SessionStatus::AwaitingInput => {
            matches!(before.status, SessionStatus::Running | SessionStatus::AwaitingApproval)
                .then_some(NeedsPerson::TurnFinished)
        }
        SessionStatus::Finished => Some(NeedsPerson::Finished),
        SessionStatus::Error => Some(NeedsPerson::Failed),
        SessionStatus::Idle | SessionStatus::Running => None,
    }
}

/// The push message's plaintext: `{"v":1,"s":"<session id>"}` and nothing else — no title,
/// status, command, path or prompt. The service worker shows "A session needs you" and opens
/// `/s/<id>`; the session's details then come over the cockpit's own connection.
pub fn payload(session_id: &str) -> Vec<u8> {
    serde_json::json!({ "v": 1, "s": session_id }).to_string().into_bytes()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nucleic_protocol::Backend;

    /// A session's summary with only what the push rules read set.
    pub(crate) fn summary_of(id: &str, status: SessionStatus, pending: u32) -> SessionSummary {
        SessionSummary {
            session_id: id.into(),
            project_id: None,
            title: "secret title".into(),
            backend: Backend::ClaudeCode,
            status,
            pending_approvals: pending,
            cost_usd: 0.0,
            last_seq: 1,
            updated_at: 0,
            worktree: None,
            outcome: None,
            archived: false,
            read_only: false,
            disk: None,
            worktree_reclaimed: false,
            mode: None,
        }
    }

    fn summary(status: SessionStatus, pending: u32) -> SessionSummary {
        summary_of("s1", status, pending)
    }

    #[test]
    fn only_moments_that_need_a_person_push() {
        use SessionStatus::*;
        let s = summary;
        assert_eq!(
            needs_person(Some(&s(Running, 0)), &s(AwaitingApproval, 1)),
            Some(NeedsPerson::Approval)
        );
        assert_eq!(
            needs_person(Some(&s(AwaitingApproval, 1)), &s(AwaitingApproval, 2)),
            Some(NeedsPerson::Approval)
        );
        assert_eq!(needs_person(Some(&s(AwaitingApproval, 2)), &s(AwaitingApproval, 1)), None);
        assert_eq!(
            needs_person(Some(&s(Running, 0)), &s(AwaitingInput, 0)),
            Some(NeedsPerson::TurnFinished)
        );
        assert_eq!(
            needs_person(Some(&s(AwaitingApproval, 1)), &s(AwaitingInput, 0)),
            Some(NeedsPerson::TurnFinished)
        );
        assert_eq!(needs_person(Some(&s(Idle, 0)), &s(AwaitingInput, 0)), None);
        assert_eq!(
            needs_person(Some(&s(Running, 0)), &s(Finished, 0)),
            Some(NeedsPerson::Finished)
        );
        assert_eq!(needs_person(Some(&s(Running, 0)), &s(Error, 0)), Some(NeedsPerson::Failed));
        assert_eq!(needs_person(Some(&s(Idle, 0)), &s(Running, 0)), None);
        assert_eq!(needs_person(Some(&s(Running, 0)), &s(Running, 0)), None);
        assert_eq!(needs_person(None, &s(AwaitingApproval, 1)), Some(NeedsPerson::Approval));
        assert_eq!(needs_person(None, &s(Running, 0)), None);
    }

    #[test]
    fn the_payload_is_the_id_alone() {
        let p = String::from_utf8(payload("0193-abc")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&p).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 2);
        assert_eq!(v["s"], "0193-abc");
    }
}
