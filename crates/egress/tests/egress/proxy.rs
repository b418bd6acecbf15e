//! The host's proxy: what it lets through and how, what it refuses and says, bad input.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use nucleic_egress::handoff::{Handoff, hand_over};
use nucleic_egress::{AllowList, EgressEvent, ProxyConfig, Resolver};

use crate::support::{Proxy, Upstream, refused, test_config};

#[tokio::test]
async fn an_allowed_address_is_tunnelled_and_forwarded_in_origin_form() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{}", upstream.port)], Resolver::default());
    let p = upstream.port;
    let plain = proxy
        .ask(
            format!(
                "GET http://127.0.0.1:{p}/x?y=1 HTTP/1.1\r\nHost: elsewhere.test\r\n\
                 Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\
                 Connection: keep-alive\r\nAccept: */*\r\n\r\n"
            )
            .as_bytes(),
        )
        .await;
    assert!(plain.starts_with("HTTP/1.1 200 OK") && plain.ends_with("hello"), "{plain}");
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
    let expected = |method: &str| EgressEvent::Allowed {
        host: "127.0.0.1".into(),
        port: p,
        method: method.into(),
    };
    assert_eq!(proxy.next_event().await, expected("GET"));
    assert_eq!(proxy.next_event().await, expected("CONNECT"));
    assert_eq!(upstream.accepted(), 2);
    assert_eq!(
        upstream.heads()[0],
        format!(
            "GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        ),
        "origin form, the authority's Host, no Proxy-* header, Connection: close"
    );
    // The tunnel carried the client's bytes as they were.
    assert_eq!(upstream.heads()[1], "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
}

#[tokio::test]
async fn what_is_not_on_the_list_never_reaches_the_upstream_and_is_reported() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let names = Resolver::Fixed(HashMap::from([(
        "rebind.test".to_owned(),
        vec!["127.0.0.1".parse::<IpAddr>().unwrap(), "::1".parse::<IpAddr>().unwrap()],
    )]));
    let mut proxy = Proxy::start(&[format!("rebind.test:{p}"), "[::2]:9".into()], names);
    for (request, host, method, why) in [
        (format!("CONNECT off-list.test:{p} HTTP/1.1\r\n\r\n"), "off-list.test", "CONNECT", "list"),
        (format!("GET http://off-list.test:{p}/ HTTP/1.1\r\n\r\n"), "off-list.test", "GET", "list"),
        (format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n"), "127.0.0.1", "CONNECT", "list"),
        (format!("POST http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n"), "127.0.0.1", "POST", "list"),
        (format!("CONNECT [::1]:{p} HTTP/1.1\r\n\r\n"), "::1", "CONNECT", "list"),
        (format!("CONNECT [0::1]:{p} HTTP/1.1\r\n\r\n"), "::1", "CONNECT", "list"),
        // Listed, but it resolves only to the host's own loopback: DNS rebinding.
        (format!("CONNECT rebind.test:{p} HTTP/1.1\r\n\r\n"), "rebind.test", "CONNECT", "own"),
        (format!("GET http://REBIND.test.:{p}/ HTTP/1.1\r\n\r\n"), "rebind.test", "GET", "own"),
    ] {
        let answer = proxy.ask(request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{request:?} → {answer}");
        let body = answer.lines().last().unwrap_or_default();
        assert!(body.contains(host) && body.contains(why), "{request:?} → {body}");
        match proxy.next_event().await {
            EgressEvent::Refused { host: h, port, method: m, reason } => {
                assert_eq!((h.as_str(), port, m.as_str()), (host, p, method), "{request:?}");
                assert!(reason.contains(why), "{reason}");
            }
            other => panic!("{request:?}: {other:?}"),
        }
    }
    assert_eq!(upstream.accepted(), 0, "a refused request reached the upstream");
    proxy.no_event();
}

#[tokio::test]
async fn the_rules_can_change_while_the_proxy_runs() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let request = format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", upstream.port);
    let list = AllowList::parse([format!("127.0.0.1:{}", upstream.port)]).unwrap();
    let rules = Arc::new(RwLock::new(list));
    let mut proxy = Proxy::start_with(rules.clone(), test_config(Resolver::default()));
    assert!(proxy.ask(request.as_bytes()).await.ends_with("hello"));
    assert!(!refused(&proxy.next_event().await));
    *rules.write().unwrap() = AllowList::default();
    assert!(proxy.ask(request.as_bytes()).await.starts_with("HTTP/1.1 403"));
    assert!(refused(&proxy.next_event().await));
    assert_eq!(upstream.accepted(), 1);
}

#[tokio::test]
async fn an_allowed_destination_that_is_not_there_is_a_502_and_not_a_refusal() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = free.local_addr().unwrap().port();
    drop(free);
    let names = Resolver::Fixed(HashMap::new());
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{p}"), "gone.test".into()], names);
    let answer = proxy.ask(format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(answer.contains("cannot connect"), "{answer}");
    assert!(matches!(proxy.next_event().await, EgressEvent::Unreachable { port, .. } if port == p));
    let answer = proxy.ask(b"GET http://gone.test/ HTTP/1.1\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 502") && answer.contains("resolve"), "{answer}");
    assert!(matches!(proxy.next_event().await, EgressEvent::Unreachable { .. }));
}

#[tokio::test]
async fn bad_input_is_answered_and_closed_without_reaching_anyone() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let mut proxy = Proxy::start(&[format!("127.0.0.1:{p}")], Resolver::default());
    let huge = format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let many: String = (0..101).map(|i| format!("X-{i}: y\r\n")).collect();
    let many = format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n{many}\r\n");
    for enormous in [huge.as_bytes(), many.as_bytes(), &[b'a'; 17 * 1024][..]] {
        let answer = proxy.ask(enormous).await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    }
    for garbage in [
        &b"\x16\x03\x01\x02\x00binary\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"NOT A REQUEST\r\n\r\n",
        b"GET http://127.0.0.1/\xff\xfe HTTP/1.1\r\n\r\n",
        b"GET http://127.0.0.1/ HTTP/1.1\r\nX: a\nHost: b\r\n\r\n",
        b"\r\n\r\n",
    ] {
        let answer = proxy.ask(garbage).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{garbage:?} → {answer}");
    }
    // A client that never finishes its head, or sends nothing, is closed after the deadline.
    for silent in [&b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n"[..], b""] {
        let started = Instant::now();
        assert_eq!(proxy.ask(silent).await, "");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(400) && waited < Duration::from_secs(4),
            "{waited:?}"
        );
    }
    assert_eq!(upstream.accepted(), 0);
    proxy.no_event();
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_over_the_limit_are_closed_until_one_ends() {
    let upstream = Upstream::start("127.0.0.1", 0);
    let p = upstream.port;
    let rules = Arc::new(AllowList::parse([format!("127.0.0.1:{p}")]).unwrap());
    let config = ProxyConfig { max_connections: 1, ..test_config(Resolver::default()) };
    let proxy = Proxy::start_with(rules, config);
    let port = proxy.port;
    tokio::task::spawn_blocking(move || {
        let connect = format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n");
        let mut held = TcpStream::connect(("127.0.0.1", port)).unwrap();
        held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        held.write_all(connect.as_bytes()).unwrap();
        let mut established = [0u8; 39];
        held.read_exact(&mut established).unwrap();
        assert!(established.starts_with(b"HTTP/1.1 200"));
        assert_eq!(crate::support::fetch_through(port, connect.as_bytes()), "", "over the limit");
        // The held tunnel still works, and once it ends there is room again.
        held.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut answer = String::new();
        held.read_to_string(&mut answer).unwrap();
        assert!(answer.ends_with("hello"), "{answer}");
        drop(held);
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let answer = crate::support::fetch_through(port, connect.as_bytes());
            if answer.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < until, "no room within 5 s after the held tunnel ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    assert_eq!(upstream.accepted(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_of_the_socket_that_hands_over_nothing_or_no_socket_is_dropped() {
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
        // Descriptors that are no connection: a file, a listening socket.
        let file = tempfile::tempfile().unwrap();
        hand_over(
            &socket,
            &file,
            &Handoff::Proxy(nucleic_egress::Origin::Command),
            Duration::from_secs(1),
        )
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        hand_over(&socket, &listener, &Handoff::Forward("a:1".into()), Duration::from_secs(1))
            .unwrap();
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

/// Reads all `request` gets through the bridge's proxy `port`: the bytes, and whether the
/// stream ended in an error (a reset) rather than an end.
fn read_until_the_end(port: u16, request: &str) -> (Vec<u8>, Option<std::io::ErrorKind>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return (got, Some(e.kind())),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_dies_mid_download_ends_the_clients_stream() {
    // 64 MiB announced, 1 MiB sent, then the upstream is gone: closed (it read the request), or
    // killed (reset: it had not).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut head = [0u8; 4];
            let _ = s.read_exact(&mut head);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\n");
            let _ = s.write_all(&vec![b'x'; 1 << 20]);
            let _ = s.write_all(b"partial");
            if &head == b"KILL" {
                let _ = rustix::net::sockopt::set_socket_linger(&s, Some(Duration::ZERO));
            } else {
                // Everything read: the close is an end of stream.
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let _ = s.read_to_end(&mut Vec::new());
            }
        }
    });
    let proxy = Proxy::start(&[format!("127.0.0.1:{p}")], Resolver::default());
    let port = proxy.port;
    let started = Instant::now();
    let ends = tokio::task::spawn_blocking(move || {
        [
            read_until_the_end(port, &format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n")),
            read_until_the_end(port, &format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\nKILL")),
        ]
    })
    .await
    .unwrap();
    let [(closed, closed_end), (killed, killed_end)] = ends;
    assert!(closed.ends_with(b"partial"), "the client got what came: {} bytes", closed.len());
    assert_eq!(closed_end, None, "then the end");
    // A reset is abortive: what the proxy had not yet written to the client when the upstream's
    // reset reached it is dropped with the client's connection (under load, all of it). What
    // did arrive is the tunnel's answer, then a prefix of the upstream's bytes.
    let established: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";
    assert!(
        killed.starts_with(established),
        "{:?}",
        String::from_utf8_lossy(&killed[..killed.len().min(80)])
    );
    let mut sent = b"HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\n".to_vec();
    sent.extend_from_slice(&vec![b'x'; 1 << 20]);
    sent.extend_from_slice(b"partial");
    let relayed = &killed[established.len()..];
    assert!(
        sent.starts_with(relayed),
        "the tunnel relayed the upstream's bytes in order, {} of them",
        relayed.len()
    );
    assert_eq!(killed_end, Some(std::io::ErrorKind::ConnectionReset), "the client sees the break");
    assert!(started.elapsed() < Duration::from_secs(4), "both ended by themselves");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_name_is_reached_and_its_literal_is_not() {
    if nucleic_testkit::isolated!("an_allowed_name_is_reached_and_its_literal_is_not") {
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
        // Its loopback address is skipped, the other reached.
        vec!["127.0.0.1".parse::<IpAddr>().unwrap(), "10.77.0.1".parse::<IpAddr>().unwrap()],
    )]));
    let mut proxy = Proxy::start(&[format!("allowed.test:{p}")], names);
    let answer =
        proxy.ask(format!("GET http://allowed.test:{p}/ HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(answer.ends_with("hello"), "{answer}");
    assert!(upstream.heads()[0].contains(&format!("\r\nHost: allowed.test:{p}\r\n")));
    assert!(!refused(&proxy.next_event().await));
    // The same address by its literal is not on the list: names are what is allowed.
    let answer = proxy.ask(format!("CONNECT 10.77.0.1:{p} HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(refused(&proxy.next_event().await));
    assert_eq!(upstream.accepted(), 1, "only the allowed name reached the server");
}
