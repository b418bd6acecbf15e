//! Pending approvals asked as `session/request_permission`, withdrawable until answered: a tool
//! call with allow and deny options, a plan with its modes, questions one at a time; the
//! editor's choice becomes the decision, as this connection.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use nucleic_protocol::{
    ASK_USER_QUESTION, ApprovalRequested, Decision, EXIT_PLAN_MODE, Question, plan_text, questions,
};
use serde_json::{Value, json};

use crate::agent::Shared;
use crate::follow::Attached;
use crate::interactive::{
    Choice, choice, plan_content, plan_decision, plan_options, question_fields, question_options,
};
use crate::translate::{decision_for, diffs, permission_options, title, tool_kind};

type Editor = ConnectionTo<agent_client_protocol::Client>;

/// Asks the editor about `approval` in a task of its own; the answer is decided as this
/// connection, unless another client answered first (the request is then withdrawn).
pub(crate) fn ask(
    shared: &Arc<Shared>,
    attached: &Arc<Attached>,
    cx: &Editor,
    approval: &ApprovalRequested,
) {
    let asking = Asking {
        shared: shared.clone(),
        attached: attached.clone(),
        cx: cx.clone(),
        approval: approval.clone(),
    };
    match approval.tool_name.as_str() {
        EXIT_PLAN_MODE => asking.plan(),
        ASK_USER_QUESTION => asking.questions(),
        _ => asking.call(),
    }
}

struct Asking {
    shared: Arc<Shared>,
    attached: Arc<Attached>,
    cx: Editor,
    approval: ApprovalRequested,
}

impl Asking {
    fn call_id(&self) -> String {
        self.approval.tool_call_id.clone().unwrap_or_else(|| self.approval.request_id.clone())
    }

    /// The request's `_meta.nucleic`: its Nucleic id, risk and description, and `more`.
    fn meta(&self, more: Value) -> Option<acp::Meta> {
        let a = &self.approval;
        let mut about = json!({
            "requestID": a.request_id,
            "risk": a.risk,
            "riskReasons": a.risk_reasons,
            "description": a.description,
        });
        if let (Some(about), Value::Object(more)) = (about.as_object_mut(), more) {
            about.extend(more);
        }
        match json!({ "nucleic": about }) {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// Sends one permission request and keeps it withdrawable; for a later question (`first`
    /// false), only while the approval was not answered elsewhere meanwhile.
    fn send(
        &self,
        fields: acp::ToolCallUpdateFields,
        options: Vec<acp::PermissionOption>,
        more: Value,
        first: bool,
    ) -> Option<agent_client_protocol::v1::SentRequest<acp::RequestPermissionResponse>> {
        let id = &self.approval.request_id;
        let request = acp::RequestPermissionRequest::new(
            self.attached.session_id.clone(),
            acp::ToolCallUpdate::new(self.call_id(), fields),
            options,
        )
        .meta(self.meta(more));
        let mut asks = self.attached.asks.lock().ok()?;
        if !first && !asks.contains_key(id) {
            return None;
        }
        let sent = self.cx.send_request(request);
        asks.insert(id.clone(), sent.cancellation_handle());
        Some(sent)
    }

    /// The option the editor chose; `None` when the request was withdrawn (answered
    /// elsewhere), refused by the editor, or its turn cancelled: the approval stays for others.
    async fn chosen(
        sent: agent_client_protocol::v1::SentRequest<acp::RequestPermissionResponse>,
    ) -> Option<String> {
        match sent.block_task().await.ok()?.outcome {
            acp::RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.to_string()),
            _ => None,
        }
    }

    /// Done asking: the approval is no longer withdrawn by this connection.
    fn done(&self) {
        if let Ok(mut asks) = self.attached.asks.lock() {
            asks.remove(&self.approval.request_id);
        }
    }

    async fn decide(&self, decision: Decision) {
        let (id, request_id) = (&self.attached.session_id, &self.approval.request_id);
        let decided =
            self.shared.requests.lock().await.decide(id, request_id, decision, false).await;
        if let Err(e) = decided {
            eprintln!("nucleic acp: answering {request_id} of {id}: {e}");
        }
    }

    /// A tool call: allow (once or always) or deny.
    fn call(self) {
        let a = &self.approval;
        let name = a.tool_name.as_str();
        let content = diffs(name, &a.input);
        let fields = acp::ToolCallUpdateFields::new()
            .title(title(name, &a.input))
            .kind(tool_kind(name))
            .status(acp::ToolCallStatus::Pending)
            .content((!content.is_empty()).then_some(content))
            .raw_input(a.input.clone());
        let Some(sent) = self.send(fields, permission_options(), Value::Null, true) else { return };
        tokio::spawn(async move {
            let chosen = Asking::chosen(sent).await;
            self.done();
            let Some(chosen) = chosen else { return };
            match decision_for(&chosen) {
                Some(decision) => self.decide(decision).await,
                None => {
                    eprintln!("nucleic acp: the client chose {chosen:?}, which was not offered")
                }
            }
        });
    }

    /// A plan: approved into a mode, or sent back to keep planning.
    fn plan(self) {
        let a = &self.approval;
        let plan = plan_text(&a.input).unwrap_or_default();
        let fields = acp::ToolCallUpdateFields::new()
            .title("Plan")
            .kind(acp::ToolKind::SwitchMode)
            .status(acp::ToolCallStatus::Pending)
            .content(plan_content(plan))
            .raw_input(a.input.clone());
        let more = json!({ "plan": plan });
        let Some(sent) = self.send(fields, plan_options(), more, true) else { return };
        tokio::spawn(async move {
            let chosen = Asking::chosen(sent).await;
            self.done();
            let Some(chosen) = chosen else { return };
            match plan_decision(&chosen) {
                Some(decision) => self.decide(decision).await,
                None => {
                    eprintln!("nucleic acp: the client chose {chosen:?} for a plan, not offered")
                }
            }
        });
    }

    /// Asks question `i` of `asked` (`first`: the first of them).
    fn question(
        &self,
        asked: &[Question],
        i: usize,
        first: bool,
    ) -> Option<agent_client_protocol::v1::SentRequest<acp::RequestPermissionResponse>> {
        let (q, of) = (asked.get(i)?, asked.len());
        let more = json!({
            "question": q.question, "index": i, "of": of, "multiSelect": q.multi_select,
        });
        let fields = question_fields(q, i, of, &self.approval.input);
        self.send(fields, question_options(q), more, first)
    }

    /// Questions, one request each; the answers are sent together once every one is chosen.
    /// A choice never offered decides nothing and asks no further: the questions stay open.
    fn questions(self) {
        let asked = match questions(&self.approval.input) {
            Ok(asked) if !asked.is_empty() => asked,
            // Nothing the editor could answer: another client answers or declines it.
            Ok(_) | Err(_) => return,
        };
        let Some(mut sent) = self.question(&asked, 0, true) else { return };
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for (i, question) in asked.iter().enumerate() {
                let Some(chosen) = Asking::chosen(sent).await else { return self.done() };
                match choice(question, &chosen) {
                    Choice::Answer(answer) => answers.push(answer),
                    Choice::Decline(decision) => {
                        self.done();
                        return self.decide(decision).await;
                    }
                    Choice::NotOffered => {
                        let q = &question.question;
                        eprintln!(
                            "nucleic acp: the client chose {chosen:?} for {q:?}, not offered"
                        );
                        return self.done();
                    }
                }
                if i + 1 == asked.len() {
                    break;
                }
                // Answered elsewhere meanwhile: nothing more is asked.
                let Some(next) = self.question(&asked, i + 1, false) else { return };
                sent = next;
            }
            self.done();
            self.decide(Decision::Answer { answers }).await;
        });
    }
}
