//! The session controller with a policy: answers it gives itself are recorded like a person's,
//! pre-checks it leaves to a person go back to the agent, "always" in a scope becomes a rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nucleic_agents::{AgentControl, AgentError, AgentOutput, Capabilities, NativeEvent};
use nucleic_protocol::{
    ApprovalRequested, Backend, Decision, DecisionKind, Event, EventKind, QuestionAnswer, Risk,
    RuleScope, RunFinished, RunOutcome, SessionMode,
};
use serde_json::json;
use tokio::sync::mpsc;

use super::{ApprovalPolicy, Judgement, Verdict};
use crate::{SessionConfig, SessionController, SessionHandle};

#[derive(Clone, Default)]
struct Agent {
    responded: Arc<Mutex<Vec<(String, Decision)>>>,
    deferred: Arc<Mutex<Vec<String>>>,
    prechecks: Arc<Mutex<HashSet<String>>>,
    /// Every mode switch and answer, the policy's and the agent's, in order.
    log: Arc<Mutex<Vec<String>>>,
}

impl AgentControl for Agent {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            interactive_approvals: true,
            edited_tool_input: true,
            allow_always: true,
            deny_and_stop: true,
            interrupt: true,
            set_model: true,
            set_permission_mode: true,
            resume: true,
            fork: true,
            partial_deltas: true,
        }
    }
    async fn send_user_text(&self, _: &str) -> Result<(), AgentError> {
        Ok(())
    }
    async fn respond(&self, id: &str, d: &Decision) -> Result<(), AgentError> {
        self.responded.lock().unwrap().push((id.into(), d.clone()));
        self.log.lock().unwrap().push(format!("agent: answer {id} {:?}", d.kind()));
        Ok(())
    }
    async fn set_permission_mode(&self, mode: &str) -> Result<(), AgentError> {
        self.log.lock().unwrap().push(format!("agent: permission mode {mode}"));
        Ok(())
    }
    fn is_precheck(&self, id: &str) -> bool {
        self.prechecks.lock().unwrap().contains(id)
    }
    async fn defer(&self, id: &str) -> Result<(), AgentError> {
        self.deferred.lock().unwrap().push(id.into());
        Ok(())
    }
    async fn close_input(&self) {}
    fn stop(&self, _: Duration) {}
    fn pid(&self) -> Option<u32> {
        None
    }
}

/// Allows `ls`, denies `sudo …` by the invariant, asks about anything else (medium risk).
#[derive(Debug, Default)]
struct Policy {
    remembered: Mutex<Vec<(String, RuleScope)>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl ApprovalPolicy for Policy {
    fn judge(&self, request: &ApprovalRequested) -> Judgement {
        let command = request.input["command"].as_str().unwrap_or_default();
        let (verdict, by, risk) = if command == "ls" {
            (Verdict::Allow, "builtin:read-only", Risk::Low)
        } else if command.starts_with("sudo") {
            (Verdict::Deny, "invariant:sudo", Risk::Critical)
        } else if command.starts_with("shutdown") {
            (Verdict::Ask, "risk:critical", Risk::Critical)
        } else {
            (Verdict::Ask, "mode:edit", Risk::Medium)
        };
        Judgement {
            verdict,
            by: by.into(),
            reason: format!("{by} decided"),
            risk,
            risk_reasons: vec![format!("{risk:?}")],
        }
    }
    fn remember(
        &self,
        request: &ApprovalRequested,
        scope: RuleScope,
    ) -> Result<Vec<String>, String> {
        let rule = format!("Bash({})", request.input["command"].as_str().unwrap_or_default());
        self.remembered.lock().unwrap().push((rule.clone(), scope));
        Ok(vec![rule])
    }
    fn set_mode(&self, mode: SessionMode) -> Result<(), String> {
        self.log.lock().unwrap().push(format!("policy: mode {}", mode.as_str()));
        Ok(())
    }
}

fn bash(id: &str, command: &str) -> EventKind {
    EventKind::ApprovalRequested(ApprovalRequested {
        request_id: id.into(),
        tool_call_id: None,
        tool_name: "Bash".into(),
        input: json!({ "command": command }),
        description: None,
        blocked_path: None,
        risk: None,
        risk_reasons: Vec::new(),
    })
}

async fn events(session: &SessionHandle) -> Vec<Event> {
    let mut sub = session.subscribe(1).unwrap();
    let mut out = Vec::new();
    while let Some(e) = sub.next().await.unwrap() {
        out.push(Event::clone(&e));
    }
    out
}

#[tokio::test]
async fn the_policy_answers_records_asks_and_keeps_always_as_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::default();
    agent.prechecks.lock().unwrap().insert("hook-1".into());
    let policy = Arc::new(Policy::default());
    let (tx, rx) = mpsc::channel(16);
    let config = SessionConfig {
        session_id: "s1".into(),
        backend: Backend::ClaudeCode,
        transcript: dir.path().join("s1/transcript.jsonl"),
        approval_timeout: None,
        created: None,
        keep_open: false,
        policy: Some(policy.clone()),
    };
    let session = SessionController::start(config, agent.clone(), rx).unwrap();
    let kinds =
        vec![bash("r1", "ls"), bash("r2", "sudo true"), bash("hook-1", "make"), bash("r3", "make")];
    tx.send(AgentOutput::Events(NativeEvent::from_line("x", kinds))).await.unwrap();
    let mut sub = session.subscribe(1).unwrap();
    while !matches!(sub.next().await.unwrap().unwrap().kind, EventKind::ApprovalRequested(ref a) if a.request_id == "r3")
    {
    }
    let always = Decision::AllowAlways { scope: Some(RuleScope::Project) };
    let resolved = session.decide("r3", always, "person").await.unwrap();
    assert_eq!(resolved.decision, DecisionKind::AllowAlways);
    assert!(resolved.message.unwrap().contains("Bash(make)"));
    tx.send(AgentOutput::Exited(RunFinished::new(RunOutcome::Completed, None, Some(0))))
        .await
        .unwrap();
    drop(tx);
    let all = events(&session).await;

    // What the agent was told: allow, deny with the reason, the pre-check handed back, and the
    // person's "always" as a plain allow (the rule is the host's).
    let responded = agent.responded.lock().unwrap().clone();
    assert_eq!(
        responded,
        [
            ("r1".into(), Decision::Allow),
            ("r2".into(), Decision::Deny { message: "invariant:sudo decided".into() }),
            ("r3".into(), Decision::Allow),
        ]
    );
    assert_eq!(*agent.deferred.lock().unwrap(), ["hook-1"]);
    assert_eq!(*policy.remembered.lock().unwrap(), [("Bash(make)".into(), RuleScope::Project)]);

    // Recorded: each request with its risk; the policy's answers by what decided; the
    // pre-check not at all; only the person's request moved the status.
    let asked: Vec<(String, Option<Risk>)> = all
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalRequested(a) => Some((a.request_id.clone(), a.risk)),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("r1".into(), Some(Risk::Low)),
            ("r2".into(), Some(Risk::Critical)),
            ("r3".into(), Some(Risk::Medium))
        ]
    );
    let by: Vec<(String, String)> = all
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalResolved(r) => Some((r.request_id.clone(), r.by.clone())),
            _ => None,
        })
        .collect();
    let expected = [("r1", "builtin:read-only"), ("r2", "invariant:sudo"), ("r3", "person")];
    assert_eq!(by, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
    let statuses = all.iter().filter(|e| matches!(e.kind, EventKind::StatusChanged(_))).count();
    // awaitingApproval (r3), running (answered), finished.
    assert_eq!(statuses, 3, "{:#?}", all.iter().map(|e| e.kind.type_name()).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_critical_request_answered_allow_once_stays_pending() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::default();
    let (tx, rx) = mpsc::channel(16);
    let config = SessionConfig {
        session_id: "s1".into(),
        backend: Backend::ClaudeCode,
        transcript: dir.path().join("s1/transcript.jsonl"),
        approval_timeout: None,
        created: None,
        keep_open: false,
        policy: Some(Arc::new(Policy::default())),
    };
    let session = SessionController::start(config, agent.clone(), rx).unwrap();
    let mut sub = session.subscribe(1).unwrap();
    tx.send(AgentOutput::Events(NativeEvent::from_line("x", vec![bash("c1", "shutdown -h now")])))
        .await
        .unwrap();
    while !matches!(sub.next().await.unwrap().unwrap().kind, EventKind::ApprovalRequested(_)) {}
    let once = session.decide("c1", Decision::Allow, "phone").await.unwrap_err();
    assert!(matches!(once, crate::CoreError::NeedsConfirmation { .. }), "{once}");
    assert_eq!(session.state().pending_approvals, 1, "still pending");
    assert!(agent.responded.lock().unwrap().is_empty(), "the agent was told nothing");
    // A deny needs no confirmation; a confirmed allow goes through.
    let twice = session.decide_confirmed("c1", Decision::Allow, "phone", true).await.unwrap();
    assert_eq!((twice.decision, twice.by.as_str()), (DecisionKind::Allow, "phone"));
    assert_eq!(*agent.responded.lock().unwrap(), [("c1".to_owned(), Decision::Allow)]);
}

fn tool_request(id: &str, tool: &str, input: serde_json::Value) -> EventKind {
    EventKind::ApprovalRequested(ApprovalRequested {
        request_id: id.into(),
        tool_call_id: None,
        tool_name: tool.into(),
        input,
        description: None,
        blocked_path: None,
        risk: None,
        risk_reasons: Vec::new(),
    })
}

fn questions() -> serde_json::Value {
    json!({"questions": [{"question": "Which color?", "header": "Color", "multiSelect": false,
        "options": [{"label": "Red", "description": ""}, {"label": "Blue", "description": ""}]}]})
}

#[tokio::test]
async fn plans_switch_the_mode_first_and_questions_are_answered_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent { log: log.clone(), ..Agent::default() };
    let policy = Arc::new(Policy { log: log.clone(), ..Policy::default() });
    let (tx, rx) = mpsc::channel(16);
    let config = SessionConfig {
        session_id: "s1".into(),
        backend: Backend::ClaudeCode,
        transcript: dir.path().join("s1/transcript.jsonl"),
        approval_timeout: None,
        created: None,
        keep_open: false,
        policy: Some(policy),
    };
    let session = SessionController::start(config, agent.clone(), rx).unwrap();
    let mut sub = session.subscribe(1).unwrap();
    let kinds = vec![
        tool_request("empty", "ExitPlanMode", json!({})),
        tool_request("plan", "ExitPlanMode", json!({"plan": "# Plan\n1. write a.txt"})),
        tool_request("ask", "AskUserQuestion", questions()),
    ];
    tx.send(AgentOutput::Events(NativeEvent::from_line("x", kinds))).await.unwrap();
    while !matches!(sub.next().await.unwrap().unwrap().kind, EventKind::ApprovalRequested(ref a) if a.request_id == "ask")
    {
    }
    // Bad answers are refused with why, and the requests stay pending.
    let refused = [
        ("plan", Decision::Allow, "approvePlan"),
        ("ask", Decision::ApprovePlan { mode: SessionMode::Edit }, "not AskUserQuestion"),
        ("ask", Decision::Allow, "answered with answer"),
        (
            "ask",
            Decision::Answer {
                answers: vec![QuestionAnswer {
                    question: "Which color?".into(),
                    choices: vec!["Green".into()],
                    other: None,
                }],
            },
            "has no choice \"Green\"",
        ),
    ];
    for (id, decision, why) in refused {
        let e = session.decide(id, decision, "phone").await.unwrap_err().to_string();
        assert!(e.contains(why), "{e} (wanted {why})");
    }
    assert_eq!(session.state().pending_approvals, 2);

    let approved = Decision::ApprovePlan { mode: SessionMode::Edit };
    let r = session.decide("plan", approved, "phone").await.unwrap();
    assert_eq!((r.decision, r.mode), (DecisionKind::ApprovePlan, Some(SessionMode::Edit)));
    let answer = QuestionAnswer {
        question: "Which color?".into(),
        choices: vec!["Blue".into()],
        other: None,
    };
    let r = session.decide("ask", Decision::Answer { answers: vec![answer] }, "laptop").await;
    let r = r.unwrap();
    assert_eq!(r.decision, DecisionKind::Answered);
    assert_eq!(r.updated_input.as_ref().unwrap()["answers"], json!({"Which color?": "Blue"}));

    // The empty plan was refused by the host with guidance; the plan's mode was switched (the
    // policy's, then the agent's) before the agent was told to go on.
    assert_eq!(
        *log.lock().unwrap(),
        [
            "agent: answer empty Deny",
            "policy: mode edit",
            "agent: permission mode default",
            "agent: answer plan Allow",
            "agent: answer ask AllowEdited",
        ]
    );
    let responded = agent.responded.lock().unwrap().clone();
    let Decision::Deny { message } = &responded[0].1 else { panic!("{responded:?}") };
    assert!(message.contains("plan is empty") && message.contains("ExitPlanMode again"));
    let Decision::AllowEdited { updated_input } = &responded[2].1 else { panic!() };
    assert_eq!(updated_input["answers"]["Which color?"], "Blue");
    assert_eq!(updated_input["questions"], questions()["questions"]);
    tx.send(AgentOutput::Exited(RunFinished::new(RunOutcome::Completed, None, Some(0))))
        .await
        .unwrap();
    drop(tx);
    let empty = events(&session).await.into_iter().find_map(|e| match e.kind {
        EventKind::ApprovalResolved(r) if r.request_id == "empty" => Some(r),
        _ => None,
    });
    assert_eq!(
        empty.map(|r| (r.decision, r.by)),
        Some((DecisionKind::Deny, "host:empty-plan".into()))
    );
}
