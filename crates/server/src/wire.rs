//! What a sync-protocol connection is carried on, whatever carries it: text frames in, text
//! frames, pings and a close out. The WebSocket of `/ws` is one carrier; a device's Noise
//! channel through the relay (`remote`) is another. The protocol is the same on both.

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};

/// A frame from the client.
#[derive(Debug)]
pub enum InFrame {
    /// A text frame: one sync-protocol message.
    Text(String),
    /// A binary frame (the protocol has none: refused with `badMessage`).
    Binary,
    /// Proof of life only (a pong, a ping).
    Alive,
    /// The client closed.
    Close,
}

/// A frame to the client.
#[derive(Debug)]
pub enum OutFrame {
    Text(String),
    Ping,
    Close { code: u16, reason: String },
}

/// The carrier failed or is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Broken;

/// Where a connection's frames come from.
pub trait Source: Send + 'static {
    /// The next frame; `None` when the carrier ended or failed.
    fn next(&mut self) -> impl Future<Output = Option<InFrame>> + Send;
}

/// Where a connection's frames go.
pub trait Sink: Send + 'static {
    fn send(&mut self, frame: OutFrame) -> impl Future<Output = Result<(), Broken>> + Send;
}

impl Source for SplitStream<WebSocket> {
    async fn next(&mut self) -> Option<InFrame> {
        match StreamExt::next(self).await? {
            Ok(Message::Text(t)) => Some(InFrame::Text(t.to_string())),
            Ok(Message::Binary(_)) => Some(InFrame::Binary),
            Ok(Message::Ping(_) | Message::Pong(_)) => Some(InFrame::Alive),
            Ok(Message::Close(_)) => Some(InFrame::Close),
            Err(_) => None,
        }
    }
}

impl Sink for SplitSink<WebSocket, Message> {
    async fn send(&mut self, frame: OutFrame) -> Result<(), Broken> {
        let message = match frame {
            OutFrame::Text(text) => Message::Text(text.into()),
            OutFrame::Ping => Message::Ping(Default::default()),
            OutFrame::Close { code, reason } => {
                Message::Close(Some(CloseFrame { code, reason: reason.into() }))
            }
        };
        SinkExt::send(self, message).await.map_err(|_| Broken)
    }
}
