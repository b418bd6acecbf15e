//! The host's connection to the relay: dial out, prove the room, serve the device streams —
//! and when the relay is unreachable, refuses the host or the connection drops, try again with
//! bounded, jittered backoff while the host keeps working locally. The state is on the
//! status board (`nucleic doctor`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nucleic_channel::relay::RelayFrame;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;

use super::Remote;
use super::devices::Devices;
use super::status::RelayState;
use crate::AppState;

use nucleic_http::dial::RelaySocket;

impl super::devices::Carrier for RelaySocket {
    async fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        match StreamExt::next(self).await {
            None => Err("the relay closed the connection".to_owned()),
            Some(Err(e)) => Err(format!("relay connection lost: {e}")),
            Some(Ok(Message::Binary(b))) => Ok(Some(b.to_vec())),
            Some(Ok(Message::Close(Some(c)))) => Err(format!(
                "the relay closed the connection ({}: {})",
                u16::from(c.code),
                c.reason
            )),
            Some(Ok(Message::Close(None))) => Err("the relay closed the connection".to_owned()),
            Some(Ok(Message::Text(_))) => Err("the relay sent a text frame".to_owned()),
            Some(Ok(_)) => Ok(None),
        }
    }

    async fn send(&mut self, frame: Vec<u8>) -> Result<(), String> {
        SinkExt::send(self, Message::binary(frame))
            .await
            .map_err(|e| format!("relay connection lost: {e}"))
    }

    async fn ping(&mut self) -> Result<(), String> {
        SinkExt::send(self, Message::Ping(Default::default()))
            .await
            .map_err(|e| format!("relay connection lost: {e}"))
    }

    async fn close(&mut self) {
        let _ = SinkExt::close(self).await;
    }
}

/// Dialling, the TLS handshake and opening the WebSocket.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// From the upgrade to the relay's READY (challenge, answer, check).
const AUTH_WITHIN: Duration = Duration::from_secs(10);
/// The first retry; each failure doubles it up to the configured bound.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Keeps the daemon connected to the relay until `stop` turns true.
pub async fn run(remote: Arc<Remote>, state: AppState, mut stop: watch::Receiver<bool>) {
    let mut attempts: u32 = 0;
    loop {
        if *stop.borrow() {
            break;
        }
        remote.status.update(|s| {
            s.state = RelayState::Connecting;
            s.retry_in_ms = None;
        });
        let why = match dial(&remote).await {
            Ok(socket) => {
                attempts = 0;
                remote.status.update(|s| {
                    s.state = RelayState::Connected;
                    s.attempts = 0;
                    s.last_error = None;
                });
                let mut devices = Devices::new(&remote, &state, true).await;
                let why = devices.serve(socket, &mut stop).await;
                remote.status.update(|s| s.devices = 0);
                why
            }
            Err(why) => why,
        };
        if *stop.borrow() {
            break;
        }
        attempts = attempts.saturating_add(1);
        let delay = backoff(attempts, remote.config.max_backoff);
        remote.status.update(|s| {
            s.state = RelayState::Retrying;
            s.last_error = Some(why.clone());
            s.retry_in_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
            s.attempts = attempts;
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = super::stopped(&mut stop) => break,
        }
    }
    remote.status.update(|s| {
        s.state = RelayState::Stopped;
        s.devices = 0;
        s.retry_in_ms = None;
    });
}

/// `FIRST_BACKOFF · 2^(attempt-1)`, at most `max`, with ±20 % jitter (so many hosts that lost
/// the same relay do not all come back at the same instant).
fn backoff(attempt: u32, max: Duration) -> Duration {
    let exp = FIRST_BACKOFF.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let base = exp.min(max);
    let mut r = [0u8; 1];
    let jitter = if getrandom::fill(&mut r).is_ok() { f64::from(r[0]) / 255.0 } else { 0.5 };
    base.mul_f64(0.8 + 0.4 * jitter).min(max)
}

/// Dials the relay and proves the room: the socket once the relay said READY, or why not.
async fn dial(remote: &Remote) -> Result<RelaySocket, String> {
    let url = format!("{}/v1/rooms/{}/host", remote.relay, remote.host_id());
    let mut socket = match tokio::time::timeout(CONNECT_WITHIN, remote.dialer.connect(&url)).await {
        Err(_) => {
            return Err(format!("the relay did not answer within {} s", CONNECT_WITHIN.as_secs()));
        }
        Ok(Err(why)) => return Err(why),
        Ok(Ok(s)) => s,
    };
    let proved = async {
        let Some(RelayFrame::Challenge(nonce)) = next_frame(&mut socket).await? else {
            return Err("the relay did not send a challenge first".to_owned());
        };
        let answer = remote.identity.relay.answer(&nonce);
        socket.send(Message::binary(answer)).await.map_err(|e| format!("relay: {e}"))?;
        match next_frame(&mut socket).await? {
            Some(RelayFrame::Ready) => Ok(()),
            Some(other) => Err(format!("the relay answered the proof with {other:?}, not READY")),
            None => Err("the relay closed the connection instead of accepting the host".to_owned()),
        }
    };
    match tokio::time::timeout(AUTH_WITHIN, proved).await {
        Ok(Ok(())) => Ok(socket),
        Ok(Err(why)) => Err(why),
        Err(_) => {
            Err(format!("the relay did not accept the host within {} s", AUTH_WITHIN.as_secs()))
        }
    }
}

/// The next relay frame (pings skipped); `None` when the relay closed (the reason is in the
/// error when it gave one).
async fn next_frame(socket: &mut RelaySocket) -> Result<Option<RelayFrame>, String> {
    loop {
        match socket.next().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(format!("relay: {e}")),
            Some(Ok(Message::Binary(b))) => {
                return RelayFrame::parse(&b).map(Some).map_err(|e| format!("relay: {e}"));
            }
            Some(Ok(Message::Close(Some(c)))) => {
                return Err(format!(
                    "the relay closed the connection ({}: {})",
                    u16::from(c.code),
                    c.reason
                ));
            }
            Some(Ok(Message::Close(None))) => return Ok(None),
            Some(Ok(Message::Text(_))) => return Err("the relay sent a text frame".to_owned()),
            Some(Ok(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relay on loopback that challenges the host and accepts any answer.
    async fn accepting_relay() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let relay = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
            let mut challenge = vec![0x01];
            challenge.extend_from_slice(&[7; 32]);
            ws.send(Message::binary(challenge)).await.unwrap();
            let _answer = ws.next().await;
            ws.send(Message::binary(vec![0x03])).await.unwrap();
            let _ = ws.next().await;
        });
        (url, relay)
    }

    #[tokio::test]
    async fn the_relay_socket_has_nagle_off() {
        let home = tempfile::tempdir().unwrap();
        let (relay, _server) = accepting_relay().await;
        let remote = Remote::new(super::super::RemoteConfig {
            relay,
            app: None,
            home: home.path().to_owned(),
            max_backoff: Duration::from_secs(1),
            lan: Vec::new(),
            relay_ca: None,
            allow_plain_relay: false,
        })
        .unwrap();
        let socket = dial(&remote).await.unwrap();
        match socket.get_ref() {
            nucleic_http::dial::RelayStream::Plain(tcp) => assert!(tcp.nodelay().unwrap()),
            nucleic_http::dial::RelayStream::Tls(_) => panic!("a ws:// relay gave a TLS stream"),
        }
    }

    #[test]
    fn backoff_grows_and_stays_bounded() {
        let max = Duration::from_secs(30);
        let first = backoff(1, max);
        assert!(first >= Duration::from_millis(400) && first <= Duration::from_millis(600));
        let fourth = backoff(4, max);
        assert!(fourth >= Duration::from_millis(3200) && fourth <= Duration::from_millis(4800));
        for attempt in [10, 31, 1000, u32::MAX] {
            assert!(backoff(attempt, max) <= max);
            assert!(backoff(attempt, max) >= max.mul_f64(0.8));
        }
    }
}
