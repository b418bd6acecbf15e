//! A TCP listener whose connections all break once the mock server handle is dropped.
//!
//! axum runs each connection in its own task, which aborting the server task does not end; a
//! hanging request or a slow stream would otherwise outlive the server.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Resolves once the sender side of the shutdown channel is dropped.
fn closed(mut rx: watch::Receiver<()>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { while rx.changed().await.is_ok() {} })
}

/// Accepts loopback connections and wraps them in [`GuardedStream`].
#[derive(Debug)]
pub(crate) struct GuardedListener {
    inner: TcpListener,
    shutdown: watch::Receiver<()>,
}

impl GuardedListener {
    pub(crate) fn new(inner: TcpListener, shutdown: watch::Receiver<()>) -> Self {
        Self { inner, shutdown }
    }
}

impl Listener for GuardedListener {
    type Io = GuardedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let guarded = GuardedStream {
                        inner: stream,
                        closed: closed(self.shutdown.clone()),
                        is_closed: false,
                    };
                    return (guarded, addr);
                }
                // e.g. EMFILE: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A TCP stream that fails every read and write after the server is dropped, so that hyper
/// drops (and closes) the connection.
pub(crate) struct GuardedStream {
    inner: TcpStream,
    closed: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// `closed` has resolved (it must not be polled again).
    is_closed: bool,
}

impl std::fmt::Debug for GuardedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedStream").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl GuardedStream {
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if !self.is_closed && self.closed.as_mut().poll(cx).is_ready() {
            self.is_closed = true;
        }
        if self.is_closed {
            return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "mock server dropped"));
        }
        Ok(())
    }
}

impl AsyncRead for GuardedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for GuardedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
