//! A device's connection to a host from afar: a WebSocket to the host's relay
//! (`<relay>/v1/rooms/<host id>/device`) or its LAN listener (`<lan>/v1/channel`), a Noise
//! handshake as the initiator — pairing (`XXpsk3`, the link's one-time secret) or reconnect
//! (`IK`) — then the unchanged sync protocol inside the channel, one text message per channel
//! message (`nucleic_channel::framing`). The host's pings are answered; a close says why. No
//! token crosses: the device's key is its credential. The browser's twin is
//! `web/src/remote/socket.ts`; the wire is `docs/channel.md`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use nucleic_channel::framing::{self, ChannelFrame};
use nucleic_channel::streams::{MODE_CONNECT, MODE_PAIR};
use nucleic_channel::{Handshake, PairingSecret, PublicKey, StaticKeypair, Transport, prologue};
use nucleic_http::dial::{Dialer, RelaySocket};
use tokio_tungstenite::tungstenite::Message;

use crate::error::ClientError;

/// The relay closes a device's WebSocket with this code when the host dropped its stream.
const CLOSED_BY_HOST: u16 = 4000;

/// A host as a paired device knows it.
#[derive(Debug, Clone)]
pub struct RemoteHost {
    /// The relay's WebSocket base URL (`ws://` or `wss://`).
    pub relay: String,
    /// The host's id: its room at the relay, mixed into every handshake.
    pub host_id: String,
    /// The host's static key: a handshake with any other key fails.
    pub host_key: PublicKey,
    /// The host's direct addresses (`ws://host:port` of its LAN listener), tried first.
    pub direct: Vec<String>,
    /// This device's key for that host.
    pub device: StaticKeypair,
    /// A PEM file of extra CAs for a `wss://` relay (a self-hosted relay's own CA).
    pub relay_ca: Option<PathBuf>,
}

/// How a connection begins.
#[derive(Debug, Clone)]
pub enum Opening {
    /// The first connection: prove the pairing link's secret; the host records this device.
    Pair(PairingSecret),
    /// A paired device coming back.
    Connect,
}

/// One open channel to a host.
#[derive(Debug)]
pub(crate) struct ChannelSocket {
    ws: RelaySocket,
    transport: Transport,
    at: String,
    /// Whether the host has sent anything over the open channel yet: a pairing finishes on
    /// the device's side before the host checked the secret, so a close before that is a
    /// refusal, not a lost connection.
    heard: bool,
}

impl ChannelSocket {
    /// Dials the host's direct addresses, then its relay, and makes the handshake, all within
    /// `within`. A direct address that cannot be reached is skipped; a refusal is final.
    pub(crate) async fn open(
        host: &RemoteHost,
        opening: &Opening,
        within: Duration,
    ) -> Result<ChannelSocket, ClientError> {
        let deadline = Instant::now() + within;
        let relay_url = format!("{}/v1/rooms/{}/device", host.relay, host.host_id);
        let mut routes: Vec<(String, String)> =
            host.direct.iter().map(|d| (d.clone(), format!("{d}/v1/channel"))).collect();
        routes.push((host.relay.clone(), relay_url));
        let mut last = None;
        for (base, url) in routes {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, Self::open_at(host, opening, &base, &url)).await {
                Ok(Ok(socket)) => return Ok(socket),
                Ok(Err(e @ ClientError::Connect { .. })) => last = Some(e),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(ClientError::Timeout {
                        what: format!("opening the channel to the host at {url}"),
                        within,
                    });
                }
            }
        }
        Err(last.unwrap_or_else(|| ClientError::Connect {
            at: host.relay.clone(),
            message: "no address to reach the host at".into(),
        }))
    }

    async fn open_at(
        host: &RemoteHost,
        opening: &Opening,
        base: &str,
        url: &str,
    ) -> Result<ChannelSocket, ClientError> {
        let at = format!("at {url}");
        let connect = |message: String| ClientError::Connect { at: at.clone(), message };
        // Plain ws:// is the host's choice (it put the address in the link); the channel is
        // end-to-end encrypted either way.
        let dialer = Dialer::new(base, host.relay_ca.as_deref(), true)
            .map_err(|e| connect(e.to_string()))?;
        let mut ws = dialer.connect(url).await.map_err(connect)?;
        let p = prologue(&host.host_id);
        let refused = |why: String| ClientError::Refused(format!("{at}: {why}"));
        let (handshake, mode) = match opening {
            Opening::Pair(secret) => {
                (Handshake::pair_initiator(&host.device, secret, &host.host_key, &p), MODE_PAIR)
            }
            Opening::Connect => {
                (Handshake::connect_initiator(&host.device, &host.host_key, &p), MODE_CONNECT)
            }
        };
        let mut handshake = handshake.map_err(|e| refused(e.to_string()))?;
        let m1 = handshake.write_message(&[]).map_err(|e| refused(e.to_string()))?;
        let mut first = Vec::with_capacity(m1.len() + 1);
        first.push(mode);
        first.extend_from_slice(&m1);
        send_binary(&mut ws, first, &at).await?;
        let m2 = match next_binary(&mut ws, &at).await? {
            Ok(m2) => m2,
            Err(Some(CLOSED_BY_HOST)) => return Err(refusal(&at)),
            Err(code) => {
                let reason = "the connection closed during the handshake".to_owned();
                return Err(ClientError::Closed { at, code, reason });
            }
        };
        // A host answering with another key than the link's fails here: whoever answered is
        // not the host this device paired with (a relay posing as it, say).
        handshake.read_message(&m2).map_err(|e| refused(e.to_string()))?;
        if handshake.is_my_turn() {
            let m3 = handshake.write_message(&[]).map_err(|e| refused(e.to_string()))?;
            send_binary(&mut ws, m3, &at).await?;
        }
        let transport = handshake.into_transport().map_err(|e| refused(e.to_string()))?;
        Ok(ChannelSocket { ws, transport, at, heard: false })
    }

    /// Where this channel goes, for messages.
    pub(crate) fn at(&self) -> &str {
        &self.at
    }

    /// Seals and sends one channel message.
    async fn send_message(&mut self, message: &[u8]) -> Result<(), ClientError> {
        let frames = self.transport.seal(message).map_err(|e| self.failed(e.to_string()))?;
        for frame in frames {
            send_binary(&mut self.ws, frame, &self.at).await?;
        }
        Ok(())
    }

    /// Sends one sync-protocol message.
    pub(crate) async fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.send_message(&framing::encode_text(text)).await
    }

    /// The next sync-protocol message, or `Ok(None)` when `until` passes first. The host's pings
    /// are answered here; every frame marks the host as heard from in `heard_at`.
    pub(crate) async fn recv_text(
        &mut self,
        until: Instant,
        heard_at: &mut Instant,
    ) -> Result<Option<String>, ClientError> {
        loop {
            let frame = match tokio::time::timeout_at(until.into(), self.ws.next()).await {
                Err(_) => return Ok(None),
                Ok(frame) => frame,
            };
            *heard_at = Instant::now();
            let bytes = match frame {
                None => return Err(self.ended(None, "the stream ended".into())),
                Some(Err(e)) => return Err(self.ended(None, e.to_string())),
                Some(Ok(Message::Close(frame))) => {
                    let (code, reason) = frame
                        .map(|f| (Some(u16::from(f.code)), f.reason.to_string()))
                        .unwrap_or((None, String::new()));
                    return Err(self.ended(code, reason));
                }
                Some(Ok(Message::Binary(b))) => b,
                Some(Ok(Message::Text(_))) => return Err(self.failed("a text frame".into())),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            };
            let Some(message) =
                self.transport.open(&bytes).map_err(|e| self.failed(e.to_string()))?
            else {
                continue;
            };
            self.heard = true;
            match framing::decode(&message) {
                Ok(ChannelFrame::Text(text)) => return Ok(Some(text)),
                Ok(ChannelFrame::Ping) => self.send_message(&[framing::PONG]).await?,
                Ok(ChannelFrame::Pong) => {}
                Ok(ChannelFrame::Close { code, reason }) => {
                    return Err(ClientError::Closed {
                        at: self.at.clone(),
                        code: Some(code),
                        reason,
                    });
                }
                Err(e) => return Err(self.failed(e.to_string())),
            }
        }
    }

    /// Closes the channel politely (a close message, then the WebSocket), best effort, bounded.
    pub(crate) async fn close(mut self) {
        let polite = async {
            let _ = self.send_message(&framing::encode_close(1000, "closed")).await;
            let _ = self.ws.close(None).await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), polite).await;
    }

    /// The WebSocket closed: before the host said anything over the channel that is a refusal
    /// (the relay closes a stream the host dropped with 4000), after it a lost connection.
    fn ended(&self, code: Option<u16>, reason: String) -> ClientError {
        if !self.heard && code == Some(CLOSED_BY_HOST) {
            return refusal(&self.at);
        }
        ClientError::Closed { at: self.at.clone(), code, reason }
    }

    /// The channel failed (a frame that does not open, a malformed message): a lost connection,
    /// made again with a fresh handshake.
    fn failed(&self, why: String) -> ClientError {
        ClientError::Closed {
            at: self.at.clone(),
            code: None,
            reason: format!("the channel failed: {why}"),
        }
    }
}

/// The refusal a close before the host said anything means.
fn refusal(at: &str) -> ClientError {
    ClientError::Refused(format!(
        "{at}: the host refused this device (never paired, revoked, or a used or expired pairing link)"
    ))
}

async fn send_binary(ws: &mut RelaySocket, bytes: Vec<u8>, at: &str) -> Result<(), ClientError> {
    ws.send(Message::Binary(bytes.into())).await.map_err(|e| ClientError::Closed {
        at: at.to_owned(),
        code: None,
        reason: e.to_string(),
    })
}

/// The next binary frame, or the close code (if any) when the stream closed first.
async fn next_binary(
    ws: &mut RelaySocket,
    at: &str,
) -> Result<Result<Vec<u8>, Option<u16>>, ClientError> {
    loop {
        match ws.next().await {
            None => return Ok(Err(None)),
            Some(Err(e)) => {
                let reason = e.to_string();
                return Err(ClientError::Closed { at: at.to_owned(), code: None, reason });
            }
            Some(Ok(Message::Binary(b))) => return Ok(Ok(b.to_vec())),
            Some(Ok(Message::Close(frame))) => return Ok(Err(frame.map(|f| u16::from(f.code)))),
            Some(Ok(Message::Text(_))) => {
                return Err(ClientError::BadMessage {
                    error: "a text frame outside the channel".into(),
                    preview: String::new(),
                });
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
        }
    }
}
