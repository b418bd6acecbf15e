//! Sessions made outside Nucleic (the person's own `claude` or `codex` in a terminal), from a
//! chat: `/cc sessions` lists them after the chat's own, `/cc resume N` picks one, and the
//! first task or `/cc say` after it carries it on as a Nucleic session (adopted: a worktree of
//! its own, its history first, the original left as it was).

use nucleic_protocol::{Intent, OutsideSessions, SessionSummary};

use crate::bridge::Bridge;
use crate::exec::{Failure, Reply, short};
use crate::state::ChatState;

/// How an outside session is kept in a chat's listing and as its pick.
const MARK: &str = "outside:";
/// Outside sessions listed at most.
const LISTED: usize = 10;

/// An outside session picked in a chat: its project and the CLI's session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Picked {
    pub project: String,
    pub id: String,
}

/// The pick a listing entry or a chat's session names, if it is an outside session.
pub(crate) fn picked(entry: &str) -> Option<Picked> {
    let (project, id) = entry.strip_prefix(MARK)?.split_once('/')?;
    Some(Picked { project: project.to_owned(), id: id.to_owned() })
}

fn entry(project: &str, id: &str) -> String {
    format!("{MARK}{project}/{id}")
}

impl Bridge {
    /// The adoptable outside sessions of the chat's project, newest first: their listing
    /// entries and the lines that show them, numbered from `first`. A project the chat cannot
    /// name, or a search that failed, lists none and says why.
    pub(crate) async fn outside_listing(
        &mut self,
        state: &ChatState,
        first: usize,
    ) -> (Vec<String>, Vec<String>) {
        let Ok(project) = self.project_of(state).await else { return (Vec::new(), Vec::new()) };
        let intent = Intent::OutsideSessions { project_id: project.clone() };
        let found: OutsideSessions = match self.client.intent_as(intent).await {
            Ok(found) => found,
            Err(e) => {
                return (Vec::new(), vec![format!("(sessions outside Nucleic not listed: {e})")]);
            }
        };
        let mut sessions: Vec<_> = found.sessions.into_iter().filter(|s| s.adoptable).collect();
        sessions.sort_by(|a, b| b.last_at.cmp(&a.last_at));
        sessions.truncate(LISTED);
        let entries = sessions.iter().map(|s| entry(&project, &s.id)).collect();
        let lines = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let title = s.title.as_deref().unwrap_or("(no prompt)");
                let live = if s.live.is_some() { ", running now" } else { "" };
                let backend = s.backend.as_str();
                format!(
                    "{}. {backend} {} — {title} ({} turns{live})",
                    first + i,
                    short(&s.id),
                    s.turns
                )
            })
            .collect();
        (entries, lines)
    }

    /// Carries the picked outside session on with `prompt` as its first new turn, and makes
    /// the new session the chat's selected one.
    pub(crate) async fn adopt(
        &mut self,
        chat: &str,
        state: &mut ChatState,
        pick: Picked,
        prompt: String,
    ) -> Result<Reply, Failure> {
        let (prompt, told) = self.with_attachments(chat, &prompt)?;
        let intent = Intent::AdoptSession {
            project_id: pick.project,
            session: pick.id.clone(),
            prompt,
            mode: None,
            in_place: false,
        };
        let summary: SessionSummary = self.client.intent_as(intent).await?;
        self.attachments_told(chat, told)?;
        self.select(chat, state, &summary.session_id, true)?;
        Ok(format!(
            "Carried {} on as session {} — {}: its history is in the transcript, the original is left as it was. Approvals and the end of each turn come here.",
            short(&pick.id),
            short(&summary.session_id),
            summary.title
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outside_entry_round_trips_and_a_nucleic_session_is_none() {
        let e = entry("p-1", "3f2a-uuid");
        assert_eq!(picked(&e), Some(Picked { project: "p-1".into(), id: "3f2a-uuid".into() }));
        assert_eq!(picked("0a07c354-session"), None);
        assert_eq!(picked("outside:no-slash"), None);
    }
}
