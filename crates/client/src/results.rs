//! Typed intent results: the [`IntentResult`] an `ack` carries (defined in `nucleic-protocol`),
//! taken apart into the payload a request produces, so a front end reads fields instead of
//! digging in JSON.

pub use nucleic_protocol::{
    ChecksRun, ExportedText, GcReport, Handoff, Integrated, IntentPayload, IntentResult, Pairing,
    ProjectMode, Reclaimable, ReviewComments, ReviewSendout, RuleAdded, RuleRemoved, TokenRotated,
};

use crate::error::ClientError;

/// `result` as the payload `T`; `request` names what was asked, for the error.
pub fn decode_result<T: IntentPayload>(
    request: &str,
    result: Option<IntentResult>,
) -> Result<T, ClientError> {
    let expected = std::any::type_name::<T>().rsplit("::").next().unwrap_or("?");
    let bad =
        |error: String| ClientError::BadResult { request: request.to_owned(), expected, error };
    let Some(result) = result else {
        return Err(bad("the ack carries no result".into()));
    };
    T::take(result).map_err(|other| bad(format!("it is {}", kind_of(&other))))
}

/// The `kind` tag of a result.
pub fn kind_of(result: &IntentResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str().map(str::to_owned)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn wire(value: serde_json::Value) -> IntentResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_decode_into_their_payloads_and_say_what_was_wrong() {
        let gc: GcReport = decode_result(
            "gc",
            Some(wire(json!({
                "kind": "gc",
                "orphanWorktrees": ["/r/.nucleic/worktrees/a"],
                "reclaimableWorktrees": [{"sessionID": "s1", "path": "/w", "bytes": 5,
                    "buildBytes": 2, "reason": "age"}],
                "strayKeepers": [], "removed": false, "somethingNew": 1,
            }))),
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
        let exported = Some(wire(json!({"kind": "exported", "text": "x"})));
        let e = decode_result::<Handoff>("finish handoff", exported).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the host's answer to finish handoff is not Handoff: it is exported"
        );
        let rotated: TokenRotated = decode_result(
            "rotateToken",
            Some(wire(json!({"kind": "tokenRotated", "devicesRevoked": 3}))),
        )
        .unwrap();
        assert_eq!(rotated.devices_revoked, 3);
    }

    #[test]
    fn a_payload_prints_without_its_tag() {
        let run = IntentResult::ChecksRun(ChecksRun { checks: vec![] });
        assert_eq!(kind_of(&run), "checksRun");
        assert_eq!(run.payload(), json!({"checks": []}));
    }
}
