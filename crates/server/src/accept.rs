//! The accept loop: HTTP/1.1 connections served by hyper with a header-read timeout, at most
//! `max_connections` open at once (one more gets `503` and is closed), and a graceful shutdown
//! that waits a bounded time for the connections to end. Connections come from a TCP listener
//! or from the daemon's Unix socket (`serve --no-tcp`: no TCP port at all).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::limits::ServerLimits;

/// How long a shutdown waits for open connections to end.
const DRAIN_DEADLINE: Duration = Duration::from_secs(5);
/// Refusals answered at once; past that a connection over the cap is just dropped.
const MAX_REFUSING: usize = 64;
/// How long a refused connection is kept to deliver its `503`.
const REFUSAL_GRACE: Duration = Duration::from_secs(1);

/// Where connections come from.
pub trait Listener: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;
    async fn accept(&self) -> std::io::Result<TcpStream> {
        let (tcp, _) = TcpListener::accept(self).await?;
        // Events are small and latency-sensitive: without TCP_NODELAY, Nagle plus delayed ACKs
        // added ~40 ms stalls (see docs/benchmarks.md).
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;
    async fn accept(&self) -> std::io::Result<UnixStream> {
        UnixListener::accept(self).await.map(|(stream, _)| stream)
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then tells `closing` (open WebSockets
/// close), stops accepting, lets requests in flight finish and waits for connections to end
/// ([`DRAIN_DEADLINE`] at most).
pub async fn serve(
    listener: impl Listener,
    app: Router,
    limits: ServerLimits,
    closing: Arc<watch::Sender<bool>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(tcp) => tcp,
                Err(e) if is_per_connection(&e) => continue,
                // Out of file descriptors and the like: wait a little instead of spinning.
                Err(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => {
                let io = Counted { tcp, _slot: slot };
                tokio::spawn(connection(io, app.clone(), limits, stopped.clone()));
            }
            Err(_) => {
                if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
                    tokio::spawn(refuse(tcp, limits.max_connections, permit));
                }
            }
        }
    }
    drop(listener);
    closing.send_replace(true);
    let _ = stop.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN_DEADLINE, slots.acquire_many(all)).await;
    Ok(())
}

/// Errors that concern one incoming connection, not the listener.
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset)
}

/// One connection: HTTP/1.1 with upgrades (the WebSocket keeps the connection's slot).
async fn connection<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: Counted<T>,
    app: Router,
    limits: ServerLimits,
    mut stopped: watch::Receiver<bool>,
) {
    let service = TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::pin!(conn);
    let stop = async move {
        let _ = stopped.wait_for(|stopped| *stopped).await;
    };
    tokio::select! {
        _ = conn.as_mut() => {}
        () = stop => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Answers a connection over the cap with `503` and closes it; reads what the client sent for
/// a moment so the close is not a reset that could hide the answer.
async fn refuse<T: AsyncRead + AsyncWrite + Unpin>(
    mut tcp: T,
    cap: usize,
    _permit: OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = format!("the host has {cap} connections open, its limit; try again later\n");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_GRACE, async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 1024];
        while tcp.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// A TCP stream that holds one of the connection slots until it is dropped (after an upgrade
/// too: hyper hands the stream itself to the WebSocket).
#[derive(Debug)]
struct Counted<T> {
    tcp: T,
    _slot: OwnedSemaphorePermit,
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}
