//! Component tests of the event model: the seed export round-trips, wire snapshots, invariants.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Backend, DecisionKind, Event, EventKind, RunFinished,
    RunOutcome, SessionStatus, StatusChanged, Timestamp,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SEED: &str = include_str!("fixtures/seed-export-raw-events.jsonl");

#[test]
fn every_seed_export_line_round_trips_to_the_same_json() {
    let mut n = 0;
    for (i, line) in SEED.lines().enumerate() {
        let original: Value = serde_json::from_str(line).unwrap();
        let event: Event =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}\n{line}", i + 1));
        let back: Value = serde_json::to_value(&event).unwrap();
        assert_eq!(back, original, "line {} changed on the way back", i + 1);
        n += 1;
    }
    assert_eq!(n, 66, "the seed export has 66 events");
}

#[test]
fn seed_export_seq_is_gapless_from_one() {
    let seqs: Vec<u64> =
        SEED.lines().map(|l| serde_json::from_str::<Event>(l).unwrap().seq).collect();
    assert_eq!(seqs, (1..=66).collect::<Vec<u64>>());
}

#[test]
fn envelope_field_names_are_the_contract() {
    let e = Event {
        seq: 7,
        at: Timestamp::parse("2026-11-29T10:00:00.250Z").unwrap(),
        session_id: "s1".into(),
        backend: Backend::ClaudeCode,
        native_type: Some("control_request/can_use_tool".into()),
        origin: None,
        kind: EventKind::ApprovalRequested(ApprovalRequested {
            request_id: "r1".into(),
            tool_call_id: Some("toolu_1".into()),
            tool_name: "Write".into(),
            input: json!({"file_path": "/w/hello.txt", "content": "hello"}),
            description: Some("hello.txt".into()),
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }),
    };
    insta::assert_json_snapshot!("approval_requested_event", e);
}

#[test]
fn host_made_kinds_snapshot() {
    let kinds = vec![
        EventKind::ApprovalResolved(ApprovalResolved {
            request_id: "r1".into(),
            decision: DecisionKind::DenyAndStop,
            by: "terminal".into(),
            updated_input: None,
            message: Some("not that file".into()),
            mode: None,
        }),
        EventKind::StatusChanged(StatusChanged {
            status: SessionStatus::AwaitingApproval,
            previous: SessionStatus::Running,
        }),
        EventKind::RunFinished(RunFinished::new(
            RunOutcome::ApiError,
            Some("API Error: 500".into()),
            Some(1),
        )),
    ];
    insta::assert_json_snapshot!("host_made_kinds", kinds);
}

#[test]
fn type_name_matches_the_serialized_tag() {
    for line in SEED.lines() {
        let e: Event = serde_json::from_str(line).unwrap();
        let v = serde_json::to_value(&e.kind).unwrap();
        assert_eq!(v["type"], e.kind.type_name());
    }
}

#[test]
fn unknown_kind_is_a_clear_error_not_a_panic() {
    let line = r#"{"seq":1,"at":"2026-01-01T00:00:00Z","sessionID":"s","backend":"codex","kind":{"type":"fromTheFuture"}}"#;
    let err = serde_json::from_str::<Event>(line).unwrap_err().to_string();
    assert!(err.contains("fromTheFuture"), "{err}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn text_events_round_trip(text in ".*", seq in 1u64..u64::MAX, ms in 0i64..4_000_000_000_000) {
            let e = Event {
                seq,
                at: Timestamp::from_unix_millis(ms),
                session_id: "s".into(),
                backend: Backend::Simulated,
                native_type: None,
                origin: None,
                kind: EventKind::AssistantText(nucleic_protocol::TextBlock {
                    is_partial: true, message_id: "m".into(), text,
                }),
            };
            let s = serde_json::to_string(&e).unwrap();
            prop_assert!(!s.contains('\n'));
            let back: Event = serde_json::from_str(&s).unwrap();
            prop_assert_eq!(back, e);
        }
    }
}
