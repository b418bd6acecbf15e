//! The cockpit's TypeScript protocol types, generated from these Rust types; fails on drift.
//!
//! `web/src/protocol.gen.ts` is committed. This test renders every wire type with `ts-rs` and
//! compares; after changing a wire type run
//! `NUCLEIC_UPDATE_TS=1 cargo test -p nucleic-protocol typescript` to rewrite the file.

use std::path::PathBuf;

use ts_rs::TS;

use crate::*;

/// Every declaration, in a stable order.
fn declarations() -> Vec<String> {
    vec![
        Event::decl(),
        Backend::decl(),
        EventKind::decl(),
        SessionStatus::decl(),
        TextBlock::decl(),
        SessionStarted::decl(),
        ToolCall::decl(),
        ToolInputDelta::decl(),
        ToolResult::decl(),
        Usage::decl(),
        TurnCompleted::decl(),
        RunFinished::decl(),
        RunOutcome::decl(),
        RateLimit::decl(),
        ApiRetry::decl(),
        PermissionDenied::decl(),
        Confinement::decl(),
        EgressRefused::decl(),
        StatusChanged::decl(),
        SettingsChanged::decl(),
        InterruptRequested::decl(),
        ErrorEvent::decl(),
        ErrorCode::decl(),
        StderrLine::decl(),
        Raw::decl(),
        SessionCreated::decl(),
        WorktreeInfo::decl(),
        SessionUpdated::decl(),
        WorktreeFinished::decl(),
        WorktreeReclaimed::decl(),
        WorktreeRestored::decl(),
        WorktreeAction::decl(),
        CheckSpec::decl(),
        CheckStarted::decl(),
        CheckTrigger::decl(),
        CheckOutput::decl(),
        CheckOutcome::decl(),
        CheckFinished::decl(),
        Report::decl(),
        crate::pull_request::PullRequestOpened::decl(),
        ReportClaim::decl(),
        Contradiction::decl(),
        ApprovalRequested::decl(),
        ApprovalResolved::decl(),
        crate::approval::EgressAsked::decl(),
        DecisionKind::decl(),
        Decision::decl(),
        Risk::decl(),
        RuleScope::decl(),
        SessionMode::decl(),
        QuestionAnswer::decl(),
        ClientMessage::decl(),
        Verbosity::decl(),
        Intent::decl(),
        ExportFormat::decl(),
        NewSession::decl(),
        RulesTarget::decl(),
        RuleBehaviour::decl(),
        RuleSource::decl(),
        RuleEntry::decl(),
        RuleList::decl(),
        FinishAction::decl(),
        HostMessage::decl(),
        IntentResult::decl(),
        OutsideSessions::decl(),
        OutsideSession::decl(),
        LiveHolder::decl(),
        SkippedSessionFile::decl(),
        ChecksRun::decl(),
        ReviewComments::decl(),
        ReviewSendout::decl(),
        ProjectMode::decl(),
        RuleAdded::decl(),
        RuleRemoved::decl(),
        Handoff::decl(),
        Integrated::decl(),
        GcReport::decl(),
        Reclaimable::decl(),
        TokenRotated::decl(),
        Pairing::decl(),
        ExportedText::decl(),
        Attached::decl(),
        crate::mcp_grant::McpScope::decl(),
        crate::mcp_grant::McpGrantSummary::decl(),
        crate::mcp_grant::McpGranted::decl(),
        crate::mcp_grant::McpGrants::decl(),
        crate::chat_bridge::ChatBridgeState::decl(),
        crate::chat_bridge::ChatPerson::decl(),
        crate::chat_bridge::ChatBridgeReport::decl(),
        crate::chat_bridge::ChatBridgeSummary::decl(),
        crate::chat_bridge::ChatBridges::decl(),
        crate::chat_bridge::ChatBridgeReported::decl(),
        ProtocolErrorCode::decl(),
        DeviceProof::decl(),
        DeviceSummary::decl(),
        WebPushSubscription::decl(),
        WebPushKeys::decl(),
        QuietHours::decl(),
        PushSettings::decl(),
        ProjectSummary::decl(),
        PoolSummary::decl(),
        SessionSummary::decl(),
        DiskUsage::decl(),
        DiskPolicy::decl(),
        ProjectSandbox::decl(),
        GitFacts::decl(),
        DiffFile::decl(),
        TurnSnapshot::decl(),
        ReviewComment::decl(),
        CommentStatus::decl(),
        ReviewSent::decl(),
        Capabilities::decl(),
        BackendInfo::decl(),
        FileKind::decl(),
        FileEntry::decl(),
        FileEncoding::decl(),
        FileContent::decl(),
    ]
}

fn render() -> String {
    let mut out = String::from(
        "// Generated from crates/protocol by ts-rs (crates/protocol/src/typescript.rs). Do not edit:\n\
         // run `NUCLEIC_UPDATE_TS=1 cargo test -p nucleic-protocol typescript` after changing a wire type.\n\
         /* eslint-disable */\n\n\
         export type JsonValue = number | string | boolean | null | JsonValue[] | { [key: string]: JsonValue };\n",
    );
    out.push_str(&format!(
        "\nexport const PROTOCOL_VERSION = {PROTOCOL_VERSION};\nexport const MAX_FILE_CONTENT_BYTES = {MAX_FILE_CONTENT_BYTES};\nexport const FEATURE_EVENT_BATCHES = \"{FEATURE_EVENT_BATCHES}\";\n"
    ));
    for decl in declarations() {
        out.push_str("\nexport ");
        // ts-rs spells u64 as `bigint`, but `JSON.parse` yields numbers; every u64 on our wire
        // (seq, token counts, durations) stays far below 2^53.
        out.push_str(decl.trim().replace("bigint", "number").as_str());
        out.push('\n');
    }
    out
}

#[test]
fn typescript_types_match_the_rust_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web/src/protocol.gen.ts");
    let fresh = render();
    if std::env::var_os("NUCLEIC_UPDATE_TS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "web/src/protocol.gen.ts is out of date with the Rust wire types: run \
         `NUCLEIC_UPDATE_TS=1 cargo test -p nucleic-protocol typescript` and commit the result"
    );
}
