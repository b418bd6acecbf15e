//! The bridge inside the sandbox: its proxy port and forwards reach the proxy, which still
//! judges every connection; without a host, the agent's connections end at once.

use std::time::{Duration, Instant};

use nucleic_egress::{EgressEvent, Resolver};

use crate::support::{Proxy, Upstream, fetch_through, start_bridge};

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_relays_the_proxy_port_and_tunnels_a_forward() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{p}")], Resolver::default());
    let (proxy_port, forwards) =
        start_bridge(&proxy.socket, &[format!("127.0.0.1:{p}"), "127.0.0.1:9".into()]);
    let (allowed, denied) = (forwards[0], forwards[1]);
    let answers = tokio::task::spawn_blocking(move || {
        let connect = format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        (
            fetch_through(proxy_port, connect.as_bytes()),
            fetch_through(allowed, b"GET /model HTTP/1.1\r\nHost: x\r\n\r\n"),
            fetch_through(denied, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            fetch_through(proxy_port, b"GET http://off.test/ HTTP/1.1\r\n\r\n"),
        )
    })
    .await
    .unwrap();
    assert!(answers.0.starts_with("HTTP/1.1 200 Connection") && answers.0.ends_with("hello"));
    assert!(answers.1.ends_with("hello"), "the forward reached the endpoint: {answers:?}");
    assert_eq!(answers.2, "", "a refused forward is closed: {answers:?}");
    assert!(answers.3.starts_with("HTTP/1.1 403"), "{answers:?}");
    let mut events = Vec::new();
    for _ in 0..4 {
        events.push(proxy.next_event().await);
    }
    let allowed_forward = |e: &EgressEvent| {
        matches!(e, EgressEvent::Allowed { host, port, method }
            if host == "127.0.0.1" && *port == p && method == "FORWARD")
    };
    assert!(events.iter().any(allowed_forward), "{events:?}");
    assert!(
        events.iter().any(
            |e| matches!(e, EgressEvent::Refused { port: 9, method, .. } if method == "FORWARD")
        ),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, EgressEvent::Refused { host, .. } if host == "off.test"))
    );
    assert_eq!(upstream.accepted(), 2, "only the allowed tunnel and forward reached it");
    // The forward's bytes arrived as the agent sent them.
    assert!(upstream.heads().contains(&"GET /model HTTP/1.1\r\nHost: x\r\n\r\n".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_hosts_socket_the_bridge_closes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (proxy_port, forwards) =
        start_bridge(&dir.path().join("gone.sock"), &["127.0.0.1:1".into()]);
    let started = Instant::now();
    let answers = tokio::task::spawn_blocking(move || {
        (
            fetch_through(proxy_port, b"GET http://a/ HTTP/1.1\r\n\r\n"),
            fetch_through(forwards[0], b"GET / HTTP/1.1\r\n\r\n"),
        )
    })
    .await
    .unwrap();
    assert_eq!(answers, (String::new(), String::new()));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_accepts_nothing_has_the_agents_connection_closed_in_time() {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType, bind, listen, socket};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stuck.sock");
    // A listener that never accepts, its backlog full after one connection.
    let stuck = socket(AddressFamily::UNIX, SocketType::STREAM, None).unwrap();
    bind(&stuck, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    listen(&stuck, 0).unwrap();
    let _queued = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let (proxy_port, _) = start_bridge(&path, &[]);
    let started = Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        fetch_through(proxy_port, b"GET http://a/ HTTP/1.1\r\n\r\n")
    })
    .await
    .unwrap();
    let waited = started.elapsed();
    assert_eq!(answer, "");
    // The bridge's hand-over deadline (3 s), before the client's own 5 s.
    assert!(waited > Duration::from_secs(2) && waited < Duration::from_millis(4500), "{waited:?}");
}
