//! The host's answer to one request: the call behind each `ClientMessage`, errors turned into
//! `error` replies, and the replies of requests that change something remembered per (client,
//! messageID), so a resent one is answered again without being carried out twice — for every
//! front end, in process or behind the server.

use nucleic_protocol::{
    ApprovalResolved, ClientMessage, ExportedText, HostMessage, IntentResult, ProtocolErrorCode,
};

use super::reply_turns::{REPLY_WITHIN, ReplyTurn};
use crate::context::Context;
use crate::error::HostError;

/// Who is acting, as authenticated — never as the client describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The host's token (the CLI and scripts on this machine).
    Token,
    /// A signed-in device that proved its key.
    Device { id: String, name: String },
    /// An MCP client holding a grant's credential: only what its scopes allow
    /// (`api::scopes`).
    Mcp(McpPrincipal),
    /// A connection with the host's token acting for a person it names in `hello.onBehalfOf`
    /// (a chat bridge's paired user, `telegram:12345`): the token's powers, recorded as the
    /// person's.
    OnBehalf { person: String },
}

/// An MCP client as its grant describes it (the grant the person made, never what the client
/// says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrincipal {
    /// The grant's name.
    pub name: String,
    /// Recorded as who acted: `mcp:<name>`.
    pub label: String,
    pub scopes: Vec<nucleic_protocol::McpScope>,
    /// The session whose agent the client is, if the grant names one.
    pub session_id: Option<String>,
    /// The projects it covers (none: every project; `project_scope.rs`).
    pub project_ids: Option<Vec<String>>,
}

impl Principal {
    /// Recorded as who answered an approval or made a change.
    pub fn label(&self) -> &str {
        match self {
            Principal::Token => "token on this machine",
            Principal::Device { name, .. } => name,
            Principal::Mcp(mcp) => &mcp.label,
            Principal::OnBehalf { person } => person,
        }
    }

    /// The device, if the principal is one.
    pub fn device_id(&self) -> Option<&str> {
        match self {
            Principal::Token | Principal::Mcp(_) | Principal::OnBehalf { .. } => None,
            Principal::Device { id, .. } => Some(id),
        }
    }

    /// The MCP grant, if the principal is an MCP client.
    pub fn mcp(&self) -> Option<&McpPrincipal> {
        match self {
            Principal::Token | Principal::Device { .. } | Principal::OnBehalf { .. } => None,
            Principal::Mcp(mcp) => Some(mcp),
        }
    }
}

impl Client {
    /// A client as it named itself in `hello`, its id scoped by who it authenticated as: a
    /// device that claims another device's client id gets its own replies, never the other's.
    pub fn new(client_id: &str, principal: Principal) -> Client {
        let id = match &principal {
            Principal::Device { id, .. } => format!("device:{id}/{client_id}"),
            Principal::Mcp(mcp) => format!("mcp:{}/{client_id}", mcp.name),
            Principal::OnBehalf { person } => format!("for:{person}/{client_id}"),
            Principal::Token => format!("token/{client_id}"),
        };
        Client { id, principal }
    }
}

/// Who sent a request.
#[derive(Debug, Clone)]
pub struct Client {
    /// The client's own id: scopes its message ids (remembered replies).
    pub id: String,
    /// Who it authenticated as.
    pub principal: Principal,
}

/// An `error` reply.
pub fn error(
    message_id: Option<String>,
    code: ProtocolErrorCode,
    message: impl Into<String>,
) -> HostMessage {
    HostMessage::Error { message_id, code, message: message.into(), resolved_by: None }
}

fn host_error(message_id: &str, e: &HostError) -> HostMessage {
    HostMessage::Error {
        message_id: Some(message_id.to_owned()),
        code: e.code(),
        message: e.to_string(),
        resolved_by: e.resolved_by().map(str::to_owned),
    }
}

impl Context {
    /// Waits until no other copy of `(client, message)` is being answered, and holds the turn
    /// while the caller recalls, carries out and remembers the reply.
    pub(crate) async fn reply_turn(
        &self,
        client: &str,
        message: &str,
    ) -> Result<ReplyTurn, HostError> {
        self.reply_turns.take(client, message, REPLY_WITHIN).await
    }

    /// The reply already given to `(client, message)`, for idempotent client message ids.
    pub(crate) async fn recall_reply(
        &self,
        client: &str,
        message: &str,
    ) -> Result<Option<String>, HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.recall_response(&client, &message)).await
    }

    /// Remembers the reply to `(client, message)` (the first one stored wins).
    pub(crate) async fn remember_reply(
        &self,
        client: &str,
        message: &str,
        reply: String,
    ) -> Result<(), HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.remember_response(&client, &message, &reply)).await
    }

    /// Answers a request that has a single reply (everything but hello / subscribe / unsubscribe).
    /// The reply to a request that changes something is remembered for its message id, so a resent
    /// one is answered again without being carried out twice; reads are carried out every time.
    pub async fn answer(&self, client: &Client, message: ClientMessage) -> HostMessage {
        let Some(id) = message.message_id().map(str::to_owned) else {
            return error(None, ProtocolErrorCode::BadHandshake, "hello was already received");
        };
        if !changes_something(&message) {
            return self.carry_out(client, &id, message).await;
        }
        // A copy that arrives while the first is being carried out waits for its reply.
        let _turn = match self.reply_turn(&client.id, &id).await {
            Ok(turn) => turn,
            Err(e) => return host_error(&id, &e),
        };
        if let Ok(Some(previous)) = self.recall_reply(&client.id, &id).await
            && let Some(reply) = remembered(&id, &previous)
        {
            return reply;
        }
        let reply = self.carry_out(client, &id, message).await;
        if let Ok(text) = serde_json::to_string(&reply) {
            let _ = self.remember_reply(&client.id, &id, text).await;
        }
        reply
    }

    /// Answers a request without remembering its reply (a one-shot caller that named no client:
    /// its message ids scope nothing).
    pub async fn answer_once(&self, client: &Client, message: ClientMessage) -> HostMessage {
        let Some(id) = message.message_id().map(str::to_owned) else {
            return error(None, ProtocolErrorCode::BadHandshake, "hello was already received");
        };
        self.carry_out(client, &id, message).await
    }

    async fn carry_out(&self, client: &Client, id: &str, message: ClientMessage) -> HostMessage {
        // An MCP client does only what its grant allows, checked before anything is carried out.
        if let Err(e) = self.authorize(&client.principal, &message).await {
            return host_error(id, &e);
        }
        let ack =
            |result: Option<IntentResult>| HostMessage::Ack { message_id: id.to_owned(), result };
        let result = match message {
            ClientMessage::ListProjects { .. } => {
                self.list_projects().await.map(|projects| HostMessage::Projects {
                    message_id: id.to_owned(),
                    projects: client.principal.visible_projects(projects),
                })
            }
            ClientMessage::ListSessions { project_id, include_archived, .. } => self
                .list_sessions(project_id, include_archived)
                .await
                .map(|sessions| HostMessage::Sessions {
                    message_id: id.to_owned(),
                    sessions: client.principal.visible_sessions(sessions),
                }),
            ClientMessage::GitFacts { session_id, include_patch, turn, .. } => self
                .git_facts_of_turn(&session_id, include_patch, turn)
                .await
                .map(|facts| HostMessage::GitFacts { message_id: id.to_owned(), facts }),
            ClientMessage::ExportSession { session_id, format, .. } => self
                .export_session(&session_id, format)
                .await
                .map(|text| ack(Some(IntentResult::Exported(ExportedText { text })))),
            ClientMessage::SendInput { session_id, text, .. } => {
                self.send_input(&session_id, &text).await.map(|()| ack(None))
            }
            ClientMessage::Decide { session_id, request_id, decision, confirmed, .. } => self
                .decide_confirmed(
                    &session_id,
                    &request_id,
                    decision,
                    client.principal.label(),
                    confirmed,
                )
                .await
                .map(|r: ApprovalResolved| ack(Some(IntentResult::Approval(r)))),
            ClientMessage::Intent { intent, .. } => {
                self.intent_of(intent, &client.principal).await.map(ack)
            }
            ClientMessage::ListFiles { session_id, path, recursive, .. } => self
                .list_files(&session_id, &path, recursive)
                .await
                .map(|listing| HostMessage::Files {
                    message_id: id.to_owned(),
                    path: listing.path,
                    entries: listing.entries,
                    truncated: listing.truncated,
                }),
            ClientMessage::ReadFile { session_id, path, .. } => self
                .read_file(&session_id, &path)
                .await
                .map(|file| HostMessage::FileContent { message_id: id.to_owned(), file }),
            ClientMessage::ListBranches { project_id, .. } => {
                self.list_branches(&project_id).await.map(|(branches, default_branch)| {
                    HostMessage::Branches { message_id: id.to_owned(), branches, default_branch }
                })
            }
            ClientMessage::ListDevices { .. } => self
                .list_devices(client.principal.device_id())
                .await
                .map(|devices| HostMessage::Devices { message_id: id.to_owned(), devices }),
            ClientMessage::GetPush { .. } => match client.principal.device_id() {
                Some(device) => self.push_settings(device).await,
                None => return per_device(id),
            }
            .map(|push| HostMessage::Push { message_id: id.to_owned(), push }),
            ClientMessage::SetPush { subscription, quiet_hours, .. } => {
                match client.principal.device_id() {
                    Some(device) => self.set_push(device, subscription, quiet_hours).await,
                    None => return per_device(id),
                }
                .map(|push| HostMessage::Push { message_id: id.to_owned(), push })
            }
            ClientMessage::Hello { .. }
            | ClientMessage::Subscribe { .. }
            | ClientMessage::Unsubscribe { .. } => {
                return error(
                    Some(id.to_owned()),
                    ProtocolErrorCode::InvalidRequest,
                    "this message needs the WebSocket (/ws)",
                );
            }
        };
        result.unwrap_or_else(|e| host_error(id, &e))
    }
}

/// A remembered reply as it is sent again. One remembered by a host from before `ack.result`
/// was tagged (`IntentResult`) still says the request was carried out, without its result —
/// the request is never carried out a second time.
fn remembered(id: &str, text: &str) -> Option<HostMessage> {
    if let Ok(reply) = serde_json::from_str::<HostMessage>(text) {
        return Some(reply);
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    (value.get("type")?.as_str()? == "ack")
        .then(|| HostMessage::Ack { message_id: id.to_owned(), result: None })
}

/// Whether a request changes something. Only these replies are remembered: reads change
/// nothing, may be megabytes (patches, files, exports) and are simply carried out again.
fn changes_something(message: &ClientMessage) -> bool {
    match message {
        ClientMessage::SendInput { .. }
        | ClientMessage::Decide { .. }
        | ClientMessage::Intent { .. }
        | ClientMessage::SetPush { .. } => true,
        ClientMessage::ListProjects { .. }
        | ClientMessage::ListSessions { .. }
        | ClientMessage::GitFacts { .. }
        | ClientMessage::ExportSession { .. }
        | ClientMessage::ListFiles { .. }
        | ClientMessage::ReadFile { .. }
        | ClientMessage::ListBranches { .. }
        | ClientMessage::ListDevices { .. }
        | ClientMessage::GetPush { .. }
        | ClientMessage::Hello { .. }
        | ClientMessage::Subscribe { .. }
        | ClientMessage::Unsubscribe { .. } => false,
    }
}

/// The refusal of push settings to a caller that is not a device (the token).
fn per_device(id: &str) -> HostMessage {
    error(
        Some(id.to_owned()),
        ProtocolErrorCode::InvalidRequest,
        "push is per device: sign in from the browser that should be notified",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_remembered_before_results_were_typed_is_still_an_ack() {
        // Today's replies come back as they were.
        let typed = HostMessage::Ack {
            message_id: "m1".into(),
            result: Some(IntentResult::Exported(ExportedText { text: "t".into() })),
        };
        let text = serde_json::to_string(&typed).unwrap();
        assert_eq!(remembered("m1", &text), Some(typed));
        // An untagged result of an older host: the ack without it (never carried out again).
        let old = r#"{"type":"ack","messageID":"m2","result":{"command":"claude --resume x"}}"#;
        assert_eq!(
            remembered("m2", old),
            Some(HostMessage::Ack { message_id: "m2".into(), result: None })
        );
        // Anything else remembered that no longer parses is carried out as new.
        assert_eq!(remembered("m3", r#"{"type":"mystery"}"#), None);
        assert_eq!(remembered("m3", "not json"), None);
    }
}
