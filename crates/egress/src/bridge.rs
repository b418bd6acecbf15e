//! The sandbox side: listeners on the sandbox's own loopback — the agent's HTTP proxy port and
//! each forwarded endpoint — whose every accepted connection is handed to the host's proxy over
//! its Unix socket (`handoff`), the connection itself, so the bridge carries no byte, with who
//! opened a proxy connection ([`crate::origin`]). Blocking, one thread per listener: it runs in a
//! small process before the agent, with nothing else to do.

use std::convert::Infallible;
use std::io;
use std::net::{Shutdown, TcpListener};
use std::path::Path;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use rustix::io::Errno;

use crate::error::EgressError;
use crate::handoff::{Handoff, hand_over};
use crate::origin::{AgentProcess, Origin, origin_of};

/// How long a hand-over may wait for a host that is there but accepts nothing.
pub const HANDOFF_DEADLINE: Duration = Duration::from_secs(3);

/// A listener on `127.0.0.1:port` (`0`: any port).
pub fn bind_loopback(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port))
}

/// Hands `http_proxy`'s connections to the proxy at `proxy_socket` as proxy requests, each
/// saying whether the agent program (`agent`, once it is set) opened it, and each
/// forward's as tunnels to its `host:port` (the proxy judges both). Without the host's socket
/// an agent's connection is closed at once. Returns only when a listener is broken (not for a
/// passing accept error such as running out of descriptors), saying which.
pub fn bridge(
    proxy_socket: &Path,
    http_proxy: TcpListener,
    forwards: Vec<(TcpListener, String)>,
    agent: Arc<OnceLock<AgentProcess>>,
) -> Result<Infallible, EgressError> {
    let (broken, first_broken) = mpsc::channel();
    let listeners = std::iter::once((http_proxy, Listening::Proxy))
        .chain(forwards.into_iter().map(|(l, target)| (l, Listening::Forward(target))));
    for (listener, what) in listeners {
        let (socket, broken, agent) = (proxy_socket.to_owned(), broken.clone(), agent.clone());
        std::thread::spawn(move || {
            let Err(e) = accept_loop(&listener, &socket, &what, &agent);
            let _ = broken.send(e);
        });
    }
    drop(broken);
    match first_broken.recv() {
        Ok(e) => Err(e),
        // Every thread gone without a word: only a panic does that.
        Err(_) => Err(EgressError::io("the bridge's listeners", io::Error::other("all ended"))),
    }
}

/// What a listener of the bridge is.
enum Listening {
    Proxy,
    Forward(String),
}

fn accept_loop(
    listener: &TcpListener,
    socket: &Path,
    what: &Listening,
    agent_pid: &OnceLock<AgentProcess>,
) -> Result<Infallible, EgressError> {
    let name = || match (what, listener.local_addr()) {
        (Listening::Proxy, Ok(at)) => format!("accepting on the proxy port {at}"),
        (Listening::Forward(target), Ok(at)) => format!("accepting on {at} (forward to {target})"),
        (_, Err(_)) => "accepting".to_owned(),
    };
    loop {
        let (agent, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if listener_broken(&e) => return Err(EgressError::io(name(), e)),
            // Out of descriptors, a connection reset before it was taken, …: the next may work.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let handoff = match what {
            // Before the agent runs, nobody is its own.
            Listening::Proxy => Handoff::Proxy(match (agent_pid.get(), agent.local_addr()) {
                (Some(agent), Ok(local)) => origin_of(Path::new("/proc"), peer, local, agent),
                _ => Origin::Command,
            }),
            Listening::Forward(target) => Handoff::Forward(target.clone()),
        };
        // Without the host's socket (a host restarting) the agent sees its connection closed
        // at once: a clean error, no hang.
        if hand_over(socket, &agent, &handoff, HANDOFF_DEADLINE).is_err() {
            let _ = agent.shutdown(Shutdown::Both);
        }
    }
}

/// Whether an accept error means the listener itself is unusable.
fn listener_broken(e: &io::Error) -> bool {
    let errno = Errno::from_io_error(e);
    [Errno::BADF, Errno::INVAL, Errno::NOTSOCK, Errno::OPNOTSUPP, Errno::FAULT]
        .iter()
        .any(|broken| errno == Some(*broken))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_of_the_listener_itself_end_an_accept_loop() {
        let from = |errno: Errno| io::Error::from(errno);
        assert!(listener_broken(&from(Errno::INVAL)));
        assert!(listener_broken(&from(Errno::BADF)));
        for passing in [Errno::MFILE, Errno::NFILE, Errno::CONNABORTED, Errno::NOBUFS, Errno::INTR]
        {
            assert!(!listener_broken(&from(passing)), "{passing:?}");
        }
        assert!(!listener_broken(&io::Error::other("no errno")));
    }

    #[test]
    fn a_listener_that_is_not_listening_is_broken_and_said() {
        // A bound socket that never listened: accept fails with EINVAL at once.
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = std::os::fd::OwnedFd::from(socket);
        let listener = TcpListener::from(fd);
        let dir = tempfile::tempdir().unwrap();
        let agent = Arc::new(OnceLock::new());
        let err = bridge(&dir.path().join("none.sock"), listener, Vec::new(), agent).unwrap_err();
        assert!(err.to_string().contains("accepting"), "{err}");
    }
}
