//! A session's pending approvals for the CLI: found by folding its events (requested minus
//! resolved) up to the summary's last seq, shown by `session show`, and picked by `session
//! approve|deny` when no request id is given.

use std::time::Duration;

use anyhow::{Context, bail};
use nucleic_protocol::{
    ApprovalRequested, ClientMessage, HostMessage, QuestionAnswer, SessionSummary,
};
use serde_json::{Value, json};

use crate::render::summarize_input;
use nucleic_client::Client;

/// How long reading a session's events for its approvals may take.
const READ_DEADLINE: Duration = Duration::from_secs(30);

/// The approvals of `summary`'s session still waiting for a decision, in request order.
pub async fn pending(
    daemon: &mut Client,
    summary: &SessionSummary,
) -> anyhow::Result<Vec<ApprovalRequested>> {
    if summary.pending_approvals == 0 {
        return Ok(Vec::new());
    }
    Ok(daemon.pending_approvals(&summary.session_id, summary.last_seq, READ_DEADLINE).await?)
}

/// The one pending approval of a session; refuses when there is none or more than one.
pub async fn the_only_one(daemon: &mut Client, summary: &SessionSummary) -> anyhow::Result<String> {
    only(&pending(daemon, summary).await?, &summary.session_id)
}

/// The request id of the only approval in `open`, or why there is not exactly one.
pub fn only(open: &[ApprovalRequested], session_id: &str) -> anyhow::Result<String> {
    match open {
        [one] => Ok(one.request_id.clone()),
        [] => bail!("session {session_id} has no pending approval"),
        many => {
            let list = many.iter().map(line).collect::<Vec<_>>().join("\n  ");
            bail!(
                "session {session_id} has {} pending approvals; name the one to answer:\n  {list}",
                many.len()
            )
        }
    }
}

/// `<request id>  <tool> <input summary>` on one line.
pub fn line(a: &ApprovalRequested) -> String {
    let risk = a
        .risk
        .map(|r| {
            format!("  [{}]", serde_json::to_value(r).unwrap_or_default().as_str().unwrap_or("?"))
        })
        .unwrap_or_default();
    match nucleic_protocol::EgressAsked::of(a) {
        Some(asked) => {
            format!("{}  network: allow access to {}?{risk}", a.request_id, asked.destination())
        }
        None => {
            format!("{}  {} {}{risk}", a.request_id, a.tool_name, summarize_input(&a.input, 100))
        }
    }
}

/// What `session show` prints of an approval: its id, tool, input in one line, and the
/// agent's description and the path that triggered the ask when it said.
pub fn as_json(a: &ApprovalRequested) -> Value {
    let mut v = json!({
        "requestID": a.request_id,
        "toolName": a.tool_name,
        "input": summarize_input(&a.input, 200),
    });
    if let Some(d) = &a.description {
        v["description"] = json!(d);
    }
    if let Some(p) = &a.blocked_path {
        v["blockedPath"] = json!(p);
    }
    if let Some(risk) = a.risk {
        v["risk"] = json!(risk);
        v["riskReasons"] = json!(a.risk_reasons);
    }
    v
}

/// The answers to the questions of `asked` (an AskUserQuestion request) from the command
/// line: one per question, in order — an option's label, labels joined by ",", or
/// "other:<text>". Whether the choices exist is the host's check (it names the choices).
pub fn answers(asked: &ApprovalRequested, given: &[String]) -> anyhow::Result<Vec<QuestionAnswer>> {
    if asked.tool_name != nucleic_protocol::ASK_USER_QUESTION {
        bail!(
            "request {} is a {} approval, not questions: use approve or deny",
            asked.request_id,
            asked.tool_name
        );
    }
    let questions = nucleic_protocol::questions(&asked.input).map_err(anyhow::Error::msg)?;
    if questions.len() != given.len() {
        let list: Vec<String> = questions.iter().map(|q| format!("{:?}", q.question)).collect();
        bail!(
            "{} question(s) asked ({}), {} answer(s) given: give one per question, in order",
            questions.len(),
            list.join(", "),
            given.len()
        );
    }
    Ok(questions
        .iter()
        .zip(given)
        .map(|(q, text)| {
            let (choices, other) = if let Some(other) = text.strip_prefix("other:") {
                (Vec::new(), Some(other.trim().to_owned()))
            } else if q.options.contains(text) {
                (vec![text.clone()], None)
            } else {
                (text.split(',').map(|c| c.trim().to_owned()).collect(), None)
            };
            QuestionAnswer { question: q.question.clone(), choices, other }
        })
        .collect())
}

/// The summary of session `session_id` (archived ones included).
pub async fn summary(daemon: &mut Client, session_id: &str) -> anyhow::Result<SessionSummary> {
    let message_id = daemon.id();
    let request =
        ClientMessage::ListSessions { message_id, project_id: None, include_archived: true };
    match daemon.request(request).await? {
        HostMessage::Sessions { sessions, .. } => sessions
            .into_iter()
            .find(|s| s.session_id == session_id)
            .with_context(|| format!("no session {session_id}")),
        other => bail!("unexpected reply: {}", nucleic_client::describe(&other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(id: &str, path: &str) -> ApprovalRequested {
        ApprovalRequested {
            request_id: id.into(),
            tool_call_id: None,
            tool_name: "Write".into(),
            input: json!({"file_path": path, "content": "x"}),
            description: None,
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }
    }

    #[test]
    fn only_a_single_pending_approval_is_picked_without_an_id() {
        assert_eq!(only(&[ask("r1", "a.txt")], "s").unwrap(), "r1");
        let none = only(&[], "s").unwrap_err().to_string();
        assert_eq!(none, "session s has no pending approval");
        let two = only(&[ask("r1", "a.txt"), ask("r2", "b.txt")], "s").unwrap_err().to_string();
        assert!(two.starts_with("session s has 2 pending approvals; name the one"), "{two}");
        assert!(
            two.contains("r1  Write file_path=a.txt") && two.contains("r2  Write file_path=b.txt")
        );
    }

    #[test]
    fn a_network_question_says_what_it_asks() {
        let asked = nucleic_protocol::EgressAsked {
            host: "pkg.test".into(),
            port: 8443,
            method: "CONNECT".into(),
        };
        let line = line(&asked.request("egress-1".into()));
        assert_eq!(line, "egress-1  network: allow access to pkg.test:8443?  [medium]");
    }

    #[test]
    fn answers_are_read_one_per_question_in_order() {
        let mut asked = ask("q1", "x");
        asked.tool_name = "AskUserQuestion".into();
        asked.input = json!({"questions": [
            {"question": "Color?", "header": "C", "multiSelect": false,
             "options": [{"label": "Red, dark"}, {"label": "Blue"}]},
            {"question": "Sizes?", "header": "S", "multiSelect": true,
             "options": [{"label": "S"}, {"label": "M"}]},
            {"question": "Name?", "header": "N", "multiSelect": false,
             "options": [{"label": "a"}, {"label": "b"}]},
        ]});
        let given: Vec<String> = ["Red, dark", "S, M", "other: Nucleic"].map(String::from).into();
        let got = answers(&asked, &given).unwrap();
        let shape: Vec<(&str, Vec<&str>, Option<&str>)> = got
            .iter()
            .map(|a| {
                (
                    a.question.as_str(),
                    a.choices.iter().map(String::as_str).collect(),
                    a.other.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("Color?", vec!["Red, dark"], None),
                ("Sizes?", vec!["S", "M"], None),
                ("Name?", vec![], Some("Nucleic"))
            ]
        );
        let few = answers(&asked, &["Blue".into()]).unwrap_err().to_string();
        assert!(few.starts_with("3 question(s) asked"), "{few}");
        let write = answers(&ask("w1", "a.txt"), &["x".into()]).unwrap_err().to_string();
        assert!(write.contains("not questions"), "{write}");
    }
}
