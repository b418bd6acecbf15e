//! Plan, then confirm, with the real pinned `claude` against the mock model in a loopback-only
//! namespace: a plan-mode session's plan is shown, rejected with feedback, revised, approved
//! into edit mode and executed; an empty plan is refused by the host with guidance; questions
//! (AskUserQuestion) are answered in the shape Claude Code expects.

use std::path::Path;
use std::time::Duration;

use nucleic_host::Host;
use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Backend, Decision, DecisionKind, EventKind,
    QuestionAnswer, SessionMode,
};
use nucleic_testkit::agents::claude_offline_env;
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Reply, Script, ToolCall};
use serde_json::json;

use crate::real_policy::{host_config, new_session};

/// What a session showed until its turn ended, and the errors of refused answers.
struct Seen {
    events: Vec<EventKind>,
    refused: Vec<String>,
}

impl Seen {
    fn resolution(&self, request_id: &str) -> Option<&ApprovalResolved> {
        self.events.iter().find_map(|k| match k {
            EventKind::ApprovalRequested(_) => None,
            EventKind::ApprovalResolved(r) if r.request_id == request_id => Some(r),
            _ => None,
        })
    }

    fn requests(&self, tool: &str) -> Vec<&ApprovalRequested> {
        self.events
            .iter()
            .filter_map(|k| match k {
                EventKind::ApprovalRequested(a) if a.tool_name == tool => Some(a),
                _ => None,
            })
            .collect()
    }
}

/// Follows session `id` until its turn completes. Each request the host leaves to a person
/// gets the decisions `answer` returns, in order: all but the last must be refused (still
/// pending), the last must be taken.
async fn drive(
    host: &Host,
    id: &str,
    mut answer: impl FnMut(&ApprovalRequested) -> Vec<Decision>,
) -> Seen {
    let mut events = host.subscribe(id, 1).await.unwrap();
    let mut seen = Seen { events: Vec::new(), refused: Vec::new() };
    let mut ahead = None;
    loop {
        let e = match ahead.take() {
            Some(e) => e,
            None => tokio::time::timeout(Duration::from_secs(90), events.next())
                .await
                .expect("the turn did not end within 90 s")
                .unwrap()
                .unwrap(),
        };
        seen.events.push(e.kind.clone());
        match e.kind.clone() {
            EventKind::TurnCompleted(_) => return seen,
            EventKind::ApprovalRequested(a) => {
                // A request the host answered itself comes with its answer in the same write.
                let next = tokio::time::timeout(Duration::from_secs(3), events.next()).await;
                let next = next.ok().map(|n| n.unwrap().unwrap());
                let by_host = matches!(&next, Some(n) if matches!(&n.kind,
                    EventKind::ApprovalResolved(r) if r.request_id == a.request_id));
                if !by_host {
                    let mut decisions = answer(&a);
                    let last = decisions.pop().expect("an answer");
                    for bad in decisions {
                        let e = host.decide(id, &a.request_id, bad, "person").await.unwrap_err();
                        seen.refused.push(e.to_string());
                    }
                    host.decide(id, &a.request_id, last, "person").await.unwrap();
                }
                ahead = next;
            }
            _ => {}
        }
    }
}

/// Every text the CLI sent the model in tool results, in order.
fn tool_results_sent(mock: &MockAnthropic) -> String {
    mock.requests().iter().map(|r| r.body.to_string()).collect::<Vec<_>>().join("\n")
}

fn plan_session(project: &str, prompt: &str) -> nucleic_protocol::NewSession {
    let mut request = new_session(project, Backend::ClaudeCode, prompt);
    request.permission_mode = Some("plan".into());
    request
}

const FEEDBACK: &str = "FEEDBACK-7: write b.txt, and say why";

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_plan_is_rejected_revised_approved_into_edit_and_executed() {
    if isolated!("real_claude_plan_is_rejected_revised_approved_into_edit_and_executed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let exit_plan = || Reply::ToolUses {
        text: Some("Here is my plan.".into()),
        calls: vec![ToolCall::new("ExitPlanMode", json!({}))],
    };
    let script = Script::new(vec![
        // Acting before the plan is approved: refused (the session is readonly while it plans).
        Reply::WriteNamedFile,
        Reply::WritePlanFile("# Plan v1\n\n1. Write `a.txt`.".into()),
        exit_plan(),
        Reply::WritePlanFile("# Plan v2\n\n1. Write `b.txt` containing *planned*.".into()),
        exit_plan(),
        Reply::WriteNamedFile,
        Reply::Text("done".into()),
    ]);
    let mock = MockAnthropic::start(script).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = plan_session(&project.project_id, "write b.txt containing planned");
    let id = host.new_session(request, "test").await.unwrap().session_id;
    let mut plans = 0;
    let seen = drive(&host, &id, |a| {
        assert_eq!(a.tool_name, "ExitPlanMode", "only plans reach the person: {a:?}");
        plans += 1;
        match plans {
            1 => vec![Decision::Deny { message: FEEDBACK.into() }],
            _ => vec![Decision::Allow, Decision::ApprovePlan { mode: SessionMode::Edit }],
        }
    })
    .await;

    // The early write was refused by the planning session's readonly mode, without a person.
    let writes = seen.requests("Write");
    let early = seen.resolution(&writes[0].request_id).unwrap();
    assert_eq!((early.decision, early.by.as_str()), (DecisionKind::Deny, "mode:readonly"));
    // The plan file was written, unasked.
    let plan_file = seen.resolution(&writes[1].request_id).unwrap();
    assert_eq!(
        (plan_file.decision, plan_file.by.as_str()),
        (DecisionKind::Allow, "plan:plan-file")
    );
    // Plan v1 shown, rejected with feedback that reached the model; v2 shown and approved.
    let asked = seen.requests("ExitPlanMode");
    let texts: Vec<_> = asked.iter().map(|a| a.input["plan"].as_str().unwrap_or("")).collect();
    assert_eq!(
        texts,
        ["# Plan v1\n\n1. Write `a.txt`.", "# Plan v2\n\n1. Write `b.txt` containing *planned*."]
    );
    let rejected = seen.resolution(&asked[0].request_id).unwrap();
    assert_eq!(rejected.decision, DecisionKind::Deny);
    assert!(
        tool_results_sent(&mock).contains("FEEDBACK-7: write b.txt"),
        "the model saw the feedback"
    );
    // A plain allow of a plan is refused with how to approve one; the plan stayed pending.
    assert!(seen.refused[0].contains("approvePlan"), "{:?}", seen.refused);
    let approved = seen.resolution(&asked[1].request_id).unwrap();
    assert_eq!(
        (approved.decision, approved.mode, approved.by.as_str()),
        (DecisionKind::ApprovePlan, Some(SessionMode::Edit), "person")
    );
    // Executed in edit mode: the write was allowed by the policy (no person) and landed.
    let executed = seen.resolution(&writes[2].request_id).unwrap();
    assert_eq!(executed.decision, DecisionKind::Allow, "{executed:?}");
    assert_ne!(executed.by, "person");
    let worktree = host.session_summary(&id).await.unwrap().worktree.unwrap().path;
    assert_eq!(std::fs::read_to_string(Path::new(&worktree).join("b.txt")).unwrap(), "planned\n");
    // Claude Code left plan mode before the write (it told the model so).
    assert!(tool_results_sent(&mock).contains("You have exited plan mode"), "still in plan mode");
    host.shutdown(Duration::from_secs(2), Duration::from_secs(8)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_empty_plan_is_refused_and_questions_are_answered() {
    if isolated!("real_claude_empty_plan_is_refused_and_questions_are_answered") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = crate::daemon::empty_repo(dir.path());
    let questions = json!({"questions": [
        {"question": "Which color?", "header": "Color", "multiSelect": false,
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]},
        {"question": "Which sizes?", "header": "Sizes", "multiSelect": true,
         "options": [{"label": "S", "description": "small"}, {"label": "M", "description": "medium"},
                     {"label": "L", "description": "large"}]},
    ]});
    let script = Script::new(vec![
        Reply::ToolUses { text: None, calls: vec![ToolCall::new("ExitPlanMode", json!({}))] },
        Reply::ToolUses { text: None, calls: vec![ToolCall::new("AskUserQuestion", questions)] },
        Reply::Text("done".into()),
    ]);
    let mock = MockAnthropic::start(script).await.unwrap();
    let env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let host = Host::open(host_config(&dir.path().join("home"), env, true)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = plan_session(&project.project_id, "ask me first");
    let id = host.new_session(request, "test").await.unwrap().session_id;
    let answer = |q: &str, choices: &[&str], other: Option<&str>| QuestionAnswer {
        question: q.into(),
        choices: choices.iter().map(|c| (*c).to_owned()).collect(),
        other: other.map(str::to_owned),
    };
    let seen = drive(&host, &id, |a| {
        assert_eq!(a.tool_name, "AskUserQuestion", "only the questions reach the person: {a:?}");
        vec![
            // A choice that does not exist: refused, naming the choices.
            Decision::Answer {
                answers: vec![
                    answer("Which color?", &["Green"], None),
                    answer("Which sizes?", &["S"], None),
                ],
            },
            Decision::Answer {
                answers: vec![
                    answer("Which color?", &["Blue"], None),
                    answer("Which sizes?", &["S", "L"], Some("and XL")),
                ],
            },
        ]
    })
    .await;

    // The empty plan: refused by the host, the model told how to go on.
    let plan = seen.requests("ExitPlanMode")[0];
    let refused = seen.resolution(&plan.request_id).unwrap();
    assert_eq!((refused.decision, refused.by.as_str()), (DecisionKind::Deny, "host:empty-plan"));
    let sent = tool_results_sent(&mock);
    assert!(sent.contains("The plan is empty"), "the model saw the guidance");
    // The bad choice was refused clearly; the answer reached the model as Claude Code puts it.
    assert!(
        seen.refused[0].contains(r#""Which color?" has no choice "Green" (choices: Red, Blue"#),
        "{:?}",
        seen.refused
    );
    let ask = seen.requests("AskUserQuestion")[0];
    let answered = seen.resolution(&ask.request_id).unwrap();
    assert_eq!(answered.decision, DecisionKind::Answered);
    assert_eq!(
        answered.updated_input.as_ref().unwrap()["answers"],
        json!({"Which color?": "Blue", "Which sizes?": "S, L, and XL"})
    );
    assert!(
        sent.contains(r#"\"Which color?\"=\"Blue\", \"Which sizes?\"=\"S, L, and XL\""#),
        "the model got the answers"
    );
    host.shutdown(Duration::from_secs(2), Duration::from_secs(8)).await;
}
