//! The sandbox side: listeners on the sandbox's own loopback — the agent's HTTP proxy port and
//! each forwarded endpoint — whose every accepted connection is handed to the host's proxy over
//! its Unix socket (`handoff`), the connection itself, so the bridge carries no byte. Blocking,
//! one thread per listener: it runs in a small process before the agent, with nothing else to do.

use std::net::{Shutdown, TcpListener};
use std::path::Path;

use crate::error::EgressError;
use crate::handoff::{Handoff, hand_over};

/// A listener on `127.0.0.1:port` (`0`: any port).
pub fn bind_loopback(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port))
}

/// Hands `http_proxy`'s connections to the proxy at `proxy_socket` as proxy requests, and each
/// forward's as tunnels to its `host:port`. Returns only when a listener fails.
pub fn bridge(
    proxy_socket: &Path,
    http_proxy: TcpListener,
    forwards: Vec<(TcpListener, String)>,
) -> Result<(), EgressError> {
    for (listener, target) in forwards {
        let socket = proxy_socket.to_owned();
        std::thread::spawn(move || accept_loop(&listener, &socket, &Handoff::Forward(target)));
    }
    accept_loop(&http_proxy, proxy_socket, &Handoff::Proxy)
}

fn accept_loop(listener: &TcpListener, socket: &Path, what: &Handoff) -> Result<(), EgressError> {
    loop {
        let (agent, _) = listener.accept().map_err(|e| EgressError::io("accepting", e))?;
        // Without the host's socket (a host restarting) the agent sees its connection closed
        // at once: a clean error, no hang.
        if hand_over(socket, &agent, what).is_err() {
            let _ = agent.shutdown(Shutdown::Both);
        }
    }
}
