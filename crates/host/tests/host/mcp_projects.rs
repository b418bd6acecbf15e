//! An MCP grant limited to one project, by effect: every power it holds works in that project
//! (a call it allows runs) and nothing reaches another's sessions — not listed, not read, not
//! answered (the call never runs), not steered (no follow-up), not finished, no session started
//! there, not followed; an unknown session is refused alike, so the grant cannot learn which
//! other sessions exist. The person's grant of no project, or of a project that is not there,
//! is refused.

use std::time::Duration;

use nucleic_host::Host;
use nucleic_host::api::Client;
use nucleic_protocol::{
    ClientMessage, Decision, EventKind, FinishAction, HostMessage, Intent, IntentResult, McpScope,
    ProtocolErrorCode, RulesTarget,
};

use crate::mcp_scopes::{decide, next_request, refused, start, worktree};
use crate::support::{host, new_session, repo};

/// Grants `name` every scope on `projects` only.
async fn grant_on(
    host: &Host,
    name: &str,
    projects: Option<Vec<String>>,
) -> Result<Client, String> {
    let intent = Intent::GrantMcp {
        name: name.into(),
        scopes: McpScope::ALL.to_vec(),
        session_id: None,
        project_ids: projects,
    };
    match host.intent(intent, "t").await {
        Ok(Some(IntentResult::McpGranted(granted))) => {
            let principal = host.mcp_principal(&granted.credential).await.unwrap().unwrap();
            Ok(Client::new("mcp-client", principal))
        }
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

fn intent(id: &str, intent: Intent) -> ClientMessage {
    ClientMessage::Intent { message_id: id.into(), intent }
}

/// The user texts of `session`'s transcript.
async fn user_texts(host: &Host, session: &str) -> Vec<String> {
    let mut events = host.subscribe(session, 1).await.unwrap();
    let last = host.session_summary(session).await.unwrap().last_seq;
    let mut texts = Vec::new();
    while let Ok(Ok(Some(e))) = tokio::time::timeout(Duration::from_secs(5), events.next()).await {
        if let EventKind::UserText(t) = &e.kind {
            texts.push(t.text.clone());
        }
        if e.seq >= last {
            break;
        }
    }
    texts
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_of_one_project_acts_there_and_never_reaches_another_projects_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let host = host(dir.path()).await;
    let a = host.add_project(repo(&a_dir).to_str().unwrap(), None, |_| {}).await.unwrap();
    let b = host.add_project(repo(&b_dir).to_str().unwrap(), None, |_| {}).await.unwrap();
    let (a, b) = (a.project_id, b.project_id);
    // The person's sessions, one in each project, each asking to run a command.
    let in_a = host.intent(Intent::NewSession(new_session(&a, "run touch a-ran")), "t").await;
    let Ok(Some(IntentResult::Session(in_a))) = in_a else { panic!("{in_a:?}") };
    let in_b = host.intent(Intent::NewSession(new_session(&b, "run touch b-ran")), "t").await;
    let Ok(Some(IntentResult::Session(in_b))) = in_b else { panic!("{in_b:?}") };
    let (sa, sb) = (in_a.session_id.clone(), in_b.session_id.clone());
    let request_b = next_request(&host, &sb).await;
    let request_a = next_request(&host, &sa).await;

    // The person cannot grant no project, or one that is not there.
    let why = grant_on(&host, "none", Some(vec![])).await.err().unwrap();
    assert!(why.contains("no project"), "{why}");
    assert!(grant_on(&host, "ghost", Some(vec!["p-nope".into()])).await.is_err());
    let mcp = grant_on(&host, "a-only", Some(vec![a.clone()])).await.unwrap();
    let listed = host.list_mcp_grants().await.unwrap().grants;
    let kept = listed.iter().find(|g| g.name == "a-only").unwrap();
    assert_eq!(kept.project_ids, Some(vec![a.clone()]));

    // It sees its project and its session only.
    let HostMessage::Projects { projects, .. } =
        host.answer(&mcp, ClientMessage::ListProjects { message_id: "m1".into() }).await
    else {
        panic!()
    };
    assert_eq!(projects.iter().map(|p| p.project_id.as_str()).collect::<Vec<_>>(), [a.as_str()]);
    let all = ClientMessage::ListSessions {
        message_id: "m2".into(),
        project_id: None,
        include_archived: true,
    };
    let HostMessage::Sessions { sessions, .. } = host.answer(&mcp, all).await else { panic!() };
    assert_eq!(sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), [sa.as_str()]);
    let of_b = ClientMessage::ListSessions {
        message_id: "m3".into(),
        project_id: Some(b.clone()),
        include_archived: true,
    };
    let why = refused(&host, &mcp, of_b).await;
    assert!(why.contains(&format!("project {b} is not one it covers")), "{why}");
    assert!(why.contains(&format!("covers project {a} only")), "{why}");

    // Attack: answering B's request is refused — still pending, the command never ran.
    let why = refused(&host, &mcp, decide("m4", &sb, &request_b.request_id, Decision::Allow)).await;
    assert!(why.contains(&format!("session {sb} is not in a project it covers")), "{why}");
    let summary_b = host.session_summary(&sb).await.unwrap();
    assert_eq!(summary_b.pending_approvals, 1);
    assert!(!worktree(&summary_b).join("b-ran").exists(), "B's call ran");
    // Nor a follow-up, an interrupt, a finish, a read of its diff, files or rules.
    let before = user_texts(&host, &sb).await;
    let send = ClientMessage::SendInput {
        message_id: "m5".into(),
        session_id: sb.clone(),
        text: "write planted.txt".into(),
    };
    refused(&host, &mcp, send).await;
    refused(&host, &mcp, intent("m6", Intent::Interrupt { session_id: sb.clone() })).await;
    let keep = Intent::Finish { session_id: sb.clone(), action: FinishAction::Keep };
    refused(&host, &mcp, intent("m7", keep)).await;
    let facts = ClientMessage::GitFacts {
        message_id: "m8".into(),
        session_id: sb.clone(),
        include_patch: true,
        turn: None,
    };
    refused(&host, &mcp, facts).await;
    let read = ClientMessage::ReadFile {
        message_id: "m9".into(),
        session_id: sb.clone(),
        path: "README.md".into(),
    };
    refused(&host, &mcp, read).await;
    let rules = |session: Option<String>, project: Option<String>| {
        Intent::ListRules(RulesTarget { session_id: session, project_id: project })
    };
    refused(&host, &mcp, intent("m10", rules(Some(sb.clone()), None))).await;
    refused(&host, &mcp, intent("m11", rules(None, None))).await;
    assert_eq!(user_texts(&host, &sb).await, before, "a follow-up reached B");
    let summary_b = host.session_summary(&sb).await.unwrap();
    assert_eq!(summary_b.outcome, None, "B was finished");
    // Nor can it start a session in B.
    let sessions_before = host.list_sessions(None, true).await.unwrap().len();
    let new_in_b = Intent::NewSession(new_session(&b, "write planted.txt"));
    refused(&host, &mcp, intent("m12", new_in_b)).await;
    assert_eq!(host.list_sessions(None, true).await.unwrap().len(), sessions_before);
    // Nor follow it; and an unknown session is refused alike, naming nothing more.
    let principal = mcp.principal.clone();
    let why = host.may_follow(&principal, &sb).await.err().unwrap().to_string();
    assert!(why.contains("not in a project it covers"), "{why}");
    let why = host.may_follow(&principal, "s-nope").await.err().unwrap().to_string();
    assert!(why.contains("session s-nope is not in a project it covers"), "{why}");
    assert!(host.may_follow(&principal, &sa).await.is_ok());

    // Feature: in A every scope works — the call it allows runs, recorded as the grant.
    match host.answer(&mcp, decide("m13", &sa, &request_a.request_id, Decision::Allow)).await {
        HostMessage::Ack { .. } => {}
        other => panic!("{other:?}"),
    }
    let summary_a = host.session_summary(&sa).await.unwrap();
    let ran = worktree(&summary_a).join("a-ran");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ran.exists() {
        assert!(std::time::Instant::now() < deadline, "A's allowed call did not run within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = start(&host, &mcp, "m14", &a, "say hi").await;
    assert_eq!(started.project_id.as_deref(), Some(a.as_str()));

    // B's request is still the person's to answer.
    host.decide(&sb, &request_b.request_id, Decision::Deny { message: "no".into() }, "t")
        .await
        .unwrap();
    match host.answer(&mcp, ClientMessage::ListProjects { message_id: "m15".into() }).await {
        HostMessage::Projects { projects, .. } => assert_eq!(projects.len(), 1),
        HostMessage::Error { code: ProtocolErrorCode::Forbidden, message, .. } => {
            panic!("{message}")
        }
        other => panic!("{other:?}"),
    }
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
}
