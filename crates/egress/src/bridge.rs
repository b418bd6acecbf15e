//! The sandbox side: listeners on the sandbox's own loopback that relay every connection to the
//! host's proxy over its Unix socket — the agent's HTTP proxy port as it is, and each forwarded
//! endpoint after the bridge itself asked the proxy for a tunnel there. Blocking, with threads:
//! it runs in a small process before the agent, with nothing else to do.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::EgressError;

/// How long the proxy may take to answer a forwarded endpoint's CONNECT.
const CONNECT_ANSWER_DEADLINE: Duration = Duration::from_secs(15);

/// A listener on `127.0.0.1:port` (`0`: any port).
pub fn bind_loopback(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port))
}

/// Relays `http_proxy`'s connections to the proxy at `proxy_socket` as they are, and each
/// forward's connections through a tunnel to its `host:port`. Returns only when a listener fails.
pub fn bridge(
    proxy_socket: &Path,
    http_proxy: TcpListener,
    forwards: Vec<(TcpListener, String)>,
) -> Result<(), EgressError> {
    let mut loops = Vec::new();
    for (listener, target) in forwards {
        let socket = proxy_socket.to_owned();
        loops.push(std::thread::spawn(move || accept_loop(&listener, &socket, Some(&target))));
    }
    let result = accept_loop(&http_proxy, proxy_socket, None);
    drop(loops);
    result
}

fn accept_loop(
    listener: &TcpListener,
    socket: &Path,
    target: Option<&str>,
) -> Result<(), EgressError> {
    loop {
        let (client, _) = listener.accept().map_err(|e| EgressError::io("accepting", e))?;
        let (socket, target) = (socket.to_owned(), target.map(str::to_owned));
        std::thread::spawn(move || relay_one(client, &socket, target.as_deref()));
    }
}

/// One agent connection: to the proxy (a missing socket, the host restarting, closes it at
/// once), through a tunnel for a forward, then bytes both ways until either side closes.
fn relay_one(client: TcpStream, socket: &PathBuf, target: Option<&str>) {
    let Ok(mut proxy) = UnixStream::connect(socket) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    if let Some(target) = target
        && open_tunnel(&mut proxy, target).is_err()
    {
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let (Ok(client_in), Ok(proxy_out)) = (client.try_clone(), proxy.try_clone()) else { return };
    let upward = std::thread::spawn(move || pump(client_in, proxy_out));
    pump_back(proxy, client);
    let _ = upward.join();
}

/// Asks the proxy for a tunnel to `target` and reads its answer's head: Ok on a 200.
fn open_tunnel(proxy: &mut UnixStream, target: &str) -> std::io::Result<()> {
    proxy.set_read_timeout(Some(CONNECT_ANSWER_DEADLINE))?;
    write!(proxy, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || proxy.read(&mut byte)? == 0 {
            return Err(std::io::Error::other("the proxy gave no complete answer"));
        }
        head.push(byte[0]);
    }
    proxy.set_read_timeout(None)?;
    if head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200") {
        Ok(())
    } else {
        Err(std::io::Error::other("the proxy refused the tunnel"))
    }
}

/// The size of one relay read: large, so a download moves in few system calls.
const RELAY_CHUNK: usize = 256 * 1024;

fn pump(mut from: TcpStream, mut to: UnixStream) {
    copy_all(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

fn pump_back(mut from: UnixStream, mut to: TcpStream) {
    copy_all(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// Copies until the end of `from` or an error on either side.
fn copy_all(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0u8; RELAY_CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
