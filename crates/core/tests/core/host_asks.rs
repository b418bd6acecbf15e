//! The host's own questions (the egress proxy's): recorded as approvals, answered by the first
//! responder without the agent being told, expired as `cancelled` at their own deadline, voided
//! with the turn; an agent's request under their name is refused.

use std::time::Duration;

use nucleic_core::CoreError;
use nucleic_protocol::{
    ApprovalRequested, Decision, DecisionKind, EGRESS_APPROVAL, EgressAsked, EventKind, RuleScope,
    SessionStatus,
};
use serde_json::json;

use super::{Call, rig, turn_done};

fn question(id: &str) -> ApprovalRequested {
    EgressAsked { host: "pkg.test".into(), port: 443, method: "CONNECT".into() }.request(id.into())
}

#[tokio::test]
async fn a_host_question_is_an_approval_the_first_responder_answers_and_the_agent_never_sees() {
    let r = rig();
    let answer = r.session.ask_host(question("egress-1"), Duration::from_secs(60)).await.unwrap();
    assert_eq!(r.session.state().pending_approvals, 1);
    let always = Decision::AllowAlways { scope: Some(RuleScope::Project) };
    let won = r.session.decide("egress-1", always, "phone").await.unwrap();
    assert_eq!((won.decision, won.by.as_str()), (DecisionKind::AllowAlways, "phone"));
    let told = answer.await.unwrap();
    assert_eq!(told, won);
    match r.session.decide("egress-1", Decision::Allow, "cli").await {
        Err(CoreError::AlreadyResolved { by, .. }) => assert_eq!(by, "phone"),
        other => panic!("{other:?}"),
    }
    assert!(r.agent.calls.lock().unwrap().is_empty(), "the agent was told");
    let mut sub = r.session.subscribe(1).unwrap();
    let asked = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let EventKind::ApprovalRequested(a) = &sub.next().await.unwrap().unwrap().kind {
                return a.clone();
            }
        }
    });
    let asked = asked.await.unwrap();
    assert_eq!(asked.tool_name, EGRESS_APPROVAL);
    assert_eq!(asked.description.as_deref(), Some("allow network access to pkg.test:443?"));
    assert_eq!(EgressAsked::of(&asked).unwrap().destination(), "pkg.test:443");
    // Asking the same id twice is refused.
    assert!(r.session.ask_host(question("egress-1"), Duration::from_secs(1)).await.is_err());
}

#[tokio::test]
async fn a_host_question_takes_allow_always_or_deny_and_nothing_else() {
    let r = rig();
    let answer = r.session.ask_host(question("q"), Duration::from_secs(60)).await.unwrap();
    let edited = Decision::AllowEdited { updated_input: json!({}) };
    assert!(r.session.decide("q", edited, "x").await.is_err());
    assert!(r.session.decide("q", Decision::Deny { message: " ".into() }, "x").await.is_err());
    let deny = Decision::Deny { message: "not that one".into() };
    r.session.decide("q", deny, "cli").await.unwrap();
    let told = answer.await.unwrap();
    assert_eq!(told.decision, DecisionKind::Deny);
    assert_eq!(told.message.as_deref(), Some("not that one"));
}

#[tokio::test]
async fn an_unanswered_host_question_expires_at_its_own_deadline_as_cancelled() {
    // The session has no approval timeout; the question has its own.
    let r = rig();
    let answer = r.session.ask_host(question("q"), Duration::from_millis(150)).await.unwrap();
    let told = tokio::time::timeout(Duration::from_secs(5), answer).await.unwrap().unwrap();
    assert_eq!((told.decision, told.by.as_str()), (DecisionKind::Cancelled, "host:timeout"));
    assert!(told.message.unwrap().contains("timed out"));
    assert_eq!(r.session.state().pending_approvals, 0);
}

#[tokio::test]
async fn a_host_question_is_voided_with_the_turn() {
    let r = rig();
    let answer = r.session.ask_host(question("q"), Duration::from_secs(60)).await.unwrap();
    r.emit(vec![turn_done()]).await;
    let told = tokio::time::timeout(Duration::from_secs(5), answer).await.unwrap().unwrap();
    assert_eq!(told.decision, DecisionKind::Cancelled);
}

#[tokio::test]
async fn an_agents_request_named_as_the_hosts_question_is_refused_before_a_person_sees_it() {
    let r = rig();
    r.agent.waiting.lock().unwrap().insert("fake".into());
    let mut sub = r.session.subscribe(1).unwrap();
    let mut fake = question("fake");
    fake.tool_call_id = Some("toolu_fake".into());
    r.emit(vec![EventKind::ApprovalRequested(fake)]).await;
    let resolved = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let EventKind::ApprovalResolved(res) = &sub.next().await.unwrap().unwrap().kind {
                return res.clone();
            }
        }
    });
    let res = resolved.await.unwrap();
    assert_eq!((res.decision, res.by.as_str()), (DecisionKind::Deny, "host:reserved"));
    let calls = r.agent.calls.lock().unwrap().clone();
    assert!(matches!(&calls[..], [Call::Respond(id, Decision::Deny { .. })] if id == "fake"));
    assert_eq!(r.session.state().pending_approvals, 0);
}

async fn status_becomes(r: &super::Rig, want: SessionStatus) {
    for _ in 0..200 {
        if r.session.state().status == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("status {:?}, not {want:?}", r.session.state().status);
}

#[tokio::test]
async fn a_host_question_moves_no_status_and_is_counted_pending() {
    let r = rig();
    r.emit(vec![turn_done()]).await;
    status_becomes(&r, SessionStatus::AwaitingInput).await;
    // Between turns (a background connection): still awaiting input, the question pending.
    let answer = r.session.ask_host(question("q"), Duration::from_secs(60)).await.unwrap();
    assert_eq!(r.session.state().status, SessionStatus::AwaitingInput);
    assert_eq!(r.session.state().pending_approvals, 1);
    r.session.decide("q", Decision::Allow, "cli").await.unwrap();
    answer.await.unwrap();
    assert_eq!(r.session.state().status, SessionStatus::AwaitingInput, "not running: no turn");
    // Beside an agent's approval: answering the agent's goes back to running though the
    // host's question is still open.
    r.emit(vec![super::text("working")]).await;
    status_becomes(&r, SessionStatus::Running).await;
    let answer = r.session.ask_host(question("q2"), Duration::from_secs(60)).await.unwrap();
    r.open_approval("tool").await;
    assert_eq!(r.session.state().status, SessionStatus::AwaitingApproval);
    r.session.decide("tool", Decision::Allow, "cli").await.unwrap();
    assert_eq!(r.session.state().status, SessionStatus::Running);
    assert_eq!(r.session.state().pending_approvals, 1);
    r.session.decide("q2", Decision::Deny { message: "no".into() }, "cli").await.unwrap();
    answer.await.unwrap();
    assert_eq!(r.session.state().status, SessionStatus::Running);
    assert_eq!(r.session.state().pending_approvals, 0);
}
