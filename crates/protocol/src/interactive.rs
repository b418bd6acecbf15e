//! Plans and questions an agent puts to a person (Claude Code's `ExitPlanMode` and
//! `AskUserQuestion`): what their approval requests carry, and how an answer becomes the tool
//! input the agent expects.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The tool an agent calls to submit its plan (its input carries `plan`, the plan's markdown).
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// The tool an agent calls to ask a person questions with choices.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// Nucleic's policy modes (`docs/policy.md`, "Modes"): what a session may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Reads only: writes, unknown commands and the network are refused.
    Readonly,
    /// Edits in the worktree; unknown commands are asked.
    #[default]
    Edit,
    /// As edit, with more that may be asked (never more that bypasses asking).
    Full,
}

impl SessionMode {
    /// The mode's name on the wire (`readonly`, `edit`, `full`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionMode::Readonly => "readonly",
            SessionMode::Edit => "edit",
            SessionMode::Full => "full",
        }
    }
}

/// A person's answer to one question of an `AskUserQuestion` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QuestionAnswer {
    /// The question's text, exactly as asked.
    pub question: String,
    /// The labels of the chosen options (at most one unless the question is multi-select).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// Free text instead of (or besides) the options: the "Other" answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

/// One question as the agent asked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub question: String,
    pub header: String,
    /// The options' labels, in order.
    pub options: Vec<String>,
    pub multi_select: bool,
}

/// The plan of an `ExitPlanMode` request: its text, when it is not empty. Claude Code puts the
/// plan file's content in `plan` (and the file in `planFilePath`); with no plan file written,
/// the input is `{}`.
pub fn plan_text(input: &Value) -> Option<&str> {
    input.get("plan").and_then(Value::as_str).filter(|p| !p.trim().is_empty())
}

/// What the host tells an agent that submits an empty plan.
pub const EMPTY_PLAN_GUIDANCE: &str = "The plan is empty, so there is nothing to approve. \
    Write your plan to the plan file named in your instructions (the steps you will take, the \
    files you will change, how you will check the result), then call ExitPlanMode again.";

/// The questions of an `AskUserQuestion` input.
pub fn questions(input: &Value) -> Result<Vec<Question>, String> {
    let Some(list) = input.get("questions").and_then(Value::as_array) else {
        return Err("the request has no questions".into());
    };
    list.iter()
        .map(|q| {
            let text = |key: &str| q.get(key).and_then(Value::as_str).unwrap_or_default();
            let question = text("question");
            if question.is_empty() {
                return Err("a question without text".to_owned());
            }
            let options = q
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(|o| o.get("label").and_then(Value::as_str).map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Ok(Question {
                question: question.to_owned(),
                header: text("header").to_owned(),
                options,
                multi_select: q.get("multiSelect").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

/// The input the agent gets for `answers` to the `AskUserQuestion` request `input`: the input
/// with `answers` (question → answer; several choices and the free text joined with ", ", as
/// Claude Code itself joins multi-select answers). Every question must be answered once, with
/// options it has (one unless multi-select) or free text.
pub fn answered_input(input: &Value, answers: &[QuestionAnswer]) -> Result<Value, String> {
    let asked = questions(input)?;
    let mut map = Map::new();
    for answer in answers {
        let Some(q) = asked.iter().find(|q| q.question == answer.question) else {
            let list = asked.iter().map(|q| format!("{:?}", q.question)).collect::<Vec<_>>();
            return Err(format!(
                "no question {:?} was asked (asked: {})",
                answer.question,
                list.join(", ")
            ));
        };
        if map.contains_key(&q.question) {
            return Err(format!("{:?} is answered twice", q.question));
        }
        for choice in &answer.choices {
            if !q.options.contains(choice) {
                return Err(format!(
                    "{:?} has no choice {choice:?} (choices: {}; or answer with free text)",
                    q.question,
                    q.options.join(", ")
                ));
            }
        }
        if answer.choices.len() > 1 && !q.multi_select {
            return Err(format!("{:?} takes one choice, not {}", q.question, answer.choices.len()));
        }
        let mut parts: Vec<&str> = answer.choices.iter().map(String::as_str).collect();
        if let Some(other) = answer.other.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
            parts.push(other);
        }
        if parts.is_empty() {
            return Err(format!("{:?} needs a choice or free text", q.question));
        }
        map.insert(q.question.clone(), Value::String(parts.join(", ")));
    }
    if let Some(missing) = asked.iter().find(|q| !map.contains_key(&q.question)) {
        return Err(format!("{:?} is not answered", missing.question));
    }
    let mut answered = input.clone();
    if let Some(object) = answered.as_object_mut() {
        object.insert("answers".into(), Value::Object(map));
    }
    Ok(answered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked() -> Value {
        json!({"questions": [
            {"question": "Which color?", "header": "Color", "multiSelect": false,
             "options": [{"label": "Red", "description": "r"}, {"label": "Blue", "description": "b"}]},
            {"question": "Which sizes?", "header": "Size", "multiSelect": true,
             "options": [{"label": "S", "description": "s"}, {"label": "M", "description": "m"}]},
        ]})
    }

    fn answer(q: &str, choices: &[&str], other: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            question: q.into(),
            choices: choices.iter().map(|c| (*c).to_owned()).collect(),
            other: other.map(str::to_owned),
        }
    }

    #[test]
    fn answers_become_the_input_claude_code_expects() {
        let out = answered_input(
            &asked(),
            &[answer("Which color?", &["Blue"], None), answer("Which sizes?", &["S", "M"], None)],
        )
        .unwrap();
        assert_eq!(out["answers"], json!({"Which color?": "Blue", "Which sizes?": "S, M"}));
        assert_eq!(out["questions"], asked()["questions"], "the questions are kept");
        let other = answered_input(
            &asked(),
            &[answer("Which color?", &[], Some(" green ")), answer("Which sizes?", &["M"], None)],
        )
        .unwrap();
        assert_eq!(other["answers"]["Which color?"], "green");
    }

    #[test]
    fn bad_answers_are_refused_clearly() {
        let sizes = answer("Which sizes?", &["S"], None);
        let cases = [
            (
                vec![answer("Which color?", &["Green"], None), sizes.clone()],
                "has no choice \"Green\" (choices: Red, Blue",
            ),
            (
                vec![answer("Which color?", &["Red", "Blue"], None), sizes.clone()],
                "takes one choice",
            ),
            (
                vec![answer("Which color?", &[], Some("  ")), sizes.clone()],
                "needs a choice or free text",
            ),
            (vec![sizes.clone()], "\"Which color?\" is not answered"),
            (vec![answer("Why?", &["Red"], None)], "no question \"Why?\" was asked"),
            (vec![sizes.clone(), sizes], "answered twice"),
        ];
        for (answers, want) in cases {
            let err = answered_input(&asked(), &answers).unwrap_err();
            assert!(err.contains(want), "{err} (wanted {want})");
        }
        assert!(answered_input(&json!({}), &[]).unwrap_err().contains("no questions"));
    }

    #[test]
    fn an_empty_plan_has_no_text() {
        assert_eq!(plan_text(&json!({"plan": "# Plan\n1. x"})), Some("# Plan\n1. x"));
        for input in [json!({}), json!({"plan": ""}), json!({"plan": " \n"}), json!({"plan": 3})] {
            assert_eq!(plan_text(&input), None, "{input}");
        }
    }

    #[test]
    fn a_plan_approval_with_an_unknown_mode_does_not_decode() {
        let ok: crate::Decision =
            serde_json::from_value(json!({"type": "approvePlan", "mode": "full"})).unwrap();
        assert_eq!(ok, crate::Decision::ApprovePlan { mode: SessionMode::Full });
        let bad = serde_json::from_value::<crate::Decision>(
            json!({"type": "approvePlan", "mode": "yolo"}),
        );
        let err = bad.unwrap_err().to_string();
        assert!(
            err.contains("unknown variant `yolo`, expected one of `readonly`, `edit`, `full`"),
            "{err}"
        );
        let none = serde_json::from_value::<crate::Decision>(json!({"type": "approvePlan"}));
        assert!(none.unwrap_err().to_string().contains("missing field `mode`"));
    }
}
