//! A name the session's egress proxy is asked about becomes an approval of the session: a
//! person answers it like any other (first responder wins) — allow (this session's proxy
//! remembers it), always (added to the project's sandbox domains and to every running proxy of
//! the project) or deny — and an unanswered one times out.

use std::sync::Arc;
use std::time::Duration;

use nucleic_egress::{Answer, AnswerFuture, Question};
use nucleic_protocol::{ApprovalResolved, DecisionKind, EgressAsked, ErrorCode, ErrorEvent};
use nucleic_protocol::{EventKind, ProjectSandbox};

use crate::context::Context;
use crate::error::HostError;
use crate::policy::egress_proxies::AsksEgress;

/// The variable that sets how long an asked destination waits for an answer, in seconds.
pub const EGRESS_ASK_TIMEOUT_VARIABLE: &str = "NUCLEIC_EGRESS_ASK_TIMEOUT";

/// How long an asked destination waits for an answer unless the environment says otherwise.
const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an asked destination waits for an answer: [`EGRESS_ASK_TIMEOUT_VARIABLE`] seconds
/// (at least one), else five minutes.
pub fn egress_ask_timeout() -> Result<Duration, HostError> {
    match std::env::var(EGRESS_ASK_TIMEOUT_VARIABLE) {
        Err(_) => Ok(DEFAULT_ASK_TIMEOUT),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(secs) if secs >= 1 => Ok(Duration::from_secs(secs)),
            _ => Err(HostError::Invalid(format!(
                "{EGRESS_ASK_TIMEOUT_VARIABLE}={text:?}: expected a whole number of seconds (1 or more)"
            ))),
        },
    }
}

/// The allow-list entry an "always" adds for `host:port`: the name alone for the web's ports
/// (it allows 443 and 80), else with its port.
fn entry_for(host: &str, port: u16) -> String {
    match port {
        443 | 80 => host.to_owned(),
        other => format!("{host}:{other}"),
    }
}

impl AsksEgress for Context {
    fn ask(self: Arc<Self>, session: String, question: Question) -> AnswerFuture {
        Box::pin(async move { self.ask_egress(&session, question).await })
    }
}

impl Context {
    /// Puts `question` to session `id` as an `egress` approval and waits for its resolution.
    pub(crate) async fn ask_egress(&self, id: &str, question: Question) -> Answer {
        let Some(session) = self.live_handle(id) else {
            return Answer::NotNow(format!("session {id} has no running agent to ask for"));
        };
        let asked =
            EgressAsked { host: question.host, port: question.port, method: question.method };
        let request_id = format!("egress-{}", uuid::Uuid::new_v4().simple());
        let resolution = match session.ask_host(asked.request(request_id), question.deadline).await
        {
            Ok(resolution) => resolution,
            Err(e) => return Answer::NotNow(format!("it could not be asked: {e}")),
        };
        match resolution.await {
            Ok(resolution) => self.egress_answered(id, &asked, resolution).await,
            Err(_) => Answer::NotNow("the session ended before an answer".into()),
        }
    }

    async fn egress_answered(
        &self,
        id: &str,
        asked: &EgressAsked,
        resolution: ApprovalResolved,
    ) -> Answer {
        let by = &resolution.by;
        let why = resolution.message.as_deref().unwrap_or("no reason given");
        match resolution.decision {
            DecisionKind::Allow => Answer::Allow,
            DecisionKind::AllowAlways => {
                if let Err(e) = self.always_allow(id, &asked.host, asked.port).await {
                    // This connection is still allowed (the person said so); the rule is not kept.
                    let message = format!(
                        "allowing {} always for the project failed (allowed for this session only): {e}",
                        asked.destination()
                    );
                    let kind = ErrorEvent { code: ErrorCode::Host, message, http_status: None };
                    let _ = self.record(id, EventKind::Error(kind)).await;
                }
                Answer::Allow
            }
            DecisionKind::Deny | DecisionKind::DenyAndStop => {
                Answer::Deny(format!("a person ({by}) denied it: {why}"))
            }
            DecisionKind::Cancelled => Answer::NotNow(format!("not answered: {why}")),
            DecisionKind::AllowEdited | DecisionKind::ApprovePlan | DecisionKind::Answered => {
                Answer::Deny(format!("answered {:?}, which does not allow it", resolution.decision))
            }
        }
    }

    /// Adds `host:port` to the sandbox domains of session `id`'s project (as `setProjectSandbox`
    /// does, checked and persisted) and to the running proxies of the project's sessions.
    async fn always_allow(&self, id: &str, host: &str, port: u16) -> Result<(), HostError> {
        let row = self.session_row(id).await?;
        let project = row
            .project_id
            .ok_or_else(|| HostError::Invalid(format!("session {id} belongs to no project")))?;
        let entry = entry_for(host, port);
        // Two answers at once each add theirs (`setProjectSandbox` itself replaces the whole).
        let _one_at_a_time = self.egress.always.lock().await;
        let current = self.project(&project).await?.settings.sandbox;
        if !current.allow_domains.contains(&entry) {
            let mut allow_domains = current.allow_domains.clone();
            allow_domains.push(entry.clone());
            let sandbox = ProjectSandbox { allow_domains, ..current };
            self.set_project_sandbox(&project, sandbox).await?;
        }
        for (session, rules) in self.egress.served_rules() {
            let same = session == id
                || self
                    .session_row(&session)
                    .await
                    .is_ok_and(|r| r.project_id.as_deref() == Some(&project));
            if same {
                rules.add(&entry);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_keeps_the_name_for_web_ports_and_the_port_otherwise() {
        assert_eq!(entry_for("pkg.test", 443), "pkg.test");
        assert_eq!(entry_for("pkg.test", 80), "pkg.test");
        assert_eq!(entry_for("pkg.test", 8443), "pkg.test:8443");
    }
}
