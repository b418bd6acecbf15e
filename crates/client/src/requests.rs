//! Typed requests: one method per request a front end makes, each returning what its reply
//! carries (a wrong kind of reply is [`ClientError::Unexpected`]).

use nucleic_protocol::{
    ApprovalResolved, ClientMessage, Decision, DeviceSummary, ExportFormat, FileContent, FileEntry,
    GitFacts, HostMessage, Intent, IntentResult, ProjectSummary, SessionSummary, Verbosity,
};

use crate::client::Client;
use crate::error::{ClientError, describe};
use crate::results::{ExportedText, IntentPayload, decode_result};

fn unexpected(request: &str, reply: &HostMessage) -> ClientError {
    ClientError::Unexpected { request: request.to_owned(), reply: describe(reply) }
}

impl Client {
    pub async fn list_projects(&mut self) -> Result<Vec<ProjectSummary>, ClientError> {
        let message_id = self.id();
        match self.request(ClientMessage::ListProjects { message_id }).await? {
            HostMessage::Projects { projects, .. } => Ok(projects),
            other => Err(unexpected("listProjects", &other)),
        }
    }

    pub async fn list_sessions(
        &mut self,
        project_id: Option<String>,
        include_archived: bool,
    ) -> Result<Vec<SessionSummary>, ClientError> {
        let message_id = self.id();
        let request = ClientMessage::ListSessions { message_id, project_id, include_archived };
        match self.request(request).await? {
            HostMessage::Sessions { sessions, .. } => Ok(sessions),
            other => Err(unexpected("listSessions", &other)),
        }
    }

    /// One session's summary (archived ones included).
    pub async fn session(&mut self, session_id: &str) -> Result<SessionSummary, ClientError> {
        let sessions = self.list_sessions(None, true).await?;
        sessions.into_iter().find(|s| s.session_id == session_id).ok_or_else(|| {
            ClientError::Rejected(crate::error::Rejection {
                code: Some(nucleic_protocol::ProtocolErrorCode::NotFound),
                message: format!("no session {session_id}"),
                resolved_by: None,
            })
        })
    }

    /// Follows `session_id` from `from_seq`; its events then come from [`Client::next`], each
    /// once and in order, across reconnects.
    pub async fn subscribe(
        &mut self,
        session_id: &str,
        from_seq: u64,
        verbosity: Verbosity,
    ) -> Result<(), ClientError> {
        let message_id = self.id();
        let session_id = session_id.to_owned();
        self.request(ClientMessage::Subscribe { message_id, session_id, from_seq, verbosity })
            .await?;
        Ok(())
    }

    pub async fn unsubscribe(&mut self, session_id: &str) -> Result<(), ClientError> {
        let message_id = self.id();
        let session_id = session_id.to_owned();
        self.request(ClientMessage::Unsubscribe { message_id, session_id }).await?;
        Ok(())
    }

    /// A follow-up prompt; answered once it is in the transcript and sent to the agent.
    pub async fn send_input(&mut self, session_id: &str, text: &str) -> Result<(), ClientError> {
        let message_id = self.id();
        let (session_id, text) = (session_id.to_owned(), text.to_owned());
        self.request(ClientMessage::SendInput { message_id, session_id, text }).await?;
        Ok(())
    }

    /// Answers approval `request_id`; how it was resolved.
    pub async fn decide(
        &mut self,
        session_id: &str,
        request_id: &str,
        decision: Decision,
        confirmed: bool,
    ) -> Result<ApprovalResolved, ClientError> {
        let message_id = self.id();
        let request = ClientMessage::Decide {
            message_id,
            session_id: session_id.to_owned(),
            request_id: request_id.to_owned(),
            decision,
            confirmed,
        };
        match self.request(request).await? {
            HostMessage::Ack { result, .. } => decode_result("decide", result),
            other => Err(unexpected("decide", &other)),
        }
    }

    /// Carries out `intent`; the `ack`'s result, if it has one.
    pub async fn intent(&mut self, intent: Intent) -> Result<Option<IntentResult>, ClientError> {
        let message_id = self.id();
        match self.request(ClientMessage::Intent { message_id, intent }).await? {
            HostMessage::Ack { result, .. } => Ok(result),
            other => Err(unexpected("intent", &other)),
        }
    }

    /// Carries out `intent` and takes its result as the payload `T` (see [`crate::results`]).
    pub async fn intent_as<T: IntentPayload>(&mut self, intent: Intent) -> Result<T, ClientError> {
        let name = intent_name(&intent);
        decode_result(&name, self.intent(intent).await?)
    }

    pub async fn git_facts(
        &mut self,
        session_id: &str,
        include_patch: bool,
        turn: Option<u32>,
    ) -> Result<GitFacts, ClientError> {
        let message_id = self.id();
        let session_id = session_id.to_owned();
        let request = ClientMessage::GitFacts { message_id, session_id, include_patch, turn };
        match self.request(request).await? {
            HostMessage::GitFacts { facts, .. } => Ok(facts),
            other => Err(unexpected("gitFacts", &other)),
        }
    }

    /// The session as a document.
    pub async fn export_session(
        &mut self,
        session_id: &str,
        format: ExportFormat,
    ) -> Result<String, ClientError> {
        let message_id = self.id();
        let session_id = session_id.to_owned();
        let request = ClientMessage::ExportSession { message_id, session_id, format };
        match self.request(request).await? {
            HostMessage::Ack { result, .. } => {
                Ok(decode_result::<ExportedText>("exportSession", result)?.text)
            }
            other => Err(unexpected("exportSession", &other)),
        }
    }

    /// A directory of the session's worktree (`path` relative, "" = the root).
    pub async fn list_files(
        &mut self,
        session_id: &str,
        path: &str,
        recursive: bool,
    ) -> Result<Listing, ClientError> {
        let message_id = self.id();
        let (session_id, path) = (session_id.to_owned(), path.to_owned());
        let request = ClientMessage::ListFiles { message_id, session_id, path, recursive };
        match self.request(request).await? {
            HostMessage::Files { path, entries, truncated, .. } => {
                Ok(Listing { path, entries, truncated })
            }
            other => Err(unexpected("listFiles", &other)),
        }
    }

    /// One file of the session's worktree.
    pub async fn read_file(
        &mut self,
        session_id: &str,
        path: &str,
    ) -> Result<FileContent, ClientError> {
        let message_id = self.id();
        let (session_id, path) = (session_id.to_owned(), path.to_owned());
        match self.request(ClientMessage::ReadFile { message_id, session_id, path }).await? {
            HostMessage::FileContent { file, .. } => Ok(file),
            other => Err(unexpected("readFile", &other)),
        }
    }

    /// A project's local branches (most recent first) and its default branch.
    pub async fn list_branches(
        &mut self,
        project_id: &str,
    ) -> Result<(Vec<String>, String), ClientError> {
        let message_id = self.id();
        let project_id = project_id.to_owned();
        match self.request(ClientMessage::ListBranches { message_id, project_id }).await? {
            HostMessage::Branches { branches, default_branch, .. } => {
                Ok((branches, default_branch))
            }
            other => Err(unexpected("listBranches", &other)),
        }
    }

    pub async fn list_devices(&mut self) -> Result<Vec<DeviceSummary>, ClientError> {
        let message_id = self.id();
        match self.request(ClientMessage::ListDevices { message_id }).await? {
            HostMessage::Devices { devices, .. } => Ok(devices),
            other => Err(unexpected("listDevices", &other)),
        }
    }
}

/// A `files` reply: a directory of a session's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub path: String,
    pub entries: Vec<FileEntry>,
    /// More entries existed than `MAX_FILE_ENTRIES`.
    pub truncated: bool,
}

/// `intent` and its kind, for errors (`intent gc`).
fn intent_name(intent: &Intent) -> String {
    let kind = serde_json::to_value(intent)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str().map(str::to_owned)))
        .unwrap_or_default();
    format!("intent {kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_named_by_kind() {
        assert_eq!(intent_name(&Intent::Gc { apply: false }), "intent gc");
        assert_eq!(intent_name(&Intent::RotateToken), "intent rotateToken");
    }
}
