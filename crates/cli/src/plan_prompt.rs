//! Plans and questions on the terminal (`attach`, `nucleic run`): the plan printed and approved
//! in a mode or rejected with feedback; each question answered by its options' numbers or
//! labels, or free text.

use nucleic_protocol::{ApprovalRequested, Decision, SessionMode};

/// The decision for a plan from what was typed: a mode (`readonly`, `edit`, `full`; `y` is
/// edit) approves it, anything else rejects it with the text as feedback.
pub fn plan_decision(line: &str) -> Decision {
    let (word, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
    let mode = match word.to_ascii_lowercase().as_str() {
        "readonly" => Some(SessionMode::Readonly),
        "y" | "yes" | "edit" => Some(SessionMode::Edit),
        "full" => Some(SessionMode::Full),
        _ => None,
    };
    match mode {
        Some(mode) => Decision::ApprovePlan { mode },
        None => {
            let feedback = if word.eq_ignore_ascii_case("n") || word.eq_ignore_ascii_case("no") {
                rest.trim()
            } else {
                line.trim()
            };
            let message = if feedback.is_empty() { "the plan was rejected" } else { feedback };
            Decision::Deny { message: message.to_owned() }
        }
    }
}

/// The plan's text and the prompt for it.
pub fn plan_prompt(request: &ApprovalRequested) -> String {
    let plan = nucleic_protocol::plan_text(&request.input).unwrap_or("(empty plan)");
    format!(
        "\n--- plan ---\n{plan}\n------------\nApprove and run it in readonly / edit / full mode, or [n]o <feedback>: "
    )
}

/// What to print before reading the answer to question `index` of `request`.
pub fn question_prompt(request: &ApprovalRequested, index: usize) -> Option<String> {
    let questions = nucleic_protocol::questions(&request.input).ok()?;
    let q = questions.get(index)?;
    let options: Vec<String> =
        q.options.iter().enumerate().map(|(i, o)| format!("  {}. {o}", i + 1)).collect();
    let how =
        if q.multi_select { "numbers or labels, \",\"-separated" } else { "a number or label" };
    Some(format!("\n{}\n{}\nAnswer ({how}, or other:<text>): ", q.question, options.join("\n")))
}

/// An answer typed for question `index`: option numbers become their labels.
pub fn typed_answer(request: &ApprovalRequested, index: usize, line: &str) -> String {
    let line = line.trim();
    let Ok(questions) = nucleic_protocol::questions(&request.input) else {
        return line.to_owned();
    };
    let Some(q) = questions.get(index) else { return line.to_owned() };
    if line.starts_with("other:") || q.options.iter().any(|o| o == line) {
        return line.to_owned();
    }
    line.split(',')
        .map(|part| {
            let part = part.trim();
            match part.parse::<usize>() {
                Ok(n) if n >= 1 && n <= q.options.len() => q.options[n - 1].clone(),
                _ => part.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(tool: &str, input: serde_json::Value) -> ApprovalRequested {
        ApprovalRequested {
            request_id: "r".into(),
            tool_call_id: None,
            tool_name: tool.into(),
            input,
            description: None,
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }
    }

    #[test]
    fn a_plan_is_approved_in_a_mode_or_rejected_with_feedback() {
        assert_eq!(plan_decision("edit"), Decision::ApprovePlan { mode: SessionMode::Edit });
        assert_eq!(plan_decision("y"), Decision::ApprovePlan { mode: SessionMode::Edit });
        assert_eq!(plan_decision("FULL"), Decision::ApprovePlan { mode: SessionMode::Full });
        assert_eq!(
            plan_decision("n add the tests"),
            Decision::Deny { message: "add the tests".into() }
        );
        assert_eq!(
            plan_decision("please add the tests"),
            Decision::Deny { message: "please add the tests".into() }
        );
        assert_eq!(plan_decision("n"), Decision::Deny { message: "the plan was rejected".into() });
        let shown = plan_prompt(&request("ExitPlanMode", json!({"plan": "# P\n1. x"})));
        assert!(shown.contains("# P\n1. x"), "{shown}");
    }

    #[test]
    fn numbers_become_labels() {
        let q = request(
            "AskUserQuestion",
            json!({"questions": [{"question": "Sizes?", "header": "S", "multiSelect": true,
                "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}]}]}),
        );
        assert_eq!(typed_answer(&q, 0, "1, 3"), "S,L");
        assert_eq!(typed_answer(&q, 0, "M"), "M");
        assert_eq!(typed_answer(&q, 0, "other: XL"), "other: XL");
        assert_eq!(typed_answer(&q, 0, "9"), "9");
        assert!(question_prompt(&q, 0).unwrap().contains("  2. M"));
        assert!(question_prompt(&q, 1).is_none());
    }
}
