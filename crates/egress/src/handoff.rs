//! How the bridge hands an agent's connection to the host's proxy: over the proxy's Unix socket,
//! one message per connection carrying the connection itself (`SCM_RIGHTS`) and a one-line
//! header saying what it is — `P` (it speaks the HTTP proxy protocol; `P agent` when the agent
//! program itself opened it, not a command: see [`crate::origin`]) or `F host:port` (a
//! forwarded endpoint: tunnel it there). The host then reads and writes the agent's socket
//! directly; no byte passes through the bridge. Anything in the sandbox can reach the socket and
//! write any header: saying `agent` only gets a name off the list refused without asking.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType, recvmsg, sendmsg,
};
use tokio::io::Interest;

use crate::origin::Origin;

/// The longest header accepted.
const MAX_HEADER: usize = 512;

/// What a handed-over connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handoff {
    /// The agent speaks the HTTP proxy protocol on it; who in the sandbox opened it.
    Proxy(Origin),
    /// A forwarded endpoint: its bytes go to `host:port` as they are.
    Forward(String),
}

impl Handoff {
    fn header(&self) -> String {
        match self {
            Handoff::Proxy(Origin::Command) => "P\n".to_owned(),
            Handoff::Proxy(Origin::Agent) => "P agent\n".to_owned(),
            Handoff::Forward(target) => format!("F {target}\n"),
        }
    }

    fn parse(bytes: &[u8]) -> Option<Handoff> {
        let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
        match text.split_once(' ') {
            None if text == "P" => Some(Handoff::Proxy(Origin::Command)),
            Some(("P", "agent")) => Some(Handoff::Proxy(Origin::Agent)),
            Some(("F", target)) if !target.is_empty() => Some(Handoff::Forward(target.to_owned())),
            _ => None,
        }
    }
}

/// Hands `connection` to the proxy listening at `socket` (blocking: the bridge's side). A proxy
/// that is not there fails at once; one that accepts nothing (its backlog full) fails after
/// `deadline`.
pub fn hand_over(
    socket: &Path,
    connection: &impl AsFd,
    what: &Handoff,
    deadline: Duration,
) -> io::Result<()> {
    let proxy = connect_within(socket, deadline)?;
    let header = what.header();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [connection.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    let sent =
        sendmsg(&proxy, &[IoSlice::new(header.as_bytes())], &mut control, SendFlags::NOSIGNAL)?;
    if sent != header.len() {
        return Err(io::Error::other("the header was cut short"));
    }
    Ok(())
}

/// A connection to the Unix socket at `path`, made within `deadline`.
fn connect_within(path: &Path, deadline: Duration) -> io::Result<OwnedFd> {
    let address = SocketAddrUnix::new(path)?;
    // Non-blocking: a full backlog answers "try again" instead of blocking without end.
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?;
    let until = Instant::now() + deadline;
    loop {
        match rustix::net::connect(&fd, &address) {
            Ok(()) => return Ok(fd),
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(Errno::AGAIN) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the egress proxy at {} accepted no connection within {} s",
                        path.display(),
                        deadline.as_secs_f32()
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Takes a handed-over connection from `stream` (the host's side).
pub async fn take_over(stream: &tokio::net::UnixStream) -> io::Result<(Handoff, OwnedFd)> {
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || receive(stream)) {
            Ok(taken) => return Ok(taken),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

fn receive(stream: &tokio::net::UnixStream) -> io::Result<(Handoff, OwnedFd)> {
    let mut header = [0u8; MAX_HEADER];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        stream,
        &mut [IoSliceMut::new(&mut header)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_owned());
    let what = Handoff::parse(&header[..got.bytes]).ok_or_else(|| bad("not a handoff header"))?;
    let mut fds = fds.into_iter();
    match (fds.next(), fds.next()) {
        (Some(fd), None) => Ok((what, fd)),
        _ => Err(bad("a handoff carries exactly one connection")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_nothing_else_parses() {
        let proxy = [Handoff::Proxy(Origin::Command), Handoff::Proxy(Origin::Agent)];
        for what in proxy.into_iter().chain([Handoff::Forward("127.0.0.1:9".into())]) {
            assert_eq!(Handoff::parse(what.header().as_bytes()), Some(what));
        }
        for bad in [&b""[..], b"P", b"P x\n", b"X\n", b"F \n", b"F\n", b"\xff\n"] {
            assert_eq!(Handoff::parse(bad), None, "{bad:?}");
        }
    }
}
