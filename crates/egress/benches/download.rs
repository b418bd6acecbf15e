//! A 100 MB download from a local server, direct and through the bridge and the egress proxy
//! (the path a confined agent's every byte takes), in the same run: `cargo bench -p
//! nucleic-egress` (EGRESS_BENCH_ROUNDS, default 9). Prints MB/s of each round and the ratio
//! (target ≥ 0.8).

#![allow(clippy::expect_used, clippy::panic)] // a bench: a failure ends it, saying what

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use nucleic_egress::{AllowList, bind_loopback, bridge, serve};

const BYTES: usize = 100 * 1000 * 1000;

fn main() {
    let rounds: usize =
        std::env::var("EGRESS_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(9);
    let server = TcpListener::bind("127.0.0.1:0").expect("bind the server");
    let port = server.local_addr().expect("server address").port();
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut head = [0u8; 1024];
                let _ = s.read(&mut head);
                let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {BYTES}\r\n\r\n");
                let chunk = vec![b'x'; 256 * 1024];
                let mut left = BYTES;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if s.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    let dir = tempfile::tempdir().expect("a temporary dir");
    let socket = dir.path().join("proxy.sock");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let listener = runtime
        .block_on(async { tokio::net::UnixListener::bind(&socket) })
        .expect("bind the proxy");
    let rules = Arc::new(AllowList::parse([format!("127.0.0.1:{port}")]).expect("the list"));
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
    runtime.spawn(serve(listener, rules, events));
    runtime.spawn(async move { while seen.recv().await.is_some() {} });
    let forward = bind_loopback(0).expect("bind the forward");
    let forward_port = forward.local_addr().expect("forward address").port();
    let proxy_port_listener = bind_loopback(0).expect("bind the proxy port");
    std::thread::spawn(move || {
        let forwards = vec![(forward, format!("127.0.0.1:{port}"))];
        bridge(&socket, proxy_port_listener, forwards, Default::default())
    });
    println!("egress download bench: {} MB per download, {rounds} rounds", BYTES / 1_000_000);
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let direct = download(port);
        let proxied = download(forward_port);
        let ratio = proxied / direct;
        ratios.push(ratio);
        println!(
            "round {round}: direct {direct:.0} MB/s, through bridge + proxy {proxied:.0} MB/s, ratio {ratio:.2}"
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median ratio {:.2} (target ≥ 0.8)", ratios[ratios.len() / 2]);
}

/// Downloads the body from `127.0.0.1:port`, returns MB/s.
fn download(port: u16) -> f64 {
    let started = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n").expect("send");
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0usize;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("download failed after {total} bytes: {e}"),
        }
        if total >= BYTES {
            break;
        }
    }
    assert!(total >= BYTES, "short download: {total} bytes");
    total as f64 / 1e6 / started.elapsed().as_secs_f64()
}
