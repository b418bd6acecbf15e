//! One WebSocket client: the hello handshake, then requests and replies, event streams for its
//! subscriptions (filtered by verbosity), and session summaries as they change.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use futures_util::StreamExt;
use nucleic_protocol::{
    ClientMessage, EventKind, FEATURE_EVENT_BATCHES, HostMessage, PROTOCOL_VERSION,
    ProtocolErrorCode, Verbosity,
};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::AppState;
use crate::dispatch::{Client, answer, error, parse};
use crate::follow;
use crate::outbox::{self, Outbox};

/// Frames larger than this close the connection (smaller over-limit ones get `tooLarge`).
const MAX_FRAME_BYTES: usize = 4 * nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES;

/// `GET /ws`.
pub async fn upgrade(State(state): State<AppState>, ws: WebSocketUpgrade) -> Response {
    ws.max_message_size(MAX_FRAME_BYTES).on_upgrade(move |socket| run(socket, state))
}

/// True when a client at `verbosity` wants events of this kind.
pub fn wanted(verbosity: Verbosity, kind: &EventKind) -> bool {
    match verbosity {
        Verbosity::Full => true,
        Verbosity::NoPartials => !kind.is_partial(),
        Verbosity::Summary => {
            !kind.is_partial() && !matches!(kind, EventKind::Raw(_) | EventKind::Stderr(_))
        }
    }
}

async fn run(socket: WebSocket, state: AppState) {
    let limits = state.limits();
    let (sink, mut stream) = socket.split();
    let (out, inbox) = outbox::outbox(limits.max_outbox_bytes);
    // Set by the handshake when the client takes `events` batches.
    let batching = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(outbox::write(sink, inbox, Arc::clone(&batching), limits));
    // The server is shutting down: close this connection too (a graceful shutdown waits for it).
    let mut closing = state.closing.subscribe();
    let handshake = tokio::time::timeout(
        limits.hello_timeout,
        handshake(&mut stream, &out, &state.host, &batching),
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
    loop {
        let frame = tokio::select! {
            frame = tokio::time::timeout(limits.idle_timeout, stream.next()) => match frame {
                Ok(frame) => frame,
                Err(_) => {
                    let why = format!("idle: nothing received for {} (pings unanswered)", seconds(limits.idle_timeout));
                    out.close(close_code::POLICY, why);
                    break;
                }
            },
            _ = closing.wait_for(|closing| *closing) => break,
            // The writer gave up (a slow reader) or the socket is gone.
            () = out.closed() => break,
        };
        let Some(Ok(frame)) = frame else { break };
        let text = match frame {
            Message::Text(t) => t.to_string(),
            Message::Binary(_) => {
                let _ = out
                    .send(error(None, ProtocolErrorCode::BadMessage, "send JSON text frames"))
                    .await;
                continue;
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
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
            ClientMessage::Unsubscribe { message_id, session_id } => {
                if let Some(task) = subscriptions.remove(&session_id) {
                    task.abort();
                }
                let _ = out.send(HostMessage::Ack { message_id, result: None }).await;
            }
            other => {
                let permit = tokio::select! {
                    permit = Arc::clone(&in_flight).acquire_owned() => permit,
                    _ = closing.wait_for(|closing| *closing) => break,
                    () = out.closed() => break,
                };
                let Ok(permit) = permit else { break };
                // Answered in its own task so a slow git operation does not hold up the stream;
                // the permit is held until the reply is queued.
                let (host, client, out) = (state.host.clone(), client.clone(), out.clone());
                tokio::spawn(async move {
                    let reply = answer(&host, &client, other).await;
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
    drop(out);
    let _ = writer.await;
}

/// Waits for `hello`; answers `welcome`, or `badHandshake` and gives up.
async fn handshake(
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    out: &Outbox,
    host: &nucleic_host::Host,
    batching: &AtomicBool,
) -> Option<Client> {
    let frame = loop {
        match stream.next().await? {
            Ok(Message::Text(t)) => break t.to_string(),
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
            Ok(_) | Err(_) => return None,
        }
    };
    match parse(&frame) {
        Ok(ClientMessage::Hello { client_id, client_name, protocol_version, features })
            if protocol_version == PROTOCOL_VERSION && !client_id.trim().is_empty() =>
        {
            if features.iter().any(|f| f == FEATURE_EVENT_BATCHES) {
                batching.store(true, Ordering::Relaxed);
            }
            let _ = out
                .send(HostMessage::Welcome {
                    host_version: env!("CARGO_PKG_VERSION").to_owned(),
                    protocol_version: PROTOCOL_VERSION,
                    backends: host.backends(),
                })
                .await;
            let name = if client_name.trim().is_empty() { client_id.clone() } else { client_name };
            Some(Client { id: client_id, name })
        }
        Ok(ClientMessage::Hello { protocol_version, .. }) => {
            let why = format!(
                "protocol version {protocol_version} is not spoken here (host speaks {PROTOCOL_VERSION}), or clientID is empty"
            );
            let _ = out.send(error(None, ProtocolErrorCode::BadHandshake, why)).await;
            None
        }
        Ok(_) | Err(_) => {
            let _ = out
                .send(error(
                    None,
                    ProtocolErrorCode::BadHandshake,
                    "the first message must be hello",
                ))
                .await;
            None
        }
    }
}

/// "10 s", "0.5 s".
fn seconds(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f32())
}
