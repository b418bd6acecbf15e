//! MCP principals by effect: a grant without `approve` cannot answer (the request stays
//! pending, the call never runs), cannot widen its own grant; with `approve` a low-risk call
//! runs, recorded as the grant, but a critical one, an edited or "always" answer, and its own
//! session's or an ancestor's requests are refused — each refusal saying why. With `finish` it
//! keeps a session (recorded as the grant), but never discards, rolls back, forces or finishes
//! its own session.

use std::path::Path;
use std::time::Duration;

use nucleic_host::Host;
use nucleic_host::api::{Client, Principal};
use nucleic_protocol::{
    ApprovalRequested, ClientMessage, Decision, EventKind, HostMessage, Intent, IntentResult,
    McpScope, ProtocolErrorCode, SessionSummary,
};

use crate::support::{host, new_session, repo};

const WAIT: Duration = Duration::from_secs(30);

/// Grants `name` (as the person, in process) and answers the client its credential opens.
async fn grant(host: &Host, name: &str, scopes: &[McpScope], session: Option<&str>) -> Client {
    let intent = Intent::GrantMcp {
        name: name.into(),
        scopes: scopes.to_vec(),
        session_id: session.map(str::to_owned),
        project_ids: None,
    };
    let Some(IntentResult::McpGranted(granted)) = host.intent(intent, "t").await.unwrap() else {
        panic!("no credential")
    };
    assert!(granted.credential.starts_with("nucleic-mcp-"), "{}", granted.credential);
    let principal = host.mcp_principal(&granted.credential).await.unwrap().expect("a principal");
    Client::new("mcp-client", principal)
}

pub(crate) fn decide(id: &str, session: &str, request: &str, decision: Decision) -> ClientMessage {
    ClientMessage::Decide {
        message_id: id.into(),
        session_id: session.into(),
        request_id: request.into(),
        decision,
        confirmed: true,
    }
}

/// `message` from `client` is refused as forbidden; answers the reason.
pub(crate) async fn refused(host: &Host, client: &Client, message: ClientMessage) -> String {
    match host.answer(client, message).await {
        HostMessage::Error { code: ProtocolErrorCode::Forbidden, message, .. } => message,
        other => panic!("not refused as forbidden: {other:?}"),
    }
}

/// Starts a session as `client`.
pub(crate) async fn start(
    host: &Host,
    client: &Client,
    id: &str,
    project: &str,
    prompt: &str,
) -> SessionSummary {
    let intent = Intent::NewSession(new_session(project, prompt));
    match host.answer(client, ClientMessage::Intent { message_id: id.into(), intent }).await {
        HostMessage::Ack { result: Some(IntentResult::Session(s)), .. } => s,
        other => panic!("{other:?}"),
    }
}

/// The session's next approval request.
pub(crate) async fn next_request(host: &Host, session: &str) -> ApprovalRequested {
    let mut events = host.subscribe(session, 1).await.unwrap();
    let mut open: Vec<ApprovalRequested> = Vec::new();
    loop {
        let e =
            tokio::time::timeout(WAIT, events.next()).await.expect("no approval").unwrap().unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => open.push(a.clone()),
            EventKind::ApprovalResolved(r) => open.retain(|a| a.request_id != r.request_id),
            _ => {}
        }
        if e.seq >= host.session_summary(session).await.unwrap().last_seq
            && let Some(first) = open.first()
        {
            return first.clone();
        }
    }
}

/// Waits for the session's turn to end; answers its tool results' text.
async fn turn_output(host: &Host, session: &str) -> String {
    let mut events = host.subscribe(session, 1).await.unwrap();
    let mut out = String::new();
    loop {
        let e =
            tokio::time::timeout(WAIT, events.next()).await.expect("no turn end").unwrap().unwrap();
        match &e.kind {
            EventKind::ToolResult(r) => out.push_str(&serde_json::to_string(r).unwrap()),
            EventKind::TurnCompleted(_) => return out,
            _ => {}
        }
    }
}

pub(crate) fn worktree(summary: &SessionSummary) -> std::path::PathBuf {
    Path::new(&summary.worktree.as_ref().unwrap().path).to_path_buf()
}

#[tokio::test(flavor = "multi_thread")]
async fn without_approve_an_mcp_grant_answers_nothing_and_cannot_widen_itself() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id;
    let mcp = grant(&host, "helper", &[McpScope::Start, McpScope::Steer], None).await;

    // Feature: with `start` it starts a session, recorded as started by the grant.
    let session = start(&host, &mcp, "m1", &pid, "run touch attack-ran").await;
    let id = session.session_id.clone();
    let request = next_request(&host, &id).await;

    // Attack: allowing without `approve` is refused, saying which scope is missing.
    let why = refused(&host, &mcp, decide("m2", &id, &request.request_id, Decision::Allow)).await;
    assert!(why.contains("`approve` scope") && why.contains("MCP grant helper"), "{why}");
    assert!(why.contains("observe, start, steer"), "{why}");
    // The effect: still pending, the command never ran.
    let summary = host.session_summary(&id).await.unwrap();
    assert_eq!(summary.pending_approvals, 1);
    assert!(!worktree(&summary).join("attack-ran").exists(), "the call ran");

    // Attack: it cannot widen its grant, grant another, revoke, or change the policy.
    let widen = Intent::GrantMcp {
        name: "helper2".into(),
        scopes: McpScope::ALL.to_vec(),
        session_id: None,
        project_ids: None,
    };
    let why =
        refused(&host, &mcp, ClientMessage::Intent { message_id: "m3".into(), intent: widen })
            .await;
    assert!(why.contains("only the person"), "{why}");
    let revoke = Intent::RevokeMcp { name: "helper".into() };
    refused(&host, &mcp, ClientMessage::Intent { message_id: "m4".into(), intent: revoke }).await;
    let rule = Intent::AddRule {
        session_id: Some(id.clone()),
        project_id: None,
        scope: nucleic_protocol::RuleScope::Session,
        behaviour: nucleic_protocol::RuleBehaviour::Allow,
        rule: "Bash(*)".into(),
    };
    refused(&host, &mcp, ClientMessage::Intent { message_id: "m5".into(), intent: rule }).await;
    // Attack: it cannot put a file where a session's agent reads it (a chat's attachment).
    let attach = Intent::Attach {
        session_id: id.clone(),
        name: "planted.txt".into(),
        content: "cGxhbnRlZA==".into(),
        append: None,
    };
    let why =
        refused(&host, &mcp, ClientMessage::Intent { message_id: "m6".into(), intent: attach })
            .await;
    assert!(why.contains("attach a file"), "{why}");
    let planted = dir.path().join("home").join("attachments").join(&id).join("planted.txt");
    let anywhere = walk_for(dir.path(), "planted.txt");
    assert!(!planted.exists() && anywhere.is_empty(), "the file was planted: {anywhere:?}");
    let grants = host.list_mcp_grants().await.unwrap().grants;
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].scopes, vec![McpScope::Observe, McpScope::Start, McpScope::Steer]);
    // The same name cannot be granted again, even by the person.
    let again = Intent::GrantMcp {
        name: "helper".into(),
        scopes: McpScope::ALL.to_vec(),
        session_id: None,
        project_ids: None,
    };
    assert!(host.intent(again, "t").await.is_err());

    // A made-up credential, or the token's form, is nobody; a revoked one stops working.
    assert_eq!(host.mcp_principal("nucleic-mcp-0000").await.unwrap(), None);
    assert_eq!(host.mcp_principal(&host.token()).await.unwrap(), None);
    let Principal::Mcp(p) = &mcp.principal else { panic!() };
    assert_eq!(p.label, "mcp:helper");

    // The session was recorded as started by the grant (no parent: it is no session's agent).
    let created = created(&host, &id).await;
    assert_eq!(created.created_by.as_deref(), Some("mcp:helper"));
    assert_eq!(created.parent_session_id, None);

    // Revoked, the credential opens nothing.
    let credential = grant_credential(&host, "short-lived", &[]).await;
    assert!(host.mcp_principal(&credential).await.unwrap().is_some());
    host.revoke_mcp("short-lived").await.unwrap();
    assert_eq!(host.mcp_principal(&credential).await.unwrap(), None);

    host.decide(&id, &request.request_id, Decision::Deny { message: "no".into() }, "t")
        .await
        .unwrap();
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}

async fn grant_credential(host: &Host, name: &str, scopes: &[McpScope]) -> String {
    let intent = Intent::GrantMcp {
        name: name.into(),
        scopes: scopes.to_vec(),
        session_id: None,
        project_ids: None,
    };
    let Some(IntentResult::McpGranted(granted)) = host.intent(intent, "t").await.unwrap() else {
        panic!("no credential")
    };
    granted.credential
}

/// The session's `sessionCreated`.
async fn created(host: &Host, session: &str) -> nucleic_protocol::SessionCreated {
    let mut events = host.subscribe(session, 1).await.unwrap();
    let e = tokio::time::timeout(WAIT, events.next()).await.unwrap().unwrap().unwrap();
    let EventKind::SessionCreated(created) = &e.kind else { panic!("{:?}", e.kind) };
    created.clone()
}

/// The resolution of `request` as recorded in the session.
async fn resolved_by(host: &Host, session: &str, request: &str) -> String {
    let mut events = host.subscribe(session, 1).await.unwrap();
    loop {
        let e = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("not resolved")
            .unwrap()
            .unwrap();
        if let EventKind::ApprovalResolved(r) = &e.kind
            && r.request_id == request
        {
            return r.by.clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_approve_a_low_risk_call_runs_recorded_as_the_grant_but_never_a_critical_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id;
    let mcp = grant(&host, "orchestrator", &[McpScope::Start, McpScope::Approve], None).await;

    // Feature: a low-risk call allowed through the grant runs and is recorded as the grant.
    let session = start(&host, &mcp, "m1", &pid, "run echo mcp-ran-it").await;
    let id = session.session_id.clone();
    let request = next_request(&host, &id).await;
    let reply = host.answer(&mcp, decide("m2", &id, &request.request_id, Decision::Allow)).await;
    let HostMessage::Ack { result: Some(IntentResult::Approval(r)), .. } = &reply else {
        panic!("{reply:?}")
    };
    assert_eq!(r.by, "mcp:orchestrator");
    assert!(turn_output(&host, &id).await.contains("mcp-ran-it"), "the allowed call did not run");
    assert_eq!(resolved_by(&host, &id, &request.request_id).await, "mcp:orchestrator");

    // Attack: a critical request (it breaks the `sudo` invariant) is refused even with
    // `approve` and `confirmed`, and does not run.
    let steer = ClientMessage::SendInput {
        message_id: "m3".into(),
        session_id: id.clone(),
        text: "run touch critical-ran; sudo -n true".into(),
    };
    // Without `steer` the follow-up itself is refused; the person sends it.
    let why = refused(&host, &mcp, steer).await;
    assert!(why.contains("`steer` scope"), "{why}");
    host.send_input(&id, "run touch critical-ran; sudo -n true").await.unwrap();
    let critical = next_request(&host, &id).await;
    assert_ne!(critical.request_id, request.request_id);
    let why = refused(&host, &mcp, decide("m4", &id, &critical.request_id, Decision::Allow)).await;
    assert!(why.contains("critical") && why.contains("only a person"), "{why}");
    // Nor by widening the answer: always, an edited input.
    let always = Decision::AllowAlways { scope: Some(nucleic_protocol::RuleScope::Project) };
    let why = refused(&host, &mcp, decide("m5", &id, &critical.request_id, always)).await;
    assert!(why.contains("always"), "{why}");
    let edited = Decision::AllowEdited { updated_input: serde_json::json!({"command": "true"}) };
    let why = refused(&host, &mcp, decide("m6", &id, &critical.request_id, edited)).await;
    assert!(why.contains("edited input"), "{why}");
    let summary = host.session_summary(&id).await.unwrap();
    assert_eq!(summary.pending_approvals, 1);
    assert!(!worktree(&summary).join("critical-ran").exists(), "the critical call ran");
    // Denying is within the grant.
    let deny = Decision::Deny { message: "not through MCP".into() };
    let reply = host.answer(&mcp, decide("m7", &id, &critical.request_id, deny)).await;
    assert!(matches!(reply, HostMessage::Ack { .. }), "{reply:?}");
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_grant_never_answers_its_own_or_its_ancestors_requests() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id;
    // The person's session P, waiting on a request; its agent gets a grant bound to P.
    let parent = host.new_session(new_session(&pid, "run touch parent-ran"), "t").await.unwrap();
    let p = parent.session_id.clone();
    let p_request = next_request(&host, &p).await;
    let all = [McpScope::Start, McpScope::Steer, McpScope::Approve];
    let p_agent = grant(&host, "p-agent", &all, Some(&p)).await;

    // Attack: P's agent answers P's own request.
    let why =
        refused(&host, &p_agent, decide("m1", &p, &p_request.request_id, Decision::Allow)).await;
    assert!(why.contains("its own session"), "{why}");
    // Nor may it steer itself.
    let steer = ClientMessage::SendInput {
        message_id: "m2".into(),
        session_id: p.clone(),
        text: "x".into(),
    };
    assert!(refused(&host, &p_agent, steer).await.contains("its own session"));

    // P's agent starts C: recorded as P's child, started by the grant.
    let child = start(&host, &p_agent, "m3", &pid, "run touch child-ran").await;
    let c = child.session_id.clone();
    let created = created(&host, &c).await;
    assert_eq!(created.parent_session_id.as_deref(), Some(p.as_str()));
    assert_eq!(created.created_by.as_deref(), Some("mcp:p-agent"));
    let c_request = next_request(&host, &c).await;

    // C's agent, granted everything, may answer neither C's request nor its ancestor P's.
    let c_agent = grant(&host, "c-agent", &all, Some(&c)).await;
    let why =
        refused(&host, &c_agent, decide("m4", &c, &c_request.request_id, Decision::Allow)).await;
    assert!(why.contains("its own session"), "{why}");
    let why =
        refused(&host, &c_agent, decide("m5", &p, &p_request.request_id, Decision::Allow)).await;
    assert!(why.contains("ancestor"), "{why}");
    // A grandchild's grant neither (the chain is followed up).
    let grandchild = start(&host, &c_agent, "m6", &pid, "say hi").await;
    let g_agent = grant(&host, "g-agent", &all, Some(&grandchild.session_id)).await;
    let why =
        refused(&host, &g_agent, decide("m7", &p, &p_request.request_id, Decision::Allow)).await;
    assert!(why.contains("ancestor"), "{why}");
    for (session, file) in [(&p, "parent-ran"), (&c, "child-ran")] {
        let summary = host.session_summary(session).await.unwrap();
        assert_eq!(summary.pending_approvals, 1, "{session}");
        assert!(!worktree(&summary).join(file).exists(), "{file}");
    }

    // Feature: the orchestrator P answers its child C's request (medium: a write); it lands.
    let reply =
        host.answer(&p_agent, decide("m8", &c, &c_request.request_id, Decision::Allow)).await;
    assert!(matches!(reply, HostMessage::Ack { .. }), "{reply:?}");
    turn_output(&host, &c).await;
    assert!(worktree(&child).join("child-ran").exists());
    host.decide(&p, &p_request.request_id, Decision::Deny { message: "no".into() }, "t")
        .await
        .unwrap();
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}

/// Every path under `dir` whose name is `name`.
fn walk_for(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(walk_for(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}

fn finish(id: &str, session: &str, action: nucleic_protocol::FinishAction) -> ClientMessage {
    ClientMessage::Intent {
        message_id: id.into(),
        intent: Intent::Finish { session_id: session.into(), action },
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn finish_keeps_work_but_never_discards_forces_or_finishes_its_own_session() {
    use nucleic_protocol::FinishAction;
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id;
    let person = host.new_session(new_session(&pid, "say hi"), "t").await.unwrap();
    let id = person.session_id.clone();
    let tree = worktree(&person);
    turn_output(&host, &id).await;

    // Without `finish`: refused, saying so; the session is not finished.
    let steer = grant(&host, "steerer", &[McpScope::Steer], None).await;
    let why = refused(&host, &steer, finish("f1", &id, FinishAction::Keep)).await;
    assert!(why.contains("`finish` scope"), "{why}");
    // With it: discard and rollback stay the person's, and a forced merge too — by effect,
    // the worktree and its branch are still there.
    let finisher = grant(&host, "finisher", &[McpScope::Finish], None).await;
    for (n, action) in [
        FinishAction::Discard,
        FinishAction::Rollback { confirm: true },
        FinishAction::Merge {
            message: None,
            update_checkout: false,
            force_reason: Some("trust me".into()),
        },
        FinishAction::Continue { prompt: "go on".into(), backend: None },
    ]
    .into_iter()
    .enumerate()
    {
        let why = refused(&host, &finisher, finish(&format!("f2-{n}"), &id, action)).await;
        assert!(why.contains("only the person"), "{why}");
    }
    assert!(tree.is_dir(), "a refused finish removed the worktree");
    // A grant bound to the session may not finish its own work, even with `finish`.
    let own = grant(&host, "own-agent", &[McpScope::Finish], Some(&id)).await;
    let why = refused(&host, &own, finish("f3", &id, FinishAction::Keep)).await;
    assert!(why.contains("its own session"), "{why}");
    // Keep: done, recorded as the grant.
    match host.answer(&finisher, finish("f4", &id, FinishAction::Keep)).await {
        HostMessage::Ack { .. } => {}
        other => panic!("keep was refused: {other:?}"),
    }
    let mut events = host.subscribe(&id, 1).await.unwrap();
    let by = loop {
        let e = tokio::time::timeout(WAIT, events.next()).await.expect("no finish").unwrap();
        if let EventKind::WorktreeFinished(f) = &e.unwrap().kind {
            break f.by.clone();
        }
    };
    assert_eq!(by, "mcp:finisher");
    assert!(tree.is_dir(), "a kept session keeps its worktree");
}
