//! Plans and questions asked in the editor: an `ExitPlanMode` request as a permission whose
//! options approve the plan into a mode or keep planning; an `AskUserQuestion` request one
//! question at a time, each question's choices its options. Pure: the follower asks.

use agent_client_protocol::v1::schema as acp;
use nucleic_protocol::{Decision, Question, QuestionAnswer, SessionMode};
use serde_json::Value;

/// The option that sends a plan back to the agent.
const KEEP_PLANNING: &str = "keep-planning";

/// The option that declines a question.
const DECLINE: &str = "decline";

/// What the agent is told when its plan is sent back from the editor.
const KEPT_PLANNING: &str = "The plan was not approved in the editor: keep planning.";

/// The modes a plan can be approved into, in the order offered.
const PLAN_MODES: [(SessionMode, &str); 3] = [
    (SessionMode::Edit, "Approve the plan: execute it in edit mode"),
    (SessionMode::Full, "Approve the plan: execute it in full mode"),
    (SessionMode::Readonly, "Approve the plan: execute it read-only"),
];

fn plan_option_id(mode: SessionMode) -> String {
    format!("approve-plan:{}", mode.as_str())
}

/// The options a plan offers: approve into each mode, or keep planning.
pub(crate) fn plan_options() -> Vec<acp::PermissionOption> {
    use acp::PermissionOptionKind as K;
    let mut options: Vec<acp::PermissionOption> = PLAN_MODES
        .iter()
        .map(|(mode, name)| acp::PermissionOption::new(plan_option_id(*mode), *name, K::AllowOnce))
        .collect();
    options.push(acp::PermissionOption::new(KEEP_PLANNING, "Keep planning", K::RejectOnce));
    options
}

/// The decision a plan option makes; `None` for an id never offered for a plan.
pub(crate) fn plan_decision(option_id: &str) -> Option<Decision> {
    if option_id == KEEP_PLANNING {
        return Some(Decision::Deny { message: KEPT_PLANNING.to_owned() });
    }
    PLAN_MODES
        .iter()
        .find(|(mode, _)| plan_option_id(*mode) == option_id)
        .map(|(mode, _)| Decision::ApprovePlan { mode: *mode })
}

/// The plan as a tool call's content (its markdown as text).
pub(crate) fn plan_content(plan: &str) -> Vec<acp::ToolCallContent> {
    let block = acp::ContentBlock::from(plan.to_owned());
    vec![acp::ToolCallContent::Content(acp::Content::new(block))]
}

/// The options of one question: its choices (by index), then decline.
pub(crate) fn question_options(question: &Question) -> Vec<acp::PermissionOption> {
    use acp::PermissionOptionKind as K;
    let mut options: Vec<acp::PermissionOption> = question
        .options
        .iter()
        .enumerate()
        .map(|(i, label)| {
            acp::PermissionOption::new(format!("choice:{i}"), label.clone(), K::AllowOnce)
        })
        .collect();
    options.push(acp::PermissionOption::new(DECLINE, "Decline to answer", K::RejectOnce));
    options
}

/// What choosing `option_id` for `question` means.
#[derive(Debug, PartialEq)]
pub(crate) enum Choice {
    /// One of the question's choices.
    Answer(QuestionAnswer),
    /// The person declines: the request is denied.
    Decline(Decision),
    /// An id this question never offered: nothing is decided.
    NotOffered,
}

/// The answer `option_id` gives to `question`.
pub(crate) fn choice(question: &Question, option_id: &str) -> Choice {
    if option_id == DECLINE {
        let message = "the questions were declined in the editor".to_owned();
        return Choice::Decline(Decision::Deny { message });
    }
    let label = option_id
        .strip_prefix("choice:")
        .filter(|i| i.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| question.options.get(i));
    match label {
        Some(label) => Choice::Answer(QuestionAnswer {
            question: question.question.clone(),
            choices: vec![label.clone()],
            other: None,
        }),
        None => Choice::NotOffered,
    }
}

/// The tool call a question is asked as: its header as title, its text as content.
pub(crate) fn question_fields(
    question: &Question,
    index: usize,
    of: usize,
    input: &Value,
) -> acp::ToolCallUpdateFields {
    let title = match (question.header.trim(), of) {
        ("", 1) => "Question".to_owned(),
        ("", _) => format!("Question {} of {of}", index + 1),
        (header, 1) => header.to_owned(),
        (header, _) => format!("{header} ({} of {of})", index + 1),
    };
    let text = if question.multi_select {
        format!("{} (one choice here; several from another Nucleic client)", question.question)
    } else {
        question.question.clone()
    };
    let block = acp::ContentBlock::from(text);
    acp::ToolCallUpdateFields::new()
        .title(title)
        .kind(acp::ToolKind::Other)
        .status(acp::ToolCallStatus::Pending)
        .content(vec![acp::ToolCallContent::Content(acp::Content::new(block))])
        .raw_input(input.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn color() -> Question {
        Question {
            question: "Which color?".into(),
            header: "Color".into(),
            options: vec!["Red".into(), "Blue".into()],
            multi_select: false,
        }
    }

    #[test]
    fn plan_options_approve_into_each_mode_or_keep_planning() {
        let ids: Vec<String> = plan_options().iter().map(|o| o.option_id.0.to_string()).collect();
        assert_eq!(
            ids,
            ["approve-plan:edit", "approve-plan:full", "approve-plan:readonly", "keep-planning"]
        );
        for id in &ids[..3] {
            let mode = id.strip_prefix("approve-plan:").unwrap();
            let Some(Decision::ApprovePlan { mode: got }) = plan_decision(id) else {
                panic!("{id} does not approve the plan")
            };
            assert_eq!(got.as_str(), mode);
        }
        assert!(matches!(plan_decision("keep-planning"), Some(Decision::Deny { .. })));
    }

    #[test]
    fn ids_never_offered_for_a_plan_decide_nothing() {
        for id in
            ["allow", "allow-always", "deny", "approve-plan:yolo", "approve-plan:", "choice:0"]
        {
            assert_eq!(plan_decision(id), None, "{id}");
        }
    }

    #[test]
    fn a_choice_is_the_label_at_its_index_and_anything_else_decides_nothing() {
        let q = color();
        let ids: Vec<String> =
            question_options(&q).iter().map(|o| o.option_id.0.to_string()).collect();
        assert_eq!(ids, ["choice:0", "choice:1", "decline"]);
        let Choice::Answer(answer) = choice(&q, "choice:1") else { panic!("no answer") };
        assert_eq!(
            (answer.question.as_str(), answer.choices),
            ("Which color?", vec!["Blue".into()])
        );
        assert!(matches!(choice(&q, "decline"), Choice::Decline(Decision::Deny { .. })));
        for id in ["choice:2", "choice:-1", "choice:+1", "choice: 1", "choice:", "allow", "Blue"] {
            assert_eq!(choice(&q, id), Choice::NotOffered, "{id}");
        }
    }

    #[test]
    fn a_question_is_titled_by_its_header_and_says_when_it_takes_one_choice_here() {
        let mut q = color();
        let one = serde_json::to_value(question_fields(&q, 0, 1, &Value::Null)).unwrap();
        assert_eq!(one["title"], "Color");
        let two = serde_json::to_value(question_fields(&q, 1, 2, &Value::Null)).unwrap();
        assert_eq!(two["title"], "Color (2 of 2)");
        q.multi_select = true;
        let many = serde_json::to_value(question_fields(&q, 0, 1, &Value::Null)).unwrap();
        assert!(
            many["content"][0]["content"]["text"].as_str().unwrap().contains("one choice here")
        );
    }
}
