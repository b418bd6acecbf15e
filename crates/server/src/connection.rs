//! One client connection, on a WebSocket or a device's Noise channel (`wire`): the hello
//! handshake (the token on the upgrade, a device proof in hello, or the device the channel
//! authenticated), then requests and replies, event streams for its subscriptions (filtered by
//! verbosity), and session summaries as they change — until its credential is revoked.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::State;
use axum::extract::ws::{WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use nucleic_protocol::{
    ClientMessage, FEATURE_EVENT_BATCHES, HostMessage, Intent, PROTOCOL_VERSION, ProtocolErrorCode,
    SCHEMA_DIGEST, on_behalf_of_refused,
};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::AppState;
use crate::auth::{Bearer, bearer, bearer_token};
use crate::dispatch::{Client, Principal, error, parse};
use crate::follow;
use crate::outbox::{self, Outbox};
use crate::wire::{self, InFrame};
use nucleic_host::Revocation;

/// Frames larger than this close the connection (smaller over-limit ones get `tooLarge`).
const MAX_FRAME_BYTES: usize = 4 * nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES;

/// How long a revoked connection waits for replies already under way before it closes.
const ANSWER_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// WebSocket close code for a connection without a valid credential, or whose device was
/// revoked (or the token rotated) while it was open.
pub const CLOSE_UNAUTHORIZED: u16 = 4401;

/// `GET /ws`. A bearer token, if sent, must be the one in force; without one the client proves
/// a device key in `hello`.
pub async fn upgrade(
    State(state): State<AppState>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let auth = match bearer_token(&state, &headers) {
        Bearer::Valid => Auth::Token,
        // Not the token: an MCP grant's credential, or refused.
        Bearer::Wrong => match state.host.mcp_principal(bearer(&headers).unwrap_or("")).await {
            Ok(Some(principal)) => Auth::Channel(principal),
            Ok(None) | Err(_) => {
                return (
                    StatusCode::UNAUTHORIZED,
                    "refused: wrong or rotated token, or a revoked or unknown MCP credential\n",
                )
                    .into_response();
            }
        },
        Bearer::Absent => Auth::Hello,
    };
    ws.max_message_size(MAX_FRAME_BYTES).on_upgrade(move |socket| run_socket(socket, state, auth))
}

/// How a connection authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    /// The host's token came with the upgrade.
    Token,
    /// The client must prove a device key in `hello`.
    Hello,
    /// The carrier or its credential already authenticated the client (a paired device's Noise
    /// channel, an MCP grant's credential on the upgrade).
    Channel(Principal),
}

async fn run_socket(socket: WebSocket, state: AppState, auth: Auth) {
    let (sink, stream) = socket.split();
    run(stream, sink, state, auth).await;
}

/// What woke the connection's loop.
enum Step {
    Frame(Option<InFrame>),
    Closing,
    Revocation(Result<Revocation, tokio::sync::broadcast::error::RecvError>),
    /// A slot for one more request (none: the semaphore is gone).
    Permit(Option<tokio::sync::OwnedSemaphorePermit>),
}

/// Whether a revocation announcement (or a missed one) ends this connection.
async fn ends_connection(
    state: &AppState,
    principal: &Principal,
    revocation: Result<Revocation, tokio::sync::broadcast::error::RecvError>,
) -> bool {
    match revocation {
        Ok(r) => revokes(&r, principal),
        // Missed announcements: check this connection's credential is still good.
        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
            !still_authorized(state, principal).await
        }
        Err(tokio::sync::broadcast::error::RecvError::Closed) => true,
    }
}

/// Whether `principal` is still allowed in (after missed revocation announcements).
async fn still_authorized(state: &AppState, principal: &Principal) -> bool {
    match principal {
        Principal::Token | Principal::OnBehalf { .. } => true,
        Principal::Device { id, .. } => matches!(state.host.active_device(id).await, Ok(Some(_))),
        Principal::Mcp(mcp) => matches!(state.host.mcp_grant_active(&mcp.name).await, Ok(true)),
    }
}

/// Whether `revocation` ends a connection of `principal`.
fn revokes(revocation: &Revocation, principal: &Principal) -> bool {
    match revocation {
        Revocation::All => true,
        Revocation::Device(id) => principal.device_id() == Some(id.as_str()),
        Revocation::Mcp(name) => principal.mcp().is_some_and(|m| &m.name == name),
        Revocation::Person(person) => {
            matches!(principal, Principal::OnBehalf { person: p } if p == person)
        }
    }
}

/// Serves one client on `stream` / `sink` until it leaves, is revoked, or the server stops.
pub async fn run(
    mut stream: impl wire::Source,
    sink: impl wire::Sink,
    state: AppState,
    auth: Auth,
) {
    let limits = state.limits();
    let through_channel = matches!(auth, Auth::Channel(_));
    let (out, inbox) = outbox::outbox(limits.max_outbox_bytes);
    // Set by the handshake when the client takes `events` batches.
    let batching = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(outbox::write(sink, inbox, Arc::clone(&batching), limits));
    // Subscribed before the handshake so a revocation during it is not missed.
    let mut revocations = state.host.revocations();
    // The server is shutting down: close this connection too (a graceful shutdown waits for it).
    let mut closing = state.closing.subscribe();
    let handshake = tokio::time::timeout(
        limits.hello_timeout,
        handshake(&mut stream, &out, &state, auth, &batching),
    );
    let client = tokio::select! {
        client = handshake => client.unwrap_or_else(|_| {
            out.close(close_code::POLICY, format!("no hello within {}", seconds(limits.hello_timeout)));
            None
        }),
        _ = closing.wait_for(|closing| *closing) => None,
    };
    let Some(client) = client else {
        drop(out);
        let _ = writer.await;
        return;
    };
    let mut changes = state.host.changes();
    let changes_out = out.clone();
    let change_task = tokio::spawn(async move {
        loop {
            match changes.recv().await {
                Ok(session) => {
                    if changes_out.send(HostMessage::SessionChanged { session }).await.is_err() {
                        break;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    let mut subscriptions: HashMap<String, JoinHandle<()>> = HashMap::new();
    // One permit per request being carried out; beyond the limit the next frame waits unread.
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    // Requests being answered: a revoked connection still sends the replies already under way
    // (a rotateToken's own ack among them) before it closes.
    let mut answering = tokio::task::JoinSet::new();
    let mut revoked = false;
    loop {
        while answering.try_join_next().is_some() {}
        let step = tokio::select! {
            frame = tokio::time::timeout(limits.idle_timeout, stream.next()) => match frame {
                Ok(frame) => Step::Frame(frame),
                Err(_) => {
                    let why = format!("idle: nothing received for {} (pings unanswered)", seconds(limits.idle_timeout));
                    out.close(close_code::POLICY, why);
                    break;
                }
            },
            _ = closing.wait_for(|closing| *closing) => Step::Closing,
            // The writer gave up (a slow reader) or the socket is gone.
            () = out.closed() => Step::Closing,
            revocation = revocations.recv() => Step::Revocation(revocation),
        };
        let frame = match step {
            Step::Frame(frame) => frame,
            Step::Closing | Step::Permit(_) => break,
            Step::Revocation(revocation) => {
                if ends_connection(&state, &client.principal, revocation).await {
                    revoked = true;
                    break;
                }
                continue;
            }
        };
        let Some(frame) = frame else { break };
        let text = match frame {
            InFrame::Text(t) => t,
            InFrame::Binary => {
                let _ = out
                    .send(error(None, ProtocolErrorCode::BadMessage, "send JSON text frames"))
                    .await;
                continue;
            }
            InFrame::Close => break,
            InFrame::Alive => continue,
        };
        let message = match parse(&text) {
            Ok(m) => m,
            Err(reply) => {
                let _ = out.send(*reply).await;
                continue;
            }
        };
        match message {
            ClientMessage::Hello { .. } => {
                let _ = out
                    .send(error(
                        None,
                        ProtocolErrorCode::BadHandshake,
                        "hello was already received",
                    ))
                    .await;
            }
            ClientMessage::Subscribe { message_id, session_id, from_seq, verbosity } => {
                if let Some(old) = subscriptions.remove(&session_id) {
                    old.abort();
                }
                // `follow` keeps the stream going across the agent's exits and resumes.
                match state.host.subscribe(&session_id, from_seq).await {
                    Ok(first) => {
                        let _ = out.send(HostMessage::Ack { message_id, result: None }).await;
                        let task = tokio::spawn(follow::follow(
                            state.host.clone(),
                            session_id.clone(),
                            first,
                            from_seq,
                            verbosity,
                            out.clone(),
                        ));
                        subscriptions.insert(session_id, task);
                    }
                    Err(e) => {
                        let _ = out
                            .send(HostMessage::Error {
                                message_id: Some(message_id),
                                code: e.code(),
                                message: e.to_string(),
                                resolved_by: None,
                            })
                            .await;
                    }
                }
            }
            ClientMessage::Intent { message_id, intent: Intent::PairDevice { name, ttl_secs } } => {
                let reply = crate::remote::pairing::answer(
                    &state,
                    &message_id,
                    name,
                    ttl_secs,
                    through_channel,
                );
                let _ = out.send(reply).await;
            }
            ClientMessage::Unsubscribe { message_id, session_id } => {
                if let Some(task) = subscriptions.remove(&session_id) {
                    task.abort();
                }
                let _ = out.send(HostMessage::Ack { message_id, result: None }).await;
            }
            other => {
                // Waiting for a free slot still notices a revocation.
                let permit = loop {
                    let step = tokio::select! {
                        permit = Arc::clone(&in_flight).acquire_owned() => Step::Permit(permit.ok()),
                        _ = closing.wait_for(|closing| *closing) => Step::Closing,
                        () = out.closed() => Step::Closing,
                        revocation = revocations.recv() => Step::Revocation(revocation),
                    };
                    match step {
                        Step::Permit(permit) => break permit,
                        Step::Frame(_) | Step::Closing => break None,
                        Step::Revocation(revocation) => {
                            if ends_connection(&state, &client.principal, revocation).await {
                                revoked = true;
                                break None;
                            }
                        }
                    }
                };
                let Some(permit) = permit else { break };
                // Answered in its own task so a slow git operation does not hold up the stream;
                // the permit is held until the reply is queued.
                let (host, client, out) = (state.host.clone(), client.clone(), out.clone());
                answering.spawn(async move {
                    let reply = host.answer(&client, other).await;
                    let _ = out.send(reply).await;
                    drop(permit);
                });
            }
        }
    }
    for task in subscriptions.into_values() {
        task.abort();
    }
    change_task.abort();
    if revoked {
        let drained = async { while answering.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(ANSWER_DRAIN, drained).await;
        out.close(CLOSE_UNAUTHORIZED, "credential revoked: sign in again");
    } else {
        // The client left or the host stops: its replies have nowhere to go.
        answering.detach_all();
    }
    drop(out);
    let _ = writer.await;
}

/// Waits for `hello` and authenticates it: the token on the upgrade, or a valid device proof.
/// Answers `welcome`; or `badHandshake` / `unauthorized`, closes (1002 / 4401) and gives up.
async fn handshake(
    stream: &mut impl wire::Source,
    out: &Outbox,
    state: &AppState,
    auth: Auth,
    batching: &AtomicBool,
) -> Option<Client> {
    let frame = loop {
        match stream.next().await? {
            InFrame::Text(t) => break t,
            InFrame::Alive => {}
            InFrame::Binary | InFrame::Close => return None,
        }
    };
    let refuse = |code: ProtocolErrorCode, why: String, close: u16| async move {
        let reason = why.chars().take(120).collect::<String>();
        let _ = out.send(error(None, code, why)).await;
        out.close(close, reason);
        None
    };
    let (client_id, features, device, on_behalf_of) = match parse(&frame) {
        Ok(ClientMessage::Hello {
            client_id,
            protocol_version,
            features,
            device,
            on_behalf_of,
            ..
        }) if protocol_version == PROTOCOL_VERSION && !client_id.trim().is_empty() => {
            (client_id, features, device, on_behalf_of)
        }
        Ok(ClientMessage::Hello { protocol_version, .. }) => {
            let why = format!(
                "protocol version {protocol_version} is not spoken here (host speaks {PROTOCOL_VERSION}), or clientID is empty"
            );
            return refuse(ProtocolErrorCode::BadHandshake, why, close_code::PROTOCOL).await;
        }
        Ok(_) | Err(_) => {
            let why = "the first message must be hello".to_owned();
            return refuse(ProtocolErrorCode::BadHandshake, why, close_code::PROTOCOL).await;
        }
    };
    if let Some(person) = &on_behalf_of {
        // Only the token, the trust root on this machine, may act for a person it names.
        let why = match (&auth, on_behalf_of_refused(person)) {
            // …and only for someone a chat bridge lists as paired, not unpaired since.
            (Auth::Token, None) => state.host.chat_person_allowed(person).err(),
            (Auth::Token, Some(why)) => Some(why),
            (Auth::Hello | Auth::Channel(_), _) => Some(
                "only a connection with the host's token may act on behalf of someone".to_owned(),
            ),
        };
        if let Some(why) = why {
            return refuse(ProtocolErrorCode::BadHandshake, why, close_code::PROTOCOL).await;
        }
    }
    let principal = match (auth, device) {
        (Auth::Token, _) => match on_behalf_of {
            Some(person) => Principal::OnBehalf { person },
            None => Principal::Token,
        },
        (Auth::Channel(principal), None) => principal,
        (Auth::Channel(_), Some(_)) => {
            let why = "this connection is already authenticated: send no device proof in hello"
                .to_owned();
            return refuse(ProtocolErrorCode::BadHandshake, why, close_code::PROTOCOL).await;
        }
        (Auth::Hello, Some(proof)) => match crate::devices::verify(state, &proof).await {
            Ok(device) => Principal::Device { id: device.id, name: device.name },
            Err(e) => {
                return refuse(ProtocolErrorCode::Unauthorized, e.to_string(), CLOSE_UNAUTHORIZED)
                    .await;
            }
        },
        (Auth::Hello, None) => {
            let why = "no credential: send the token (Authorization: Bearer …) on the upgrade, or a device proof in hello".to_owned();
            return refuse(ProtocolErrorCode::Unauthorized, why, CLOSE_UNAUTHORIZED).await;
        }
    };
    if features.iter().any(|f| f == FEATURE_EVENT_BATCHES) {
        batching.store(true, Ordering::Relaxed);
    }
    let _ = out
        .send(HostMessage::Welcome {
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: PROTOCOL_VERSION,
            backends: state.host.backends(),
            relay_host_id: state.remote.as_ref().map(|r| r.host_id()),
            schema_digest: Some(SCHEMA_DIGEST.to_owned()),
        })
        .await;
    Some(Client::new(&client_id, principal))
}

/// "10 s", "0.5 s".
fn seconds(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f32())
}
