//! The ACP agent: `initialize`, `session/new`, `session/load`, `session/prompt`,
//! `session/cancel` and `session/set_mode`, each a request to the host through `nucleic-client`
//! (the slow ones in a task of their own, so the connection keeps reading). The SDK answers
//! any other request "method not found" (-32601) and a line that is not JSON a parse error.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Error, ErrorCode, Lines};
use nucleic_client::{Client, ClientError, ClientOptions, LocalDaemon};
use nucleic_protocol::{Backend, Intent, IntentResult, NewSession, ProtocolErrorCode};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::follow::{Attached, Follow, Turn, follow};
use crate::projects::project_for;
use crate::stdio::{self, Outgoing};

/// How `nucleic acp` reaches its host and what it starts.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The home's daemon (started by the binary's starter when none runs).
    pub daemon: LocalDaemon,
    /// The backend of new sessions; the project's default when `None`.
    pub backend: Option<Backend>,
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the Nucleic host: {0}")]
    Daemon(#[from] ClientError),
    #[error("the ACP connection: {0}")]
    Protocol(#[from] Error),
}

/// What every handler shares.
pub(crate) struct Shared {
    pub options: AcpOptions,
    /// One connection for requests, one at a time (followers have their own).
    pub requests: Mutex<Client>,
    pub out: Outgoing,
    /// The sessions this connection is attached to, by id.
    pub sessions: SyncMutex<HashMap<String, Arc<Attached>>>,
}

impl Shared {
    fn attached(&self, id: &str) -> Option<Arc<Attached>> {
        self.sessions.lock().ok().and_then(|s| s.get(id).cloned())
    }

    /// A new connection to the host, for a follower.
    pub(crate) async fn connect(&self, role: &str) -> Result<Client, ClientError> {
        Client::local(self.options.daemon.clone(), client_options(role)).await
    }
}

fn client_options(role: &str) -> ClientOptions {
    let mut options = ClientOptions::new(role, "editor (ACP)");
    options.reply_within = Duration::from_secs(60);
    options.features = vec![nucleic_protocol::FEATURE_EVENT_BATCHES.to_owned()];
    options
}

/// A refusal as the client reads it.
pub(crate) fn refused(code: ErrorCode, why: impl Into<String>) -> Error {
    Error::new(code, why.into())
}

/// A host's answer that is not a success, as an ACP error: the host's refusal says why.
pub(crate) fn host_error(e: ClientError) -> Error {
    match e {
        ClientError::Rejected(r) => {
            let code = match r.code {
                Some(ProtocolErrorCode::NotFound) => ErrorCode::RESOURCE_NOT_FOUND,
                _ => ErrorCode::INVALID_REQUEST,
            };
            refused(code, format!("the Nucleic host refused: {r}"))
        }
        other => refused(ErrorCode::INTERNAL_ERROR, format!("the Nucleic host: {other}")),
    }
}

/// Sends an answer; the client being gone is said on stderr.
pub(crate) fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, Error>,
) {
    let sent = match result {
        Ok(value) => responder.respond(value),
        Err(e) => responder.respond_with_error(e),
    };
    if let Err(e) = sent {
        eprintln!("nucleic acp: an answer could not be sent: {e}");
    }
}

/// What `initialize` answers whatever the client asked: protocol version 1 (the one this SDK
/// speaks; a client that cannot speak it closes the connection, as ACP says).
fn initialize() -> acp::InitializeResponse {
    let prompt = acp::PromptCapabilities::new().embedded_context(true);
    acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(
            acp::AgentCapabilities::new().load_session(true).prompt_capabilities(prompt),
        )
        .agent_info(acp::Implementation::new("nucleic", env!("CARGO_PKG_VERSION")))
}

/// The policy modes as ACP modes, `current` selected; none for a session without a policy.
pub(crate) fn modes(current: Option<&str>) -> Option<acp::SessionModeState> {
    let current = current?;
    let modes = vec![
        acp::SessionMode::new("readonly", "Read only").description(
            "Reads only: writes, unknown commands and the network are refused".to_owned(),
        ),
        acp::SessionMode::new("edit", "Edit")
            .description("Edits in its worktree; unknown commands are asked".to_owned()),
        acp::SessionMode::new("full", "Full")
            .description("As edit, with more that may be asked".to_owned()),
    ];
    Some(acp::SessionModeState::new(current.to_owned(), modes))
}

/// The project of `cwd`, or the client's error.
async fn project_of(shared: &Shared, cwd: &Path) -> Result<String, Error> {
    let projects = shared.requests.lock().await.list_projects().await.map_err(host_error)?;
    project_for(cwd, &projects)
        .map(|p| p.project_id.clone())
        .map_err(|why| refused(ErrorCode::INVALID_PARAMS, why))
}

async fn new_session(
    shared: Arc<Shared>,
    request: acp::NewSessionRequest,
    cx: ConnectionTo<agent_client_protocol::Client>,
) -> Result<acp::NewSessionResponse, Error> {
    let project_id = project_of(&shared, &request.cwd).await?;
    let folder = request.cwd.file_name().map(|n| n.to_string_lossy().into_owned());
    let start = NewSession {
        project_id,
        base_ref: None,
        backend: shared.options.backend,
        model: None,
        permission_mode: None,
        title: Some(format!("editor: {}", folder.unwrap_or_default())),
        mode: None,
        // Empty: the agent starts in its worktree and waits for the first `session/prompt`.
        prompt: String::new(),
    };
    let started = shared.requests.lock().await.intent(Intent::NewSession(start)).await;
    let summary = match started.map_err(host_error)? {
        Some(IntentResult::Session(summary)) => summary,
        other => {
            return Err(refused(
                ErrorCode::INTERNAL_ERROR,
                format!("unexpected answer: {other:?}"),
            ));
        }
    };
    let attached = Attached::new(&summary.session_id);
    register(&shared, &attached)?;
    let response = acp::NewSessionResponse::new(summary.session_id.clone())
        .modes(modes(summary.mode.as_deref()));
    tokio::spawn(follow(shared, attached, cx, Follow { from_seq: 1, replay_until: 0, load: None }));
    Ok(response)
}

fn register(shared: &Shared, attached: &Arc<Attached>) -> Result<(), Error> {
    let mut sessions = shared
        .sessions
        .lock()
        .map_err(|_| refused(ErrorCode::INTERNAL_ERROR, "the session table is poisoned"))?;
    if sessions.contains_key(&attached.session_id) {
        return Err(refused(
            ErrorCode::INVALID_REQUEST,
            format!("session {} is already attached to this connection", attached.session_id),
        ));
    }
    sessions.insert(attached.session_id.clone(), attached.clone());
    Ok(())
}

/// `session/load`: only a session of the project the `cwd` is in; its updates replayed from
/// `_meta.nucleic.fromSeq` (default 1: the whole session), answered once caught up.
async fn load_session(
    shared: Arc<Shared>,
    request: acp::LoadSessionRequest,
    responder: Responder<acp::LoadSessionResponse>,
    cx: ConnectionTo<agent_client_protocol::Client>,
) {
    let checked = async {
        let project_id = project_of(&shared, &request.cwd).await?;
        let id = request.session_id.0.to_string();
        let summary = shared.requests.lock().await.session(&id).await.map_err(host_error)?;
        if summary.project_id.as_deref() != Some(project_id.as_str()) {
            return Err(refused(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "session {id} is not a session of the project {} is in",
                    request.cwd.display()
                ),
            ));
        }
        let from_seq = request
            .meta
            .as_ref()
            .and_then(|m| m.get("nucleic"))
            .and_then(|n| n.get("fromSeq"))
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1);
        let attached = Attached::new(&id);
        register(&shared, &attached)?;
        Ok((attached, summary, from_seq))
    };
    match checked.await {
        Ok((attached, summary, from_seq)) => {
            let response = acp::LoadSessionResponse::new().modes(modes(summary.mode.as_deref()));
            let plan = Follow {
                from_seq,
                replay_until: summary.last_seq,
                load: Some((responder, response)),
            };
            follow(shared, attached, cx, plan).await;
        }
        Err(e) => answer(responder, Err(e)),
    }
}

/// The prompt's blocks as one text; images and audio are refused (not offered).
fn prompt_text(blocks: &[acp::ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            acp::ContentBlock::Resource(embedded) => {
                let value = serde_json::to_value(embedded).unwrap_or(Value::Null);
                let uri = value["resource"]["uri"].as_str().unwrap_or_default();
                let Some(text) = value["resource"]["text"].as_str() else {
                    return Err(refused(
                        ErrorCode::INVALID_PARAMS,
                        format!("resource {uri}: only text resources are taken"),
                    ));
                };
                parts.push(format!("<file uri=\"{uri}\">\n{text}\n</file>"));
            }
            acp::ContentBlock::Image(_) | acp::ContentBlock::Audio(_) => {
                return Err(refused(
                    ErrorCode::INVALID_PARAMS,
                    "images and audio are not taken (see promptCapabilities)",
                ));
            }
            _ => {
                return Err(refused(
                    ErrorCode::INVALID_PARAMS,
                    "a content block of an unknown type",
                ));
            }
        }
    }
    Ok(parts.join("\n"))
}

/// `session/prompt`: the text as the session's next turn; answered when the turn ends.
async fn prompt(
    shared: Arc<Shared>,
    request: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
) {
    let id = request.session_id.0.to_string();
    let Some(attached) = shared.attached(&id) else {
        let why =
            format!("session {id} is not attached here: session/new or session/load it first");
        return answer(responder, Err(refused(ErrorCode::INVALID_PARAMS, why)));
    };
    let text = match prompt_text(&request.prompt) {
        Ok(text) if !text.trim().is_empty() => text,
        Ok(_) => {
            return answer(
                responder,
                Err(refused(ErrorCode::INVALID_PARAMS, "the prompt is empty")),
            );
        }
        Err(e) => return answer(responder, Err(e)),
    };
    let mut requests = shared.requests.lock().await;
    let after = match requests.session(&id).await {
        Ok(summary) => summary.last_seq,
        Err(e) => return answer(responder, Err(host_error(e))),
    };
    if let Some(responder) = attached.begin(Turn::new(responder, text.clone(), after)) {
        let why = "a turn of this session is running: wait for it or session/cancel it";
        return answer(responder, Err(refused(ErrorCode::INVALID_REQUEST, why)));
    }
    if let Err(e) = requests.send_input(&id, &text).await {
        attached.fail_turn(host_error(e));
    }
}

/// `session/cancel`: interrupts the session's running turn, whoever started it; this
/// connection's prompt, if it has one, is answered `cancelled` when the turn ends.
async fn cancel(shared: Arc<Shared>, note: acp::CancelNotification) {
    let id = note.session_id.0.to_string();
    let Some(attached) = shared.attached(&id) else { return };
    attached.cancelling();
    let interrupted =
        shared.requests.lock().await.intent(Intent::Interrupt { session_id: id.clone() }).await;
    if let Err(e) = interrupted {
        eprintln!("nucleic acp: interrupting {id}: {e}");
    }
}

async fn set_mode(
    shared: Arc<Shared>,
    request: acp::SetSessionModeRequest,
) -> Result<acp::SetSessionModeResponse, Error> {
    let id = request.session_id.0.to_string();
    if shared.attached(&id).is_none() {
        return Err(refused(
            ErrorCode::INVALID_PARAMS,
            format!("session {id} is not attached here"),
        ));
    }
    let intent = Intent::SetMode { session_id: id, mode: request.mode_id.0.to_string() };
    shared.requests.lock().await.intent(intent).await.map_err(host_error)?;
    Ok(acp::SetSessionModeResponse::new())
}

/// Serves the ACP agent on stdin/stdout until the client closes stdin. The sessions it
/// started or loaded go on in the daemon.
pub async fn serve_stdio(options: AcpOptions) -> Result<(), AcpError> {
    let requests = Client::local(options.daemon.clone(), client_options("acp")).await?;
    let (out, writer) = stdio::writer(tokio::io::stdout());
    let incoming = stdio::incoming(tokio::io::BufReader::new(tokio::io::stdin()), out.clone());
    let transport = Lines::new(out.sink(), incoming);
    let shared = Arc::new(Shared {
        options,
        requests: Mutex::new(requests),
        out,
        sessions: SyncMutex::new(HashMap::new()),
    });
    let (s1, s2, s3, s4, s5) =
        (shared.clone(), shared.clone(), shared.clone(), shared.clone(), shared.clone());
    let served = Agent
        .v1()
        .name("nucleic")
        .on_receive_request(
            async move |_: acp::InitializeRequest,
                        responder: Responder<acp::InitializeResponse>,
                        _cx| { responder.respond(initialize()) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::NewSessionRequest,
                        responder: Responder<acp::NewSessionResponse>,
                        cx| {
                let shared = s1.clone();
                tokio::spawn(
                    async move { answer(responder, new_session(shared, request, cx).await) },
                );
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::LoadSessionRequest,
                        responder: Responder<acp::LoadSessionResponse>,
                        cx| {
                tokio::spawn(load_session(s2.clone(), request, responder, cx));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::PromptRequest,
                        responder: Responder<acp::PromptResponse>,
                        _cx| {
                tokio::spawn(prompt(s3.clone(), request, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::SetSessionModeRequest,
                        responder: Responder<acp::SetSessionModeResponse>,
                        _cx| {
                let shared = s4.clone();
                tokio::spawn(async move { answer(responder, set_mode(shared, request).await) });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: acp::CancelNotification, _cx| {
                tokio::spawn(cancel(s5.clone(), note));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    drop(shared);
    writer.abort();
    Ok(served?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_takes_text_links_and_text_resources_and_refuses_images() {
        let blocks: Vec<acp::ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "text", "text": "fix it"},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}},
        ]))
        .unwrap();
        assert_eq!(
            prompt_text(&blocks).unwrap(),
            "fix it\n@file:///w/a.rs\n<file uri=\"file:///w/b.rs\">\nfn b() {}\n</file>"
        );
        let image: Vec<acp::ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "image", "mimeType": "image/png", "data": "AAAA"}
        ]))
        .unwrap();
        assert_eq!(prompt_text(&image).unwrap_err().code, ErrorCode::INVALID_PARAMS);
        let blob: Vec<acp::ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "resource", "resource": {"uri": "file:///w/c.bin", "blob": "AAAA"}}
        ]))
        .unwrap();
        assert!(prompt_text(&blob).unwrap_err().message.contains("only text resources"));
    }

    #[test]
    fn modes_are_offered_only_for_a_session_with_a_policy() {
        assert!(modes(None).is_none());
        let state = serde_json::to_value(modes(Some("readonly")).unwrap()).unwrap();
        assert_eq!(state["currentModeId"], "readonly");
        let ids: Vec<&str> = state["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["readonly", "edit", "full"]);
    }

    #[test]
    fn the_capabilities_say_what_is_served() {
        let answer = serde_json::to_value(initialize()).unwrap();
        let caps = &answer["agentCapabilities"];
        assert_eq!(caps["loadSession"], true);
        assert_eq!(caps["promptCapabilities"]["image"], false);
        assert_eq!(caps["promptCapabilities"]["audio"], false);
        assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
        assert_eq!(answer["authMethods"], serde_json::json!([]));
    }
}
