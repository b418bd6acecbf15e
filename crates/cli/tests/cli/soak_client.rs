//! The soak's connection to its daemon: starting `nucleic serve`, waiting for it to answer,
//! the WebSocket with `hello`, and reading frames with a deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::daemon::Socket;
use crate::support::nucleic;

/// How long the host may take to answer after a restart (recovery included).
pub(crate) const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long a request may wait for its reply.
pub(crate) const REPLY_DEADLINE: Duration = Duration::from_secs(30);
/// What reading the connection gave.
pub(crate) enum Frame {
    Message(Value),
    Timeout,
    Closed(String),
}

/// Starts `nucleic serve` on `home`, its output appended to `soak-daemon.log` beside it.
pub(crate) fn start_daemon(home: &Path) -> Result<tokio::process::Child, String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.with_file_name("soak-daemon.log"))
        .map_err(|e| format!("cannot open the daemon log: {e}"))?;
    let err = log.try_clone().map_err(|e| format!("cannot clone the daemon log: {e}"))?;
    let child = tokio::process::Command::new(nucleic())
        .arg("serve")
        .arg("--home")
        .arg(home)
        .args(["--bind", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `nucleic serve`: {e}"))?;
    Ok(child)
}

/// Waits for `daemon` (start number `round`) to write `daemon.json`, connects, says hello.
pub(crate) async fn connect(
    home: &Path,
    daemon: &mut tokio::process::Child,
    round: usize,
) -> Result<Socket, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let pid = daemon.id().ok_or("the daemon has no pid")?;
    let deadline = Instant::now() + START_DEADLINE;
    let port = loop {
        if let Ok(Some(status)) = daemon.try_wait() {
            return Err(format!("the daemon (start {round}) exited while starting: {status}"));
        }
        let info = std::fs::read_to_string(home.join("daemon.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        if let Some(info) = info
            && info["pid"].as_u64() == Some(u64::from(pid))
            && let Some(port) = info["port"].as_u64()
        {
            break port;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the daemon (start {round}, pid {pid}) wrote no daemon.json within {START_DEADLINE:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let token = std::fs::read_to_string(home.join("token"))
        .map_err(|e| format!("cannot read the token: {e}"))?;
    let mut request = format!("ws://127.0.0.1:{port}/ws")
        .into_client_request()
        .map_err(|e| format!("bad WebSocket address: {e}"))?;
    let bearer =
        format!("Bearer {}", token.trim()).parse().map_err(|e| format!("bad token header: {e}"))?;
    request.headers_mut().insert("authorization", bearer);
    let connected = tokio::time::timeout(REPLY_DEADLINE, tokio_tungstenite::connect_async(request))
        .await
        .map_err(|_| format!("connecting to the daemon (start {round}) timed out"))?
        .map_err(|e| format!("cannot connect to the daemon (start {round}): {e}"))?;
    let mut socket = connected.0;
    let hello =
        json!({"type": "hello", "clientID": "soak", "clientName": "soak", "protocolVersion": 1});
    send(&mut socket, &hello).await?;
    match next_frame(Some(&mut socket), Instant::now() + REPLY_DEADLINE).await {
        Frame::Message(v) if v["type"] == "welcome" => Ok(socket),
        Frame::Message(v) => Err(format!("hello answered by {v}")),
        Frame::Timeout => Err(format!("no welcome within {REPLY_DEADLINE:?}")),
        Frame::Closed(e) => Err(format!("the connection closed before welcome: {e}")),
    }
}

/// Sends one message.
pub(crate) async fn send(socket: &mut Socket, message: &Value) -> Result<(), String> {
    tokio::time::timeout(REPLY_DEADLINE, socket.send(Message::Text(message.to_string().into())))
        .await
        .map_err(|_| format!("sending {} timed out", message["type"]))?
        .map_err(|e| format!("cannot send {}: {e}", message["type"]))
}

/// The next JSON message, or why there is none by `until`.
pub(crate) async fn next_frame(socket: Option<&mut Socket>, until: Instant) -> Frame {
    let Some(socket) = socket else {
        return Frame::Closed("not connected".into());
    };
    loop {
        match tokio::time::timeout_at(until.into(), socket.next()).await {
            Err(_) => return Frame::Timeout,
            Ok(None) => return Frame::Closed("the stream ended".into()),
            Ok(Some(Err(e))) => return Frame::Closed(e.to_string()),
            Ok(Some(Ok(Message::Close(reason)))) => {
                return Frame::Closed(format!("{reason:?}"));
            }
            Ok(Some(Ok(Message::Text(text)))) => match serde_json::from_str(&text) {
                Ok(v) => return Frame::Message(v),
                Err(e) => return Frame::Closed(format!("a frame that is not JSON ({e})")),
            },
            Ok(Some(Ok(_))) => {}
        }
    }
}
