//! Moving a relayed connection's bytes between two sockets inside the kernel (`splice(2)`
//! through a pipe, each direction its own), so the proxy copies nothing through user space.

use std::io;
use std::os::fd::OwnedFd;

use rustix::pipe::{PipeFlags, SpliceFlags, fcntl_setpipe_size, pipe_with, splice};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The pipe each direction moves through (the most one splice carries).
const PIPE_BYTES: usize = 1 << 20;

/// Relays `a` ⇄ `b` until both directions ended. An error on either (a side reset, say: an
/// upstream killed mid-download) ends both as an abort: each side is reset when its owner
/// closes it, so a client sees an error where the stream broke, not an end that could pass for
/// a complete download.
pub async fn relay(a: &TcpStream, b: &TcpStream) -> io::Result<()> {
    let up = pump(a, b);
    let down = pump(b, a);
    tokio::pin!(up, down);
    let result = tokio::select! {
        result = &mut up => match result { Ok(()) => down.await, Err(e) => Err(e) },
        result = &mut down => match result { Ok(()) => up.await, Err(e) => Err(e) },
    };
    if result.is_err() {
        for side in [a, b] {
            // Closing with a zero linger sends a reset; without it, an end of stream.
            let _ = rustix::net::sockopt::set_socket_linger(side, Some(std::time::Duration::ZERO));
        }
    }
    result
}

/// One direction: `from` → pipes → `to`, until `from` ends (then `to` is shut for writing).
/// Two pipes take turns, so the next read goes on while the last one is still being written:
/// each read goes into an empty pipe (a "would block" is then always the socket's) and the
/// pipes are written in the order they were filled.
async fn pump(from: &TcpStream, to: &TcpStream) -> io::Result<()> {
    let mut pipes = Vec::with_capacity(2);
    let mut chunk = PIPE_BYTES;
    for _ in 0..2 {
        let (pipe_out, pipe_in) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        // A smaller pipe than asked (a limit of the system) only means more splices.
        chunk = chunk.min(fcntl_setpipe_size(&pipe_in, PIPE_BYTES).unwrap_or(64 * 1024));
        pipes.push((pipe_out, pipe_in));
    }
    let mut held = [0usize; 2];
    let (mut filling, mut draining) = (0usize, 0usize);
    let mut ended = false;
    loop {
        if ended && held == [0, 0] {
            let _ = rustix::net::shutdown(to, rustix::net::Shutdown::Write);
            return Ok(());
        }
        let can_fill = !ended && held[filling] == 0;
        let can_drain = held[draining] > 0;
        tokio::select! {
            filled = fill(from, &pipes[filling].1, chunk), if can_fill => {
                match filled? {
                    0 => ended = true,
                    n => {
                        held[filling] = n;
                        filling ^= 1;
                    }
                }
            }
            drained = drain_some(&pipes[draining].0, to, held[draining]), if can_drain => {
                held[draining] -= drained?;
                if held[draining] == 0 {
                    draining ^= 1;
                }
            }
        }
    }
}

/// Moves what `from` has (at most `chunk`) into the empty pipe; 0 at its end.
async fn fill(from: &TcpStream, pipe_in: &OwnedFd, chunk: usize) -> io::Result<usize> {
    loop {
        from.readable().await?;
        let moved = from.try_io(Interest::READABLE, || {
            // The pipe is empty here: "would block" can only be the socket's.
            splice(from, None, pipe_in, None, chunk, SpliceFlags::NONBLOCK | SpliceFlags::MOVE)
                .map_err(io::Error::from)
        });
        match moved {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Moves some of the `left` bytes in the pipe into `to` (one splice); how many.
async fn drain_some(pipe_out: &OwnedFd, to: &TcpStream, left: usize) -> io::Result<usize> {
    loop {
        to.writable().await?;
        let moved = to.try_io(Interest::WRITABLE, || {
            splice(pipe_out, None, to, None, left, SpliceFlags::NONBLOCK | SpliceFlags::MOVE)
                .map_err(io::Error::from)
        });
        match moved {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "the socket took nothing"));
            }
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}
