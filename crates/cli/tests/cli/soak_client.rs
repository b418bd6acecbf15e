//! The soak's connection to its daemon: starting `nucleic serve`, waiting for it to answer, and
//! a `nucleic-client` connection that hands every message on as it came (the soak judges the
//! stream itself: no cursor, no dedupe) and never reconnects on its own (the soak kills the
//! host on purpose and reconnects when it means to).

use std::path::Path;
use std::time::{Duration, Instant};

use nucleic_client::{Backoff, Client, ClientError, ClientOptions, read_daemon_file, read_token};
use nucleic_protocol::ClientMessage;
use serde_json::Value;

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
) -> Result<Client, String> {
    let pid = daemon.id().ok_or("the daemon has no pid")?;
    let deadline = Instant::now() + START_DEADLINE;
    let info = loop {
        if let Ok(Some(status)) = daemon.try_wait() {
            return Err(format!("the daemon (start {round}) exited while starting: {status}"));
        }
        if let Some(info) = read_daemon_file(home).filter(|i| i.pid == Some(pid)) {
            break info;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the daemon (start {round}, pid {pid}) wrote no daemon.json within {START_DEADLINE:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let token = read_token(home).map_err(|e| e.to_string())?;
    let mut options = ClientOptions::new("soak", "soak");
    options.raw_events = true;
    options.reconnect = Backoff::never();
    options.connect_within = REPLY_DEADLINE;
    options.reply_within = REPLY_DEADLINE;
    Client::connect(info.endpoint(), &token, options)
        .await
        .map_err(|e| format!("cannot connect to the daemon (start {round}): {e}"))
}

/// Sends one message (it carries its `messageID`).
pub(crate) async fn send(client: &mut Client, message: &Value) -> Result<(), String> {
    let what = &message["type"];
    let typed: ClientMessage = serde_json::from_value(message.clone())
        .map_err(|e| format!("{what} is not a client message: {e}"))?;
    client.send(typed).await.map_err(|e| format!("cannot send {what}: {e}"))
}

/// The next message as JSON, or why there is none by `until`.
pub(crate) async fn next_frame(client: Option<&mut Client>, until: Instant) -> Frame {
    let Some(client) = client else {
        return Frame::Closed("not connected".into());
    };
    let within = until.saturating_duration_since(Instant::now());
    match client.next_within(within).await {
        Ok(message) => match serde_json::to_value(&message) {
            Ok(v) => Frame::Message(v),
            Err(e) => Frame::Closed(format!("a message that does not encode ({e})")),
        },
        Err(ClientError::Timeout { .. }) if Instant::now() >= until => Frame::Timeout,
        Err(e) => Frame::Closed(e.to_string()),
    }
}
