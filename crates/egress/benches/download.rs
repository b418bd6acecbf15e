//! A 100 MB download from a local server, direct and through the bridge and the egress proxy
//! (the path a confined agent's every byte takes), in the same run: `cargo bench -p
//! nucleic-egress` (EGRESS_BENCH_ROUNDS, default 9). The server serves at memory speed and then
//! paced like a 10 and a 1 Gbit/s link (EGRESS_BENCH_LINKS, Mbit/s, 0 = unpaced; default
//! "0,10000,1000"). Prints MB/s of each round, the median ratio (target ≥ 0.8) and the CPU the
//! whole process spent per download (server, proxy, bridge and client are all in it).

#![allow(clippy::expect_used, clippy::panic)] // a bench: a failure ends it, saying what

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_egress::{AllowList, bind_loopback, bridge, serve};

const BYTES: usize = 100 * 1000 * 1000;

fn main() {
    let rounds: usize =
        std::env::var("EGRESS_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(9);
    let links: Vec<u64> = std::env::var("EGRESS_BENCH_LINKS")
        .unwrap_or_else(|_| "0,10000,1000".to_owned())
        .split(',')
        .map(|v| v.trim().parse().expect("EGRESS_BENCH_LINKS: Mbit/s, comma-separated"))
        .collect();
    let server = TcpListener::bind("127.0.0.1:0").expect("bind the server");
    let port = server.local_addr().expect("server address").port();
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let Ok(s) = stream else { continue };
            std::thread::spawn(move || serve_body(s));
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
    for mbit in links {
        let link = if mbit == 0 { "unpaced".to_owned() } else { format!("{mbit} Mbit/s") };
        let mut ratios = Vec::new();
        let (mut cpu_direct, mut cpu_proxied) = (0.0, 0.0);
        for round in 1..=rounds {
            let before = cpu_seconds();
            let direct = download(port, mbit);
            let middle = cpu_seconds();
            let proxied = download(forward_port, mbit);
            cpu_direct += middle - before;
            cpu_proxied += cpu_seconds() - middle;
            let ratio = proxied / direct;
            ratios.push(ratio);
            println!(
                "{link} round {round}: direct {direct:.0} MB/s, through bridge + proxy {proxied:.0} MB/s, ratio {ratio:.2}"
            );
        }
        ratios.sort_by(f64::total_cmp);
        let per = |total: f64| total * 1000.0 / rounds as f64;
        println!(
            "{link}: median ratio {:.2} (target ≥ 0.8); CPU per download: direct {:.0} ms, through bridge + proxy {:.0} ms",
            ratios[ratios.len() / 2],
            per(cpu_direct),
            per(cpu_proxied)
        );
    }
}

/// Answers one request with the body, at the rate its path asks (`/<Mbit/s>`, 0 = unpaced):
/// the pace of a link, kept by sleeping whenever the sent bytes are ahead of it.
fn serve_body(mut s: TcpStream) {
    let mut head = [0u8; 1024];
    let n = s.read(&mut head).unwrap_or(0);
    let mbit: u64 = String::from_utf8_lossy(&head[..n])
        .split_whitespace()
        .nth(1)
        .and_then(|path| path.trim_start_matches('/').parse().ok())
        .unwrap_or(0);
    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {BYTES}\r\n\r\n");
    let chunk = vec![b'x'; 256 * 1024];
    let started = Instant::now();
    let mut sent = 0usize;
    while sent < BYTES {
        let n = (BYTES - sent).min(chunk.len());
        if s.write_all(&chunk[..n]).is_err() {
            return;
        }
        sent += n;
        if mbit > 0 {
            let due = Duration::from_secs_f64(sent as f64 * 8.0 / (mbit as f64 * 1e6));
            if let Some(ahead) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
    }
}

/// CPU seconds (user + system) this process has used, its ended threads included
/// (`/proc/self/stat`, in clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    ticks as f64 / 100.0
}

/// Downloads the body from `127.0.0.1:port` at the link's pace, returns MB/s.
fn download(port: u16, mbit: u64) -> f64 {
    let started = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    // One write: the server reads the request with one read (unread bytes would reset it).
    let request = format!("GET /{mbit} HTTP/1.1\r\nHost: bench\r\n\r\n");
    s.write_all(request.as_bytes()).expect("send");
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
