//! Typed intent results: the `ack.result` an intent produces, decoded on the client side (the
//! wire keeps `Ack { result: Value }`), so a front end reads fields instead of digging in JSON.

use nucleic_protocol::{CheckFinished, ReviewComment};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ClientError;

/// `result` decoded as `T`; `request` names what was asked, for the error.
pub fn decode_result<T: DeserializeOwned>(
    request: &str,
    result: Option<Value>,
) -> Result<T, ClientError> {
    let expected = std::any::type_name::<T>().rsplit("::").next().unwrap_or("?");
    let bad =
        |error: String| ClientError::BadResult { request: request.to_owned(), expected, error };
    let Some(value) = result else {
        return Err(bad("the ack carries no result".into()));
    };
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}

/// `exportSession`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ExportedText {
    pub text: String,
}

/// `finish { action: handoff }`'s result: the shell command that takes the session over.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Handoff {
    pub command: String,
}

/// `runChecks`' result: each check once it ended.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChecksRun {
    #[serde(default)]
    pub checks: Vec<CheckFinished>,
}

/// `reviewComments`' result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReviewComments {
    #[serde(default)]
    pub comments: Vec<ReviewComment>,
}

/// `sendReview`'s result: how many comments went, as what prompt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewSendout {
    #[serde(default)]
    pub sent: u64,
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `rotateToken`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct TokenRotated {
    #[serde(rename = "devicesRevoked", default)]
    pub devices_revoked: u64,
}

/// `pairDevice`'s result (the fields a terminal shows; the rest stays in the JSON).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Pairing {
    /// The one-time link a phone opens.
    pub link: String,
}

/// `gc`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GcReport {
    /// Worktrees no session owns.
    pub orphan_worktrees: Vec<String>,
    /// Keepers no session knows.
    pub stray_keepers: Vec<String>,
    /// Pooled worktrees the pool does not know.
    pub stale_pooled_worktrees: Vec<String>,
    /// Finished sessions' worktrees due for reclaiming.
    pub reclaimable_worktrees: Vec<Reclaimable>,
    /// Whether anything was removed (`apply`).
    pub removed: bool,
}

/// A worktree `gc` reclaims (or would).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reclaimable {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub path: String,
    pub bytes: u64,
    pub build_bytes: u64,
    pub reason: String,
    /// Why it was not reclaimed, with `apply`.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_decode_into_their_types_and_say_what_was_wrong() {
        let gc: GcReport = decode_result(
            "gc",
            Some(json!({
                "orphanWorktrees": ["/r/.nucleic/worktrees/a"],
                "reclaimableWorktrees": [{"sessionID": "s1", "path": "/w", "bytes": 5,
                    "buildBytes": 2, "reason": "finished 8d ago"}],
                "strayKeepers": [], "removed": false, "somethingNew": 1,
            })),
        )
        .unwrap();
        assert_eq!(gc.orphan_worktrees, ["/r/.nucleic/worktrees/a"]);
        assert_eq!(gc.reclaimable_worktrees[0].session_id, "s1");
        assert_eq!(gc.reclaimable_worktrees[0].build_bytes, 2);

        let e = decode_result::<Handoff>("finish handoff", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the host's answer to finish handoff is not Handoff: the ack carries no result"
        );
        let e =
            decode_result::<ExportedText>("exportSession", Some(json!({"txt": 1}))).unwrap_err();
        assert!(e.to_string().contains("missing field `text`"), "{e}");
        let rotated: TokenRotated =
            decode_result("rotateToken", Some(json!({"devicesRevoked": 3}))).unwrap();
        assert_eq!(rotated.devices_revoked, 3);
    }
}
