//! Wire snapshots of the sync protocol and its round trips.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use nucleic_protocol::{
    Backend, BackendInfo, Capabilities, ClientMessage, Decision, Event, EventKind, FileContent,
    FileEncoding, FileEntry, FileKind, FinishAction, HostMessage, Intent, NewSession,
    ProtocolErrorCode, SessionStatus, SessionSummary, StderrLine, Timestamp, Verbosity,
};
use serde_json::json;

fn round_trip_client(m: &ClientMessage) {
    let text = serde_json::to_string(m).unwrap();
    assert_eq!(&serde_json::from_str::<ClientMessage>(&text).unwrap(), m);
}

#[test]
fn client_messages_snapshot_and_round_trip() {
    let messages = vec![
        ClientMessage::Hello {
            client_id: "phone-1".into(),
            client_name: "Ana's phone".into(),
            protocol_version: 1,
            features: vec!["eventBatches".into()],
            device: None,
            on_behalf_of: None,
        },
        ClientMessage::Hello {
            client_id: "browser-1".into(),
            client_name: "desk".into(),
            protocol_version: 1,
            features: vec![],
            device: Some(nucleic_protocol::DeviceProof {
                device_id: "d1".into(),
                nonce: "n1".into(),
                signature: "c2ln".into(),
            }),
            on_behalf_of: None,
        },
        ClientMessage::Hello {
            client_id: "chat-bridge-1/telegram:12345".into(),
            client_name: "chat bridge".into(),
            protocol_version: 1,
            features: vec![],
            device: None,
            on_behalf_of: Some("telegram:12345".into()),
        },
        ClientMessage::ListDevices { message_id: "m9".into() },
        ClientMessage::Subscribe {
            message_id: "m1".into(),
            session_id: "s1".into(),
            from_seq: 42,
            verbosity: Verbosity::Summary,
        },
        ClientMessage::Decide {
            message_id: "m2".into(),
            session_id: "s1".into(),
            request_id: "r1".into(),
            decision: Decision::AllowEdited {
                updated_input: json!({"file_path": "/w/a", "content": "x"}),
            },
            confirmed: false,
        },
        ClientMessage::Intent {
            message_id: "m3".into(),
            intent: Intent::NewSession(NewSession {
                project_id: "p1".into(),
                base_ref: Some("main".into()),
                backend: Some(Backend::ClaudeCode),
                model: None,
                permission_mode: Some("default".into()),
                title: None,
                mode: None,
                prompt: "fix the flaky test".into(),
            }),
        },
        ClientMessage::Intent {
            message_id: "m4".into(),
            intent: Intent::Finish {
                session_id: "s1".into(),
                action: FinishAction::Rollback { confirm: true },
            },
        },
        ClientMessage::ListFiles {
            message_id: "m5".into(),
            session_id: "s1".into(),
            path: "src".into(),
            recursive: true,
        },
        ClientMessage::ReadFile {
            message_id: "m6".into(),
            session_id: "s1".into(),
            path: "src/main.rs".into(),
        },
        ClientMessage::ListBranches { message_id: "m7".into(), project_id: "p1".into() },
    ];
    for m in &messages {
        round_trip_client(m);
        let tag = serde_json::to_value(m).unwrap()["type"].as_str().unwrap().to_owned();
        assert!(nucleic_protocol::CLIENT_MESSAGE_TYPES.contains(&tag.as_str()), "{tag}");
    }
    insta::assert_json_snapshot!("client_messages", messages);
}

#[test]
fn host_messages_snapshot() {
    let messages = vec![
        HostMessage::Welcome {
            host_version: "0.1.0".into(),
            protocol_version: 1,
            backends: vec![BackendInfo {
                backend: Backend::Simulated,
                available: true,
                capabilities: Capabilities {
                    interactive_approvals: true,
                    edited_tool_input: true,
                    allow_always: true,
                    deny_and_stop: true,
                    interrupt: true,
                    set_model: false,
                    set_permission_mode: true,
                    resume: true,
                    fork: false,
                    partial_deltas: true,
                },
                models: vec!["sim".into()],
                permission_modes: vec!["default".into(), "plan".into()],
            }],
            relay_host_id: Some("9f".repeat(32)),
            schema_digest: Some("0123456789abcdef".into()),
        },
        HostMessage::Files {
            message_id: "m5".into(),
            path: "src".into(),
            entries: vec![
                FileEntry { path: "src/lib".into(), kind: FileKind::Dir, size: 0 },
                FileEntry { path: "src/main.rs".into(), kind: FileKind::File, size: 13 },
                FileEntry { path: "src/link".into(), kind: FileKind::Symlink, size: 0 },
            ],
            truncated: false,
        },
        HostMessage::Branches {
            message_id: "m7".into(),
            branches: vec!["main".into(), "feature/x".into()],
            default_branch: "main".into(),
        },
        HostMessage::Devices {
            message_id: "m9".into(),
            devices: vec![nucleic_protocol::DeviceSummary {
                device_id: "d1".into(),
                name: "Chrome on Linux".into(),
                paired_at: 1_700_000_000_000,
                last_seen_at: Some(1_700_000_100_000),
                revoked_at: None,
                current: true,
            }],
        },
        HostMessage::FileContent {
            message_id: "m6".into(),
            file: FileContent {
                path: "shot.png".into(),
                size: 3,
                mime: "image/png".into(),
                encoding: FileEncoding::Base64,
                content: "AAEC".into(),
                truncated: false,
            },
        },
        HostMessage::Error {
            message_id: Some("m2".into()),
            code: ProtocolErrorCode::AlreadyResolved,
            message: "approval r1 was already answered".into(),
            resolved_by: Some("desktop".into()),
        },
        HostMessage::Unsupported { message_id: Some("m9".into()), message_type: "teleport".into() },
        HostMessage::Events {
            session_id: "s1".into(),
            events: (1..=2)
                .map(|seq| Event {
                    seq,
                    at: Timestamp::parse("2026-11-29T00:00:00Z").unwrap(),
                    session_id: "s1".into(),
                    backend: Backend::Simulated,
                    native_type: None,
                    origin: None,
                    kind: EventKind::Stderr(StderrLine { text: format!("line {seq}") }),
                })
                .collect(),
        },
        HostMessage::SessionChanged {
            session: SessionSummary {
                session_id: "s1".into(),
                project_id: Some("p1".into()),
                title: "fix the flaky test".into(),
                backend: Backend::Simulated,
                status: SessionStatus::AwaitingApproval,
                pending_approvals: 1,
                cost_usd: 0.0,
                last_seq: 17,
                updated_at: 1_790_000_000_000,
                worktree: None,
                outcome: None,
                archived: false,
                read_only: false,
                disk: Some(nucleic_protocol::DiskUsage {
                    bytes: 1_200_000_000,
                    build_bytes: 900_000_000,
                    measured_at: 1_790_000_000_000,
                }),
                worktree_reclaimed: false,
                mode: None,
            },
        },
    ];
    for m in &messages {
        let text = serde_json::to_string(m).unwrap();
        assert_eq!(&serde_json::from_str::<HostMessage>(&text).unwrap(), m);
    }
    insta::assert_json_snapshot!("host_messages", messages);
}

#[test]
fn a_missing_verbosity_means_full_and_unknown_types_are_errors() {
    let m: ClientMessage =
        serde_json::from_str(r#"{"type":"subscribe","messageID":"m","sessionID":"s","fromSeq":1}"#)
            .unwrap();
    assert!(matches!(m, ClientMessage::Subscribe { verbosity: Verbosity::Full, .. }));
    assert!(
        serde_json::from_str::<ClientMessage>(r#"{"type":"teleport","messageID":"m"}"#).is_err()
    );
    assert!(
        serde_json::from_str::<ClientMessage>(
            r#"{"type":"subscribe","messageID":"m","sessionID":"s","fromSeq":-1}"#
        )
        .is_err()
    );
}

#[test]
fn ack_results_are_tagged_payloads() {
    use nucleic_protocol::{
        ChecksRun, ExportedText, GcReport, Handoff, Integrated, IntentResult, Pairing, ProjectMode,
        Reclaimable, ReviewSendout, RuleAdded, RuleRemoved, TokenRotated,
    };
    let results = vec![
        IntentResult::Handoff(Handoff { command: "cd '/w' && claude --resume 'c1'".into() }),
        IntentResult::Integrated(Integrated { base_branch: "main".into(), new_tip: "ab12".into() }),
        IntentResult::ChecksRun(ChecksRun { checks: vec![] }),
        IntentResult::ReviewSendout(ReviewSendout { sent: 2, prompt: "Review: …".into() }),
        IntentResult::ProjectMode(ProjectMode { project_id: "p1".into(), mode: "edit".into() }),
        IntentResult::RuleAdded(RuleAdded { added: true }),
        IntentResult::RuleRemoved(RuleRemoved { removed: 1 }),
        IntentResult::Gc(GcReport {
            reclaimable_worktrees: vec![Reclaimable {
                session_id: "s1".into(),
                path: Some("/r/.nucleic/worktrees/s1".into()),
                bytes: 5,
                build_bytes: 2,
                reason: "age".into(),
                reclaimed: true,
                error: None,
            }],
            orphan_worktrees: vec!["/r/.nucleic/worktrees/x".into()],
            stale_pooled_worktrees: vec![],
            stray_keepers: vec![],
            stale_turn_snapshots: vec!["gone".into()],
            removed: true,
        }),
        IntentResult::TokenRotated(TokenRotated { devices_revoked: 3 }),
        IntentResult::Pairing(Pairing {
            link: "https://app.invalid/#pair".into(),
            host_id: "h1".into(),
            host_key: "a2V5".into(),
            relay: "wss://relay.invalid".into(),
            lan: vec!["ws://192.168.1.2:7777".into()],
            expires_at: 1_790_000_600_000,
            qr_svg: None,
        }),
        IntentResult::Exported(ExportedText { text: "# Nucleic session export".into() }),
    ];
    let acks: Vec<HostMessage> = results
        .iter()
        .enumerate()
        .map(|(i, r)| HostMessage::Ack { message_id: format!("m{i}"), result: Some(r.clone()) })
        .collect();
    for (ack, result) in acks.iter().zip(&results) {
        let text = serde_json::to_string(ack).unwrap();
        assert_eq!(&serde_json::from_str::<HostMessage>(&text).unwrap(), ack);
        // Compatible: the result is the payload as before, with `kind` added (a client that
        // reads fields sees the same fields).
        let mut tagged = serde_json::to_value(result).unwrap();
        let kind = tagged.as_object_mut().unwrap().remove("kind").unwrap();
        assert!(kind.is_string(), "{kind}");
        assert_eq!(tagged, result.payload());
    }
    // A result without its tag (an older host) is no `IntentResult`, but its payload decodes.
    let old = json!({"command": "claude --resume c1"});
    assert!(serde_json::from_value::<IntentResult>(old.clone()).is_err());
    assert_eq!(serde_json::from_value::<Handoff>(old).unwrap().command, "claude --resume c1");
    insta::assert_json_snapshot!("ack_results", acks);
}
