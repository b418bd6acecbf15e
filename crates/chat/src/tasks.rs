//! Starting a task: a new session in the chat's project (in a topic or thread of its own where
//! the chat has them), or the next turn of the session the chat selected; and following it.

use nucleic_protocol::{Intent, NewSession, SessionSummary};

use crate::bridge::{Bridge, BridgeError};
use crate::exec::{Failure, Reply, short};
use crate::state::ChatState;

impl Bridge {
    /// Makes `session` the chat's current one (`selected`: tasks go to it) and follows it.
    pub(crate) fn select(
        &mut self,
        chat: &str,
        state: &mut ChatState,
        session: &str,
        selected: bool,
    ) -> Result<(), BridgeError> {
        state.session = Some(session.to_owned());
        state.selected = selected;
        self.state.set_chat(chat, state)?;
        let from = self.state.follow(session, chat, 1)?;
        let _ = self.follow.send((session.to_owned(), from));
        Ok(())
    }

    pub(crate) async fn task(
        &mut self,
        chat: &str,
        state: &mut ChatState,
        task: String,
        plan: bool,
    ) -> Result<Reply, Failure> {
        // A plan always starts a session of its own (it is a permission mode of the start).
        if let (Some(session), true, false) = (state.session.clone(), state.selected, plan) {
            if let Some(pick) = crate::outside::picked(&session) {
                return self.adopt(chat, state, pick, task).await;
            }
            let (task, told) = self.with_attachments(chat, &task)?;
            self.client.send_input(&session, &task).await?;
            self.attachments_told(chat, told)?;
            return Ok(format!("Sent to session {}.", short(&session)).into());
        }
        let project = self.project_of(state).await?;
        let request = NewSession {
            project_id: project,
            base_ref: None,
            backend: self.config.agent,
            model: None,
            // Claude Code's plan mode: the host refuses it, saying so, for agents without one.
            permission_mode: plan.then(|| "plan".to_owned()),
            title: state.next_title.take(),
            mode: None,
            prompt: task,
        };
        let summary: SessionSummary =
            self.client.intent_as(Intent::NewSession(request)).await.map_err(|e| match e {
                nucleic_client::ClientError::BadResult { .. } => {
                    Failure::Say("The host started no session (no summary came back).".into())
                }
                other => other.into(),
            })?;
        // In a forum, the session gets a topic of its own: its approvals and reports go there,
        // so two sessions' never mix, and a task there is its next turn.
        let wants_topic = !self.transport.topics_need_asking() || self.state.threads(chat)?;
        let topic = match wants_topic {
            true => self.transport.open_topic(chat, &summary.title).await,
            false => None,
        };
        if let Some(topic) = topic {
            self.state.set_chat(chat, state)?;
            let mut own = self.state.chat(&topic)?;
            own.project = state.project.clone();
            self.select(&topic, &mut own, &summary.session_id, true)?;
            return Ok(format!(
                "Started session {} in a {} of its own: its approvals and reports go there.",
                short(&summary.session_id),
                self.transport.topic_name()
            )
            .into());
        }
        self.select(chat, state, &summary.session_id, false)?;
        if self.state.needs_you_only(chat)? {
            return Ok(format!("Started session {}.", short(&summary.session_id)).into());
        }
        Ok(format!(
            "Started session {} — {}. Approvals, plans and the end of each turn come here.",
            short(&summary.session_id),
            summary.title
        )
        .into())
    }

    /// The project new tasks go to: the chat's (`/cc project`), else the host's only one.
    pub(crate) async fn project_of(&mut self, state: &ChatState) -> Result<String, Failure> {
        if let Some(project) = &state.project {
            return Ok(project.clone());
        }
        let projects = self.client.list_projects().await?;
        match projects.as_slice() {
            [one] => Ok(one.project_id.clone()),
            [] => Err(Failure::Say(
                "The host has no project yet: add one with `nucleic project add <repo>`.".into(),
            )),
            many => {
                let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
                Err(Failure::Say(format!(
                    "Pick a project first: /cc project <name> ({}).",
                    names.join(", ")
                )))
            }
        }
    }
}
