//! Plans and questions in an editor through `nucleic acp` (the official ACP TypeScript SDK's
//! client as the peer, the simulated agent behind): a plan asked with its text and approved
//! into a mode, a question asked with its choices and answered, the agent going on; and an
//! editor that picks what was never offered for a plan or a question decides nothing (the
//! request stays pending and another client still answers it).

use std::path::PathBuf;
use std::time::Duration;

use nucleic_protocol::{ApprovalResolved, DecisionKind, EventKind, SessionSummary};
use serde_json::Value;

use crate::acp::{host_client, peer};
use crate::chat_bridge::{cli, setup};
use crate::support::nucleic;

/// A plan, then a question, then a write (the sim's prompt grammar).
const PLAN_THEN_QUESTION: &str = "plan # Plan\\n1. Ask the color\\n2. Write done.txt then ask Which color? Red / Blue then write done.txt containing ok";

/// The resolutions of a session once there are `n` (up to 10 s; what there is then).
async fn resolved(host: &mut nucleic_client::Client, id: &str, n: usize) -> Vec<ApprovalResolved> {
    let mut found = resolutions(host, id).await;
    for _ in 0..100 {
        if found.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        found = resolutions(host, id).await;
    }
    found
}

/// The resolutions in a session's transcript so far.
async fn resolutions(host: &mut nucleic_client::Client, id: &str) -> Vec<ApprovalResolved> {
    let last = host.session(id).await.unwrap().last_seq;
    let events = host.events_window(id, 1, last, 100_000, Duration::from_secs(30)).await.unwrap();
    events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ApprovalResolved(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn worktree(summary: &SessionSummary) -> PathBuf {
    PathBuf::from(&summary.worktree.as_ref().unwrap().path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_and_a_question_are_asked_and_answered_in_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let (bin, home_s) = (nucleic(), home.to_str().unwrap().to_owned());
    let (bin, cwd) = (bin.to_str().unwrap().to_owned(), dir.path().join("repo"));
    let cwd = cwd.to_str().unwrap().to_owned();

    let report = peer(&["interactive", &bin, &home_s, &cwd, PLAN_THEN_QUESTION]).await;
    eprintln!("editor: {report}");
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{report}");
    // The plan: its text, the modes to execute it in, or keep planning.
    let plan = &asked[0];
    assert_eq!(
        (plan["title"].as_str(), plan["kind"].as_str()),
        (Some("Plan"), Some("switch_mode"))
    );
    assert!(plan["text"].as_str().unwrap().starts_with("# Plan\n1. Ask the color"), "{plan}");
    let ids: Vec<&str> =
        plan["options"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["approve-plan:edit", "approve-plan:full", "approve-plan:readonly", "keep-planning"]
    );
    // The question: its text, its choices by name, and decline.
    let question = &asked[1];
    assert_eq!(question["text"], "Which color?", "{question}");
    let names: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Red", "Blue", "Decline to answer"], "{question}");
    assert_eq!(question["answered"], "choice:1");
    assert_eq!(question["meta"]["question"], "Which color?");
    assert_eq!(asked[2]["answered"], "allow", "{report}");
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report}");

    // The effect: the plan approved into edit, the question answered Blue, the agent went on.
    let id = report["sessionId"].as_str().unwrap();
    let mut host = host_client(&home).await;
    let resolved = resolved(&mut host, id, 3).await;
    let kinds: Vec<DecisionKind> = resolved.iter().map(|r| r.decision).collect();
    assert_eq!(kinds, [DecisionKind::ApprovePlan, DecisionKind::Answered, DecisionKind::Allow]);
    assert_eq!(resolved[0].mode.map(|m| m.as_str()), Some("edit"), "{resolved:?}");
    let answers = &resolved[1].updated_input.as_ref().unwrap()["answers"];
    assert_eq!(answers, &serde_json::json!({"Which color?": "Blue"}), "{resolved:?}");
    let summary = host.session(id).await.unwrap();
    let done = std::fs::read_to_string(worktree(&summary).join("done.txt")).unwrap();
    assert_eq!(done.trim(), "ok");
}

/// One editor answering the first request of `prompt` with `option`: the session, the first
/// request asked (with the options it offered), and how many were asked.
async fn forged(
    home: &std::path::Path,
    cwd: &str,
    prompt: &str,
    option: &str,
) -> (String, Value, usize) {
    let (bin, home_s) = (nucleic(), home.to_str().unwrap().to_owned());
    let bin = bin.to_str().unwrap().to_owned();
    let report = peer(&["forged", &bin, &home_s, cwd, prompt, option]).await;
    eprintln!("editor answering {option:?}: {report}");
    let asked = report["permissions"].as_array().unwrap();
    (report["sessionId"].as_str().unwrap().to_owned(), asked[0].clone(), asked.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_choosing_what_was_not_offered_for_a_plan_or_a_question_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let cwd = dir.path().join("repo").to_str().unwrap().to_owned();
    let mut host = host_client(&home).await;
    let plan_prompt = "plan # Plan\\n1. Write plan.txt then write plan.txt containing ok";
    let question_prompt = "ask Which color? Red / Blue then write color.txt containing ok";

    // A plain "allow" for a plan (it would approve it with no mode chosen), a choice past the
    // question's last, and "allow-always" for a question (it would answer nothing): each
    // leaves the request pending, nothing resolved, nothing written.
    for (prompt, option, file) in [
        (plan_prompt, "allow", "plan.txt"),
        (plan_prompt, "approve-plan:yolo", "plan.txt"),
        (question_prompt, "choice:2", "color.txt"),
        (question_prompt, "allow-always", "color.txt"),
    ] {
        let (id, asked, count) = forged(&home, &cwd, prompt, option).await;
        assert_eq!(count, 1, "{option}: asked more after it");
        let offered: Vec<&str> =
            asked["options"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
        assert!(!offered.contains(&option), "{option} was offered: {offered:?}");
        let summary = host.session(&id).await.unwrap();
        assert_eq!(summary.pending_approvals, 1, "{option}: {summary:?}");
        assert!(resolutions(&mut host, &id).await.is_empty(), "{option} decided something");
        assert!(!worktree(&summary).join(file).exists(), "{option}: the agent went on");

        // Still answerable: another Nucleic client answers it, and the agent goes on.
        let request = asked["requestID"].as_str().unwrap();
        let answer: Vec<&str> = if prompt == plan_prompt {
            vec!["session", "approve", &id, request, "--mode", "edit"]
        } else {
            vec!["session", "answer", &id, "Blue"]
        };
        let (code, _, err) = cli(&home, &answer).await;
        assert_eq!(code, 0, "{err}");
        let kinds: Vec<DecisionKind> =
            resolved(&mut host, &id, 1).await.iter().map(|r| r.decision).collect();
        assert!(
            matches!(kinds[..], [DecisionKind::ApprovePlan | DecisionKind::Answered]),
            "{kinds:?}"
        );
    }

    // The control: the same editor answering with an offered option decides at once.
    let (id, _, _) = forged(&home, &cwd, plan_prompt, "approve-plan:readonly").await;
    let landed = resolutions(&mut host, &id).await;
    assert_eq!(landed.len(), 1, "the offered option did not land within the wait");
    assert_eq!(landed[0].mode.map(|m| m.as_str()), Some("readonly"));
}
