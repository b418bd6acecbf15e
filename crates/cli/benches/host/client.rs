//! The bench's client of the daemon: a `nucleic-client` connection that hands every message on
//! as it came (the bench checks each stream for gaps and duplicates itself), never reconnects
//! (a loss fails the run), and gives `sessionChanged` pushes to the caller (counted).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use nucleic_client::{Backoff, Client, ClientError, ClientOptions, Endpoint};
use nucleic_protocol::{ClientMessage, HostMessage};

use super::*;

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

/// Connects and says hello as a new client (its own id: message ids are remembered per client).
pub(crate) async fn connect(addr: SocketAddr, token: &str) -> Res<Client> {
    let mut options = ClientOptions::new("bench", "bench");
    options.raw_events = true;
    options.session_changes = true;
    options.reconnect = Backoff::never();
    options.connect_within = STALL;
    options.idle_within = STALL;
    Ok(Client::connect(Endpoint::Tcp(addr), token, options).await?)
}

pub(crate) async fn send(client: &mut Client, message: &ClientMessage) -> Res<()> {
    Ok(client.send(message.clone()).await?)
}

/// The next message, or an error saying nothing came for `wait`.
pub(crate) async fn recv(client: &mut Client, wait: Duration) -> Res<HostMessage> {
    match client.next_within(wait).await {
        Ok(message) => Ok(message),
        Err(ClientError::Timeout { .. }) => {
            Err(format!("no message from the host for {} s", wait.as_secs()).into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The next message if one comes within `wait` (`None`: none did).
pub(crate) async fn recv_quiet(client: &mut Client, wait: Duration) -> Res<Option<HostMessage>> {
    match client.next_within(wait).await {
        Ok(message) => Ok(Some(message)),
        Err(ClientError::Timeout { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
