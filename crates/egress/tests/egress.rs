//! The proxy and the bridge against a real upstream on loopback, checked by effect: a refused
//! request never reaches the upstream (its accepted connections are counted), an allowed one
//! gets the upstream's answer, bad input is answered and closed, and nothing hangs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nucleic_egress::{
    AllowList, EgressEvent, ProxyConfig, Resolver, bind_loopback, bridge, serve_with,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// An HTTP server on `addr` that answers every request `hello` (or streams `body_bytes`) and
/// counts the connections it accepted.
struct Upstream {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Upstream {
    fn start(ip: &str, body_bytes: usize) -> Upstream {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(mut s) = stream else { continue };
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                        head.push(b[0]);
                    }
                    if body_bytes == 0 {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
                    } else {
                        let _ =
                            write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\n\r\n");
                        let chunk = vec![b'x'; 64 * 1024];
                        let mut left = body_bytes;
                        while left > 0 {
                            let n = left.min(chunk.len());
                            if s.write_all(&chunk[..n]).is_err() {
                                return;
                            }
                            left -= n;
                        }
                    }
                });
            }
        });
        Upstream { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

struct Proxy {
    socket: PathBuf,
    /// The bridge's proxy port in front of it (as the agent's `HTTPS_PROXY`).
    port: u16,
    events: UnboundedReceiver<EgressEvent>,
    _dir: tempfile::TempDir,
    _task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    fn start(allowed: &[String], resolver: Resolver) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let config = ProxyConfig {
            head_deadline: Duration::from_millis(500),
            connect_deadline: Duration::from_secs(2),
            resolver,
        };
        let rules = Arc::new(AllowList::parse(allowed).unwrap());
        let task = tokio::spawn(serve_with(listener, rules, tx, config));
        let (port, _) = start_bridge(&socket, &[]);
        Proxy { socket, port, events, _dir: dir, _task: task }
    }

    /// Sends `request` raw to the bridge's proxy port and reads the whole answer (the proxy
    /// closes after one).
    async fn ask(&self, request: &[u8]) -> String {
        let (port, request) = (self.port, request.to_vec());
        tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(&request).unwrap();
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
            String::from_utf8_lossy(&answer).into_owned()
        })
        .await
        .unwrap()
    }

    async fn next_event(&mut self) -> EgressEvent {
        tokio::time::timeout(Duration::from_secs(5), self.events.recv())
            .await
            .expect("no proxy event within 5 s")
            .unwrap()
    }
}

fn refused(event: &EgressEvent) -> bool {
    matches!(event, EgressEvent::Refused { .. })
}

#[tokio::test]
async fn an_allowed_address_is_tunnelled_and_forwarded() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{}", upstream.port)], Resolver::default());
    let p = upstream.port;
    let plain = proxy
        .ask(format!("GET http://127.0.0.1:{p}/x HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes())
        .await;
    assert!(plain.ends_with("hello"), "{plain}");
    let tunnel = proxy
        .ask(
            format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
                .as_bytes(),
        )
        .await;
    assert!(
        tunnel.starts_with("HTTP/1.1 200 Connection established") && tunnel.ends_with("hello"),
        "{tunnel}"
    );
    assert!(!refused(&proxy.next_event().await));
    assert_eq!(upstream.accepted(), 2);
}

#[tokio::test]
async fn what_is_not_on_the_list_never_reaches_the_upstream() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let names = Resolver::Fixed(HashMap::from([(
        "rebind.test".to_owned(),
        vec!["127.0.0.1".parse::<IpAddr>().unwrap()],
    )]));
    let mut proxy = Proxy::start(&["rebind.test:0".replace(":0", &format!(":{p}"))], names);
    for request in [
        format!("CONNECT off-list.test:{p} HTTP/1.1\r\n\r\n"),
        format!("GET http://off-list.test:{p}/ HTTP/1.1\r\n\r\n"),
        format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n"),
        format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n"),
        format!("CONNECT [::1]:{p} HTTP/1.1\r\n\r\n"),
        // Listed, but it resolves to the host's own loopback: DNS rebinding.
        format!("CONNECT rebind.test:{p} HTTP/1.1\r\n\r\n"),
    ] {
        let answer = proxy.ask(request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request:?} → {answer}");
        assert!(refused(&proxy.next_event().await), "{request:?}");
    }
    assert_eq!(upstream.accepted(), 0, "a refused request reached the upstream");
}

#[tokio::test]
async fn bad_input_is_answered_and_closed_without_reaching_anyone() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let proxy = Proxy::start(&[format!("127.0.0.1:{}", upstream.port)], Resolver::default());
    let huge = format!(
        "GET http://127.0.0.1:{}/ HTTP/1.1\r\nX: {}\r\n\r\n",
        upstream.port,
        "a".repeat(20_000)
    );
    assert!(proxy.ask(huge.as_bytes()).await.starts_with("HTTP/1.1 431"));
    for garbage in [
        &b"\x16\x03\x01\x02\x00binary\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\n\r\n",
        b"NOT A REQUEST\r\n\r\n",
    ] {
        let answer = proxy.ask(garbage).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{garbage:?} → {answer}");
    }
    // A client that never finishes its head is closed after the deadline.
    let started = std::time::Instant::now();
    assert_eq!(proxy.ask(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n").await, "");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(upstream.accepted(), 0);
}

/// Connects to `addr` as an agent inside the sandbox would, and returns what it read.
fn fetch_through(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

fn start_bridge(socket: &Path, forwards: &[String]) -> (u16, Vec<u16>) {
    let proxy = bind_loopback(0).unwrap();
    let proxy_port = proxy.local_addr().unwrap().port();
    let mut listeners = Vec::new();
    let mut ports = Vec::new();
    for target in forwards {
        let l = bind_loopback(0).unwrap();
        ports.push(l.local_addr().unwrap().port());
        listeners.push((l, target.clone()));
    }
    let socket = socket.to_owned();
    std::thread::spawn(move || bridge(&socket, proxy, listeners));
    (proxy_port, ports)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_relays_the_proxy_port_and_tunnels_a_forward() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{p}")], Resolver::default());
    let (proxy_port, forwards) =
        start_bridge(&proxy.socket, &[format!("127.0.0.1:{p}"), "127.0.0.1:9".into()]);
    let (allowed, denied) = (forwards[0], forwards[1]);
    let answers = tokio::task::spawn_blocking(move || {
        (
            fetch_through(proxy_port, &format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n")),
            fetch_through(allowed, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            fetch_through(denied, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            fetch_through(proxy_port, "GET http://off.test/ HTTP/1.1\r\n\r\n"),
        )
    })
    .await
    .unwrap();
    assert!(answers.0.ends_with("hello"), "{answers:?}");
    assert!(answers.1.ends_with("hello"), "the forward reached the endpoint: {answers:?}");
    assert_eq!(answers.2, "", "a refused forward is closed: {answers:?}");
    assert!(answers.3.starts_with("HTTP/1.1 403"), "{answers:?}");
    let mut kinds = Vec::new();
    for _ in 0..4 {
        kinds.push(refused(&proxy.next_event().await));
    }
    kinds.sort();
    assert_eq!(kinds, [false, false, true, true]);
    assert_eq!(upstream.accepted(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_of_the_socket_that_hands_over_nothing_is_dropped() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let proxy = Proxy::start(&[format!("127.0.0.1:{}", upstream.port)], Resolver::default());
    let socket = proxy.socket.clone();
    tokio::task::spawn_blocking(move || {
        for garbage in [&b"P\n"[..], b"F 127.0.0.1:1\n", b"GET / HTTP/1.1\r\n\r\n", b""] {
            let mut s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.write_all(garbage).unwrap();
            let mut answer = Vec::new();
            assert_eq!(s.read_to_end(&mut answer).unwrap_or(0), 0, "{garbage:?}");
        }
    })
    .await
    .unwrap();
    // The proxy still serves.
    let answer = proxy
        .ask(format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", upstream.port).as_bytes())
        .await;
    assert!(answer.ends_with("hello"), "{answer}");
    assert_eq!(upstream.accepted(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_hosts_socket_the_bridge_closes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (proxy_port, _) = start_bridge(&dir.path().join("gone.sock"), &[]);
    let started = std::time::Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        fetch_through(proxy_port, "GET http://a/ HTTP/1.1\r\n\r\n")
    })
    .await
    .unwrap();
    assert_eq!(answer, "");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_dies_mid_download_ends_the_clients_stream() {
    // 64 MiB announced; the upstream's thread is stopped by closing it early.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\npartial");
            // Dropped: the download stops short.
        }
    });
    let proxy = Proxy::start(&[format!("127.0.0.1:{p}")], Resolver::default());
    let answer = proxy.ask(format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(answer.ends_with("partial"), "the client got what came, then the end: {answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_name_is_reached_and_a_relay_through_the_bridge_is_still_judged() {
    if nucleic_testkit::isolated!(
        "an_allowed_name_is_reached_and_a_relay_through_the_bridge_is_still_judged"
    ) {
        return;
    }
    // A loopback-only namespace of this test's own: an address off loopback's range on `lo`
    // stands for a server on the network.
    let added = std::process::Command::new("ip")
        .args(["addr", "add", "10.77.0.1/32", "dev", "lo"])
        .status();
    assert!(added.unwrap().success(), "ip addr add (root, iproute2)");
    let upstream = Upstream::start("10.77.0.1", 0);
    let p = upstream.port;
    let names = Resolver::Fixed(HashMap::from([(
        "allowed.test".to_owned(),
        vec!["10.77.0.1".parse::<IpAddr>().unwrap()],
    )]));
    let mut proxy = Proxy::start(&[format!("allowed.test:{p}")], names);
    let answer = proxy
        .ask(
            format!("GET http://allowed.test:{p}/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
                .as_bytes(),
        )
        .await;
    assert!(answer.ends_with("hello"), "{answer}");
    assert!(!refused(&proxy.next_event().await));
    // The same address by its literal is not on the list: names are what is allowed.
    let answer = proxy.ask(format!("CONNECT 10.77.0.1:{p} HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(refused(&proxy.next_event().await));
    // A relay the agent runs itself (a forward of the bridge to an off-list place, reached
    // through its own proxy port) is still one request to the host's proxy, judged as such.
    let (proxy_port, forwards) = start_bridge(&proxy.socket, &["off.test:80".into()]);
    let relayed = forwards[0];
    let answers = tokio::task::spawn_blocking(move || {
        (
            fetch_through(relayed, "GET / HTTP/1.1\r\nHost: off.test\r\n\r\n"),
            fetch_through(proxy_port, &format!("CONNECT 10.77.0.1:{p} HTTP/1.1\r\n\r\n")),
        )
    })
    .await
    .unwrap();
    assert_eq!(answers.0, "", "{answers:?}");
    assert!(answers.1.starts_with("HTTP/1.1 403"), "{answers:?}");
    assert_eq!(upstream.accepted(), 1, "only the allowed name reached the server");
}
