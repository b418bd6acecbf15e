//! This crate against the browser's implementation (`web/src/channel/`, run by node under
//! vitest): pairing and reconnect with either side initiating, messages both ways, each side
//! refusing the other's replayed frame, and a wrong pairing secret or host key refused by each.
//! One loopback connection per scenario; frames are a u32 big-endian length and the bytes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nucleic_channel::{
    Handshake, HandshakeKind, PairingSecret, StaticKeypair, Transport, prologue,
};

const HOST_ID: &str = "interop-host";
const DEADLINE: Duration = Duration::from_secs(60);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn write_frame(s: &mut TcpStream, frame: &[u8]) {
    s.write_all(&(frame.len() as u32).to_be_bytes()).unwrap();
    s.write_all(frame).unwrap();
}

/// The next frame, or None at the end of the stream.
fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
        Err(e) => panic!("reading from the TypeScript peer (10 s read timeout): {e}"),
    }
    let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut frame).unwrap();
    Some(frame)
}

fn message(from: &str, size: usize) -> Vec<u8> {
    let head = format!("{from}:");
    let mut out: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    out[..head.len()].copy_from_slice(head.as_bytes());
    out
}

fn expect_message(t: &mut Transport, s: &mut TcpStream, from: &str, size: usize) {
    loop {
        let frame = read_frame(s).expect("stream ended mid-message");
        if let Some(m) = t.open(&frame).unwrap() {
            assert!(m == message(from, size), "message from {from} differs");
            return;
        }
    }
}

struct Scenario {
    name: &'static str,
    kind: HandshakeKind,
    ts_initiates: bool,
    /// The TypeScript side's secret differs from ours.
    wrong_secret: bool,
    /// We (the initiator) use a stale host key.
    wrong_host_key: bool,
}

impl Scenario {
    fn fails(&self) -> bool {
        self.wrong_secret || self.wrong_host_key
    }
}

fn play(stream: &mut TcpStream, sc: &Scenario) {
    let (rust_keys, ts_keys) =
        (StaticKeypair::generate().unwrap(), StaticKeypair::generate().unwrap());
    let secret = PairingSecret::generate().unwrap();
    let ts_secret =
        if sc.wrong_secret { PairingSecret::generate().unwrap() } else { secret.clone() };
    let header = serde_json::json!({
        "name": sc.name,
        "kind": match sc.kind { HandshakeKind::Pairing => "pairing", HandshakeKind::Connect => "connect" },
        "ts_role": if sc.ts_initiates { "initiator" } else { "responder" },
        "host_id": HOST_ID,
        "ts_private": hex(ts_keys.private_for_storage()),
        "rust_public": hex(rust_keys.public().as_bytes()),
        "secret": hex(&ts_secret.0),
        "expect_handshake_failure": sc.fails(),
    });
    write_frame(stream, header.to_string().as_bytes());

    let p = prologue(HOST_ID);
    let ts_public = ts_keys.public();
    let stale = StaticKeypair::generate().unwrap().public();
    let host_key = if sc.wrong_host_key { &stale } else { &ts_public };
    let mut hs = match (sc.kind, sc.ts_initiates) {
        (HandshakeKind::Pairing, true) => Handshake::pair_responder(&rust_keys, &secret, &p),
        (HandshakeKind::Pairing, false) => {
            Handshake::pair_initiator(&rust_keys, &secret, host_key, &p)
        }
        (HandshakeKind::Connect, true) => Handshake::connect_responder(&rust_keys, &p),
        (HandshakeKind::Connect, false) => Handshake::connect_initiator(&rust_keys, host_key, &p),
    }
    .unwrap();
    while !hs.is_finished() {
        if hs.is_my_turn() {
            write_frame(stream, &hs.write_message(b"").unwrap());
        } else {
            let Some(m) = read_frame(stream) else {
                panic!("{}: stream ended mid-handshake", sc.name)
            };
            if sc.fails() && !sc.ts_initiates && m.starts_with(b"refused") {
                return; // The TypeScript side refused our handshake, as it must.
            }
            match hs.read_message(&m) {
                Ok(_) => {}
                Err(e) if sc.fails() => {
                    eprintln!("{}: refused as expected: {e}", sc.name);
                    return; // dropping the stream closes it
                }
                Err(e) => panic!("{}: {e}", sc.name),
            }
            if sc.kind == HandshakeKind::Connect && sc.ts_initiates {
                assert_eq!(hs.remote_static(), Some(ts_public));
                hs.accept_remote().unwrap();
            }
        }
    }
    if sc.fails() {
        // We finished our side (we wrote the last message); the TypeScript side must refuse it.
        let verdict = read_frame(stream).expect("a verdict");
        assert!(
            verdict.starts_with(b"refused"),
            "{}: the TypeScript side accepted a bad handshake",
            sc.name
        );
        return;
    }
    let mut t = hs.into_transport().unwrap();
    assert_eq!(t.remote_static(), ts_public);
    if sc.ts_initiates {
        expect_message(&mut t, stream, "ts", 150_000);
        let frames = t.seal(&message("rust", 70_000)).unwrap();
        for f in &frames {
            write_frame(stream, f);
        }
        write_frame(stream, &frames[frames.len() - 1]); // a replay for the TypeScript side
        assert_eq!(read_frame(stream).as_deref(), Some(&b"refused"[..]), "{}", sc.name);
    } else {
        for f in t.seal(&message("rust", 150_000)).unwrap() {
            write_frame(stream, &f);
        }
        expect_message(&mut t, stream, "ts", 70_000);
        let replay = read_frame(stream).expect("the replayed frame");
        assert!(t.open(&replay).is_err(), "{}: a replayed frame was accepted", sc.name);
        write_frame(stream, b"refused");
    }
}

fn accept(listener: &TcpListener, child: &mut Child, started: Instant) -> TcpStream {
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the TypeScript peer (vitest) exited early: {status}");
                }
                assert!(
                    started.elapsed() < DEADLINE,
                    "the TypeScript peer did not connect within {DEADLINE:?}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

#[test]
fn rust_and_typescript_interoperate_both_ways() {
    let web = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let vitest = web.join("node_modules/vitest/vitest.mjs");
    assert!(
        vitest.exists(),
        "{} is missing: run `npm ci` in web/ (scripts/build-web.sh)",
        vitest.display()
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut child = Command::new("node")
        .arg(&vitest)
        .args(["run", "src/channel/interop.peer.test.ts"])
        .current_dir(&web)
        .env("NUCLEIC_CHANNEL_PEER", format!("127.0.0.1:{port}"))
        .env("CI", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node is needed for the interop test");
    // Drained as it comes, so a verbose failure report cannot fill the pipe and stall vitest.
    let mut stdout = child.stdout.take().unwrap();
    let output = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });

    let scenarios = [
        Scenario {
            name: "pairing, TS device",
            kind: HandshakeKind::Pairing,
            ts_initiates: true,
            wrong_secret: false,
            wrong_host_key: false,
        },
        Scenario {
            name: "pairing, Rust device",
            kind: HandshakeKind::Pairing,
            ts_initiates: false,
            wrong_secret: false,
            wrong_host_key: false,
        },
        Scenario {
            name: "reconnect, TS device",
            kind: HandshakeKind::Connect,
            ts_initiates: true,
            wrong_secret: false,
            wrong_host_key: false,
        },
        Scenario {
            name: "reconnect, Rust device",
            kind: HandshakeKind::Connect,
            ts_initiates: false,
            wrong_secret: false,
            wrong_host_key: false,
        },
        Scenario {
            name: "wrong secret, TS device",
            kind: HandshakeKind::Pairing,
            ts_initiates: true,
            wrong_secret: true,
            wrong_host_key: false,
        },
        Scenario {
            name: "wrong secret, Rust device",
            kind: HandshakeKind::Pairing,
            ts_initiates: false,
            wrong_secret: true,
            wrong_host_key: false,
        },
        Scenario {
            name: "stale host key, Rust device",
            kind: HandshakeKind::Connect,
            ts_initiates: false,
            wrong_secret: false,
            wrong_host_key: true,
        },
    ];
    let started = Instant::now();
    for sc in &scenarios {
        let mut stream = accept(&listener, &mut child, started);
        play(&mut stream, sc);
    }
    let mut stream = accept(&listener, &mut child, started);
    write_frame(&mut stream, br#"{"done":true,"name":"done"}"#);
    drop(stream);

    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = output.join().unwrap();
            assert!(status.success(), "the TypeScript peer failed:\n{out}");
            assert!(out.contains("1 passed"), "the TypeScript peer ran no test:\n{out}");
            break;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("the TypeScript peer did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
