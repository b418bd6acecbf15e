//! The transports: a WebSocket to the host over loopback TCP or its Unix socket, one JSON
//! message per text frame, or a device's channel through the relay (`remote`); with a deadline
//! on opening, sending and every read.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use nucleic_protocol::{ClientMessage, HostMessage};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::error::ClientError;
use crate::remote::{ChannelSocket, Opening, RemoteHost};

/// Where a host listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `ws://127.0.0.1:PORT/ws` (or another address, e.g. a test's).
    Tcp(std::net::SocketAddr),
    /// The daemon's Unix socket (`serve --no-tcp`); `port` only fills the `Host` header.
    Unix { path: PathBuf, port: u16 },
}

impl Endpoint {
    /// How a person would name it in a message.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Tcp(addr) => format!("on {addr}"),
            Endpoint::Unix { path, .. } => format!("at {}", path.display()),
        }
    }

    fn host_header(&self) -> String {
        match self {
            Endpoint::Tcp(addr) => addr.to_string(),
            Endpoint::Unix { port, .. } => format!("127.0.0.1:{port}"),
        }
    }
}

/// A byte stream to the host: TCP, or a Unix socket.
trait Duplex: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug> Duplex
    for T
{
}

/// One open connection to a host.
#[derive(Debug)]
pub(crate) struct Socket {
    link: Link,
    at: String,
    /// When the host was last heard from (any frame, pings included).
    pub(crate) last_heard: Instant,
}

/// What carries the messages.
#[derive(Debug)]
enum Link {
    /// A WebSocket on this machine, one message per text frame.
    Local(Box<tokio_tungstenite::WebSocketStream<Box<dyn Duplex>>>),
    /// A device's Noise channel through the relay or the LAN listener.
    Channel(Box<ChannelSocket>),
}

impl Socket {
    /// Opens `endpoint` with `token` as the bearer credential, within `within`.
    pub(crate) async fn open(
        endpoint: &Endpoint,
        token: &str,
        within: Duration,
    ) -> Result<Socket, ClientError> {
        let at = endpoint.describe();
        let fail = |message: String| ClientError::Connect { at: at.clone(), message };
        let url = format!("ws://{}/ws", endpoint.host_header());
        let mut request = url.into_client_request().map_err(|e| fail(e.to_string()))?;
        let bearer = format!("Bearer {}", token.trim())
            .parse()
            .map_err(|_| fail("the token is not a valid header value".to_owned()))?;
        request.headers_mut().insert("authorization", bearer);
        let open = async {
            let stream: Box<dyn Duplex> = match endpoint {
                Endpoint::Unix { path, .. } => Box::new(
                    tokio::net::UnixStream::connect(path).await.map_err(|e| fail(e.to_string()))?,
                ),
                Endpoint::Tcp(addr) => Box::new(
                    tokio::net::TcpStream::connect(addr).await.map_err(|e| fail(e.to_string()))?,
                ),
            };
            let (ws, _) =
                tokio_tungstenite::client_async(request, stream).await.map_err(|e| match e {
                    // The host refused the credential (401): trying again will not help.
                    tokio_tungstenite::tungstenite::Error::Http(response)
                        if response.status() == 401 =>
                    {
                        let body = response.body().as_deref().unwrap_or_default();
                        let why = String::from_utf8_lossy(body).trim().to_owned();
                        ClientError::Refused(format!("{at}: {why}"))
                    }
                    other => fail(other.to_string()),
                })?;
            Ok::<_, ClientError>(ws)
        };
        let ws = tokio::time::timeout(within, open).await.map_err(|_| ClientError::Timeout {
            what: format!("opening the WebSocket to the host {at}"),
            within,
        })??;
        Ok(Socket { link: Link::Local(Box::new(ws)), at, last_heard: Instant::now() })
    }

    /// Opens a channel to a remote host, within `within`.
    pub(crate) async fn open_remote(
        host: &RemoteHost,
        opening: &Opening,
        within: Duration,
    ) -> Result<Socket, ClientError> {
        let channel = ChannelSocket::open(host, opening, within).await?;
        let at = channel.at().to_owned();
        Ok(Socket { link: Link::Channel(Box::new(channel)), at, last_heard: Instant::now() })
    }

    /// Where this socket goes, for messages.
    pub(crate) fn at(&self) -> &str {
        &self.at
    }

    /// Sends one message, within `within`.
    pub(crate) async fn send(
        &mut self,
        message: &ClientMessage,
        within: Duration,
    ) -> Result<(), ClientError> {
        let what = message_name(message);
        let text = serde_json::to_string(message)
            .map_err(|e| ClientError::Send { what: what.clone(), message: e.to_string() })?;
        let sent = match &mut self.link {
            Link::Local(ws) => {
                let sent = tokio::time::timeout(within, ws.send(Message::Text(text.into()))).await;
                sent.map(|r| r.map_err(|e| lost(&self.at, e)))
            }
            Link::Channel(channel) => tokio::time::timeout(within, channel.send_text(&text)).await,
        };
        match sent {
            Err(_) => Err(ClientError::Timeout { what: format!("sending {what}"), within }),
            Ok(result) => result,
        }
    }

    /// The next message, or `Ok(None)` when `until` passes first. Control frames only mark the
    /// host as heard from (tungstenite answers pings itself).
    pub(crate) async fn recv(
        &mut self,
        until: Instant,
    ) -> Result<Option<HostMessage>, ClientError> {
        let ws = match &mut self.link {
            Link::Local(ws) => ws,
            Link::Channel(channel) => {
                let text = channel.recv_text(until, &mut self.last_heard).await?;
                return text.map(|t| decode(&t)).transpose();
            }
        };
        loop {
            let frame = match tokio::time::timeout_at(until.into(), ws.next()).await {
                Err(_) => return Ok(None),
                Ok(frame) => frame,
            };
            self.last_heard = Instant::now();
            match frame {
                None => {
                    return Err(ClientError::Closed {
                        at: self.at.clone(),
                        code: None,
                        reason: "the stream ended".into(),
                    });
                }
                Some(Err(e)) => return Err(lost(&self.at, e)),
                Some(Ok(Message::Close(frame))) => {
                    let (code, reason) = frame
                        .map(|f| (Some(u16::from(f.code)), f.reason.to_string()))
                        .unwrap_or((None, String::new()));
                    return Err(ClientError::Closed { at: self.at.clone(), code, reason });
                }
                Some(Ok(Message::Text(text))) => return decode(&text).map(Some),
                Some(Ok(Message::Binary(_))) => {
                    return Err(ClientError::BadMessage {
                        error: "a binary frame".into(),
                        preview: String::new(),
                    });
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            }
        }
    }

    /// Closes the socket politely (best effort, bounded).
    pub(crate) async fn close(self) {
        match self.link {
            Link::Local(mut ws) => {
                let _ = tokio::time::timeout(Duration::from_secs(1), (*ws).close(None)).await;
            }
            Link::Channel(channel) => channel.close().await,
        }
    }
}

fn lost(at: &str, e: tokio_tungstenite::tungstenite::Error) -> ClientError {
    ClientError::Closed { at: at.to_owned(), code: None, reason: e.to_string() }
}

/// A host message from a text frame; what is not one is a [`ClientError::BadMessage`].
pub(crate) fn decode(text: &str) -> Result<HostMessage, ClientError> {
    serde_json::from_str(text).map_err(|e| ClientError::BadMessage {
        error: e.to_string(),
        preview: text.chars().take(200).collect(),
    })
}

/// A message's `type` and id, for errors (`intent m3`).
pub(crate) fn message_name(message: &ClientMessage) -> String {
    let kind = serde_json::to_value(message)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str().map(str::to_owned)))
        .unwrap_or_else(|| "a message".into());
    match message.message_id() {
        Some(id) => format!("{kind} {id}"),
        None => kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_host_message_is_a_clear_error() {
        for bad in ["not json", r#"{"type":"frobnicate"}"#, r#"{"type":"ack"}"#, "[]"] {
            match decode(bad) {
                Err(ClientError::BadMessage { preview, .. }) => assert_eq!(preview, bad),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let long = "x".repeat(5000);
        match decode(&long) {
            Err(e @ ClientError::BadMessage { .. }) => assert!(e.to_string().len() < 400, "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(r#"{"type":"ack","messageID":"m1"}"#),
            Ok(HostMessage::Ack { .. })
        ));
    }

    #[test]
    fn messages_are_named_by_type_and_id() {
        let m = ClientMessage::ListProjects { message_id: "m7".into() };
        assert_eq!(message_name(&m), "listProjects m7");
    }
}
