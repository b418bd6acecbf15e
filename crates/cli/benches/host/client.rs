//! The bench's WebSocket client of the daemon.

#![allow(unused_imports)]

use std::collections::HashMap;
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{
    Backend, ClientMessage, EventKind, HostMessage, NewSession, PROTOCOL_VERSION, Verbosity,
};
use nucleic_server::{AppState, load_or_create_token};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

use super::*;

// ----- the WebSocket client -----------------------------------------------------------------

/// Runs `f` on its own thread and single-threaded runtime, like a separate client process.
pub(crate) fn client_thread<T, F, Fut>(f: F) -> std::thread::JoinHandle<Res<T>>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Res<T>>,
{
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(f())
    })
}

pub(crate) async fn join<T: Send + 'static>(handle: std::thread::JoinHandle<Res<T>>) -> Res<T> {
    tokio::task::spawn_blocking(move || handle.join())
        .await?
        .map_err(|_| -> BoxError { "the client thread panicked".into() })?
}

pub(crate) async fn connect(addr: SocketAddr, token: &str) -> Res<Socket> {
    let mut request = format!("ws://{addr}/ws").into_client_request()?;
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    // Message ids are remembered per client: every connection is a new client.
    static CLIENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CLIENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let hello = ClientMessage::Hello {
        device: None,
        client_id: format!("bench-{}-{n}", std::process::id()),
        client_name: "bench".into(),
        protocol_version: PROTOCOL_VERSION,
        features: vec![],
    };
    send(&mut socket, &hello).await?;
    match recv(&mut socket, STALL).await? {
        HostMessage::Welcome { .. } => Ok(socket),
        other => Err(format!("expected welcome, got {other:?}").into()),
    }
}

pub(crate) async fn send(socket: &mut Socket, message: &ClientMessage) -> Res<()> {
    socket.send(Message::Text(serde_json::to_string(message)?.into())).await?;
    Ok(())
}

pub(crate) async fn recv(socket: &mut Socket, wait: Duration) -> Res<HostMessage> {
    loop {
        let frame = tokio::time::timeout(wait, socket.next())
            .await
            .map_err(|_| format!("no message from the host for {} s", wait.as_secs()))?;
        if let Some(message) = decode(frame)? {
            return Ok(message);
        }
    }
}

/// A text frame's message; `None` for control frames.
pub(crate) fn decode(
    frame: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
) -> Res<Option<HostMessage>> {
    match frame.ok_or("the host closed the WebSocket")?? {
        Message::Text(text) => Ok(Some(serde_json::from_str(text.as_str())?)),
        Message::Close(_) => Err("the host closed the WebSocket".into()),
        _ => Ok(None),
    }
}
