//! Opt-in direct access (`nucleic serve --lan ADDR`): a listener that serves nothing but
//! `GET /v1/channel`, a WebSocket carrying one device's Noise channel exactly as the relay would
//! (the same handshakes and frames), so a phone on the LAN — or behind a tunnel the person
//! already runs, like `tailscale serve` — is end-to-end encrypted even over plain HTTP. Requests
//! must name an allowed `Host` (the bound address, and `--allow-host` names for proxies).

use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::StreamExt;
use nucleic_channel::relay::RelayFrame;

use super::devices::{Carrier, Devices};
use crate::AppState;

/// The state of the LAN listener: the daemon's, and the `Host` values it answers to.
#[derive(Debug, Clone)]
struct Lan {
    state: AppState,
    allowed_hosts: Arc<Vec<String>>,
}

/// The LAN listener's routes: the channel only.
pub fn router(state: AppState, allowed_hosts: Vec<String>) -> Router {
    let lan = Lan { state, allowed_hosts: Arc::new(allowed_hosts) };
    Router::new()
        .route("/v1/channel", get(upgrade))
        .layer(axum::middleware::from_fn_with_state(lan.clone(), check_host))
        .with_state(lan)
}

async fn check_host(State(lan): State<Lan>, request: Request, next: Next) -> Response {
    let ok = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| lan.allowed_hosts.iter().any(|a| a.eq_ignore_ascii_case(h)));
    if !ok {
        return (StatusCode::FORBIDDEN, "refused: this Host is not allowed (--allow-host)\n")
            .into_response();
    }
    next.run(request).await
}

async fn upgrade(State(lan): State<Lan>, ws: WebSocketUpgrade) -> Response {
    let Some(remote) = lan.state.remote().cloned() else {
        return (StatusCode::NOT_FOUND, "remote access is off\n").into_response();
    };
    ws.max_message_size(nucleic_channel::MAX_FRAME).on_upgrade(move |socket| async move {
        let mut stop = lan.state.closing.subscribe();
        let mut devices = Devices::new(&remote, &lan.state, false).await;
        let _ = devices.serve(Direct { ws: socket, opened: false }, &mut stop).await;
    })
}

/// The one stream of a direct connection, as relay frames.
const STREAM: u32 = 0;
/// What the relay says when the host drops a device (the device treats it the same).
const CLOSED_BY_HOST: u16 = 4000;

struct Direct {
    ws: WebSocket,
    opened: bool,
}

impl Carrier for Direct {
    async fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        if !self.opened {
            self.opened = true;
            return Ok(Some(vec![0x11, 0, 0, 0, 0]));
        }
        match self.ws.next().await {
            Some(Ok(Message::Binary(b))) => {
                Ok(Some(nucleic_channel::relay::data_frame(STREAM, &b)))
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(None),
            Some(Ok(Message::Text(_))) => Err("the device sent a text frame".to_owned()),
            Some(Ok(Message::Close(_))) | None => Err("the device left".to_owned()),
            Some(Err(e)) => Err(format!("the device's connection failed: {e}")),
        }
    }

    async fn send(&mut self, frame: Vec<u8>) -> Result<(), String> {
        match RelayFrame::parse(&frame) {
            Ok(RelayFrame::Data { payload, .. }) => {
                self.ws.send(Message::Binary(payload.into())).await.map_err(|e| e.to_string())
            }
            Ok(RelayFrame::Close(_)) => {
                let close =
                    CloseFrame { code: CLOSED_BY_HOST, reason: "closed by the host".into() };
                let _ = self.ws.send(Message::Close(Some(close))).await;
                Err("the host closed the device's channel".to_owned())
            }
            _ => Ok(()),
        }
    }

    async fn ping(&mut self) -> Result<(), String> {
        self.ws.send(Message::Ping(Default::default())).await.map_err(|e| e.to_string())
    }

    async fn close(&mut self) {
        let _ = self.ws.send(Message::Close(None)).await;
    }
}
