//! The channel's own test vectors (`docs/channel-vectors.json`, printed in `docs/channel.md`,
//! "Test vectors"): a fixed key set, secret and ephemerals run through this crate's handshakes
//! and transport give exactly the committed bytes, each message opens on the other side, and the
//! host's stream demultiplexer takes the vector's first frames. The web channel checks the same
//! file (`web/src/channel/vectors.test.ts`), and the page's text is checked against it here.
//! `NUCLEIC_UPDATE_FIXTURES=1` rewrites the file and the page's block after an intended change.

use std::collections::HashSet;
use std::path::PathBuf;

use nucleic_channel::relay::{RelayFrame, close_frame, data_frame};
use nucleic_channel::streams::{DeviceRegistry, DeviceStreams, MODE_CONNECT, MODE_PAIR};
use nucleic_channel::{
    CONNECT_PROTOCOL, Handshake, HandshakeKind, PAIRING_PROTOCOL, PairingSecret, PublicKey, Role,
    StaticKeypair, Transport, prologue,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const STREAM: u32 = 42;
const HELLO: &str = r#"{"type":"hello","clientID":"vector-device","clientName":"vector device","protocolVersion":1}"#;
const LIST: &str = r#"{"type":"listProjects","messageID":"v-1"}"#;
const REVOKED: &str = "device revoked: pair again";
const SPLIT_LEN: usize = 70_000;
const BLOCK_START: &str = "<!-- channel-vectors: generated from docs/channel-vectors.json -->";
const BLOCK_END: &str = "<!-- end of channel-vectors -->";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn b64url(b: &[u8]) -> String {
    use std::fmt::Write;
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, x)| n | u32::from(*x) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.write_char(char::from(A[(n >> (18 - 6 * i) & 63) as usize])).unwrap();
        }
    }
    out
}

/// The X25519 public key of a private key (snow's own curve code).
fn keypair(private: [u8; 32]) -> StaticKeypair {
    use snow::resolvers::{CryptoResolver, DefaultResolver};
    let mut dh = DefaultResolver.resolve_dh(&snow::params::DHChoice::Curve25519).unwrap();
    dh.set(&private);
    StaticKeypair::from_keys(&private, dh.pubkey()).unwrap()
}

fn seal_one(t: &mut Transport, message: &[u8]) -> Vec<u8> {
    let frames = t.seal(message).unwrap();
    assert_eq!(frames.len(), 1);
    frames.into_iter().next().unwrap()
}

/// One framed message: sealed by `from`, opened by `to`, with its plaintext shown.
fn frame(
    what: &str,
    sender: &str,
    from: &mut Transport,
    to: &mut Transport,
    message: &[u8],
) -> Value {
    let nonce = from.frames_sent();
    let f = seal_one(from, message);
    assert_eq!(to.open(&f).unwrap().as_deref(), Some(message), "{what}");
    let mut plain = vec![0u8];
    plain.extend_from_slice(message);
    json!({ "what": what, "from": sender, "nonce": nonce, "message": hex(message),
            "plaintext": hex(&plain), "frame": hex(&f) })
}

fn kind_text(text: &str) -> Vec<u8> {
    let mut m = vec![0x00];
    m.extend_from_slice(text.as_bytes());
    m
}

struct OneSecret(Option<PairingSecret>, HashSet<PublicKey>);

impl DeviceRegistry for OneSecret {
    fn pairing_secret(&self) -> Option<PairingSecret> {
        self.0.clone()
    }
    fn complete_pairing(&mut self, device: &PublicKey, _: &PairingSecret) -> bool {
        self.1.insert(*device) && self.0.take().is_some()
    }
    fn is_paired(&self, device: &PublicKey) -> bool {
        self.1.contains(device)
    }
}

/// Everything the vectors say, computed by this crate.
fn compute() -> Value {
    let host = keypair([0x11; 32]);
    let device = keypair([0x22; 32]);
    let secret = PairingSecret([0x33; 32]);
    let (dev_pair_e, host_pair_e, dev_ik_e, host_ik_e) =
        ([0x44; 32], [0x55; 32], [0x66; 32], [0x77; 32]);
    // The host id is its relay room: RelayKey::from_bytes(&[7; 32]) (testdata/relay-auth.json).
    let host_id = nucleic_channel::relay::RelayKey::from_bytes(&[7; 32]).unwrap().room();
    let p = prologue(&host_id);

    // Pairing: XXpsk3, device first.
    let mut d = Handshake::for_test_vectors_only(
        HandshakeKind::Pairing,
        Role::Initiator,
        &device,
        Some(&secret),
        Some(&host.public()),
        &p,
        &dev_pair_e,
    )
    .unwrap();
    let mut h = Handshake::for_test_vectors_only(
        HandshakeKind::Pairing,
        Role::Responder,
        &host,
        Some(&secret),
        None,
        &p,
        &host_pair_e,
    )
    .unwrap();
    let m1 = d.write_message(b"").unwrap();
    assert!(h.read_message(&m1).unwrap().is_empty());
    let m2 = h.write_message(b"").unwrap();
    assert!(d.read_message(&m2).unwrap().is_empty());
    let m3 = d.write_message(b"").unwrap();
    assert!(h.read_message(&m3).unwrap().is_empty());
    let (mut td, mut th) = (d.into_transport().unwrap(), h.into_transport().unwrap());
    assert_eq!(td.handshake_hash(), th.handshake_hash());
    assert_eq!(th.remote_static(), device.public());
    let pairing_hash = hex(td.handshake_hash());
    let mut first_pair = vec![MODE_PAIR];
    first_pair.extend_from_slice(&m1);
    let mut close = vec![0x01];
    close.extend_from_slice(&4401u16.to_be_bytes());
    close.extend_from_slice(REVOKED.as_bytes());
    let pairing_frames = vec![
        frame("text: hello", "device", &mut td, &mut th, &kind_text(HELLO)),
        frame("ping", "host", &mut th, &mut td, &[0x02]),
        frame("pong", "device", &mut td, &mut th, &[0x03]),
        frame("close 4401", "host", &mut th, &mut td, &close),
    ];

    // Reconnect: IK, device first; the host accepts the device's key before answering.
    let mut d = Handshake::for_test_vectors_only(
        HandshakeKind::Connect,
        Role::Initiator,
        &device,
        None,
        Some(&host.public()),
        &p,
        &dev_ik_e,
    )
    .unwrap();
    let mut h = Handshake::for_test_vectors_only(
        HandshakeKind::Connect,
        Role::Responder,
        &host,
        None,
        None,
        &p,
        &host_ik_e,
    )
    .unwrap();
    let k1 = d.write_message(b"").unwrap();
    assert!(h.read_message(&k1).unwrap().is_empty());
    assert_eq!(h.remote_static(), Some(device.public()));
    h.accept_remote().unwrap();
    let k2 = h.write_message(b"").unwrap();
    assert!(d.read_message(&k2).unwrap().is_empty());
    let (mut td, mut th) = (d.into_transport().unwrap(), h.into_transport().unwrap());
    let reconnect_hash = hex(td.handshake_hash());
    let mut first_ik = vec![MODE_CONNECT];
    first_ik.extend_from_slice(&k1);
    let reconnect_frames =
        vec![frame("text: listProjects", "device", &mut td, &mut th, &kind_text(LIST))];
    // A message over one frame: kind 0x00 and 69,999 bytes of "a", split in two frames.
    let mut big = vec![b'a'; SPLIT_LEN];
    big[0] = 0x00;
    let parts = th.seal(&big).unwrap();
    assert_eq!(td.open(&parts[0]).unwrap(), None);
    assert_eq!(td.open(&parts[1]).unwrap().as_deref(), Some(&big[..]));
    let split = json!({
        "what": "text of 70,000 bytes (kind 0x00, then 69,999 bytes of 0x61) from the host",
        "from": "host", "messageLength": SPLIT_LEN, "firstNonce": 0,
        "frameLengths": parts.iter().map(Vec::len).collect::<Vec<_>>(),
        "frameSha256": parts.iter().map(|f| hex(&Sha256::digest(f))).collect::<Vec<_>>(),
    });

    // The relay's wrapping of the first pairing frame, as the host's socket carries it.
    let relay = json!([
        { "what": "relay → host OPEN, stream 42", "bytes": hex(&[0x11, 0, 0, 0, 42]) },
        { "what": "relay → host DATA, stream 42: the pairing first frame",
          "bytes": hex(&data_frame(STREAM, &first_pair)) },
        { "what": "host → relay CLOSE, stream 42", "bytes": hex(&close_frame(STREAM)) },
    ]);

    let app = "https://relay.example";
    let link_url = format!(
        "{app}/#pair&r=wss%3A%2F%2Frelay.example&h={host_id}&k={}&s={}&n=my%20phone&m=studio",
        b64url(host.public().as_bytes()),
        b64url(&secret.0),
    );
    json!({
        "about": "Nucleic's remote channel test vectors (docs/channel.md, \"Test vectors\"). Hex unless a field says otherwise. Generated by crates/channel/tests/channel/spec_vectors.rs (NUCLEIC_UPDATE_FIXTURES=1); checked by it against the Rust channel and by web/src/channel/vectors.test.ts against the web channel.",
        "keys": {
            "hostStaticPrivate": hex(&[0x11; 32]),
            "hostStaticPublic": hex(host.public().as_bytes()),
            "deviceStaticPrivate": hex(&[0x22; 32]),
            "deviceStaticPublic": hex(device.public().as_bytes()),
            "pairingSecret": hex(&secret.0),
            "devicePairingEphemeral": hex(&dev_pair_e),
            "hostPairingEphemeral": hex(&host_pair_e),
            "deviceReconnectEphemeral": hex(&dev_ik_e),
            "hostReconnectEphemeral": hex(&host_ik_e),
        },
        "hostID": host_id,
        "prologue": hex(&p),
        "link": {
            "url": link_url, "app": app, "relay": "wss://relay.example", "hostID": host_id,
            "hostKey": b64url(host.public().as_bytes()), "secret": b64url(&secret.0),
            "name": "my phone", "machine": "studio",
        },
        "pairing": {
            "protocol": PAIRING_PROTOCOL,
            "message1": hex(&m1), "firstFrame": hex(&first_pair),
            "message2": hex(&m2), "message3": hex(&m3),
            "handshakeHash": pairing_hash, "frames": pairing_frames,
        },
        "reconnect": {
            "protocol": CONNECT_PROTOCOL,
            "message1": hex(&k1), "firstFrame": hex(&first_ik), "message2": hex(&k2),
            "handshakeHash": reconnect_hash, "frames": reconnect_frames, "split": split,
        },
        "relay": relay,
    })
}

/// The vectors as the page prints them: one `name = value` line each.
fn render(v: &Value, at: &str, out: &mut String) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if k != "about" && k != "what" {
                    render(v, &if at.is_empty() { k.clone() } else { format!("{at}.{k}") }, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(what) = item.get("what").and_then(Value::as_str) {
                    out.push_str(&format!("# {at}[{i}]: {what}\n"));
                }
                render(item, &format!("{at}[{i}]"), out);
            }
        }
        Value::String(s) => out.push_str(&format!("{at} = {s}\n")),
        other => out.push_str(&format!("{at} = {other}\n")),
    }
}

fn doc_block(doc: &str) -> Option<(usize, usize)> {
    let start = doc.find(BLOCK_START)? + BLOCK_START.len();
    let end = start + doc[start..].find(BLOCK_END)?;
    Some((start, end))
}

#[test]
fn the_channel_reproduces_its_published_vectors_and_the_page_prints_them() {
    let computed = compute();
    let file = root().join("docs/channel-vectors.json");
    let page = root().join("docs/channel.md");
    let mut block = String::from("\n```text\n");
    render(&computed, "", &mut block);
    block.push_str("```\n");
    if std::env::var_os("NUCLEIC_UPDATE_FIXTURES").is_some() {
        std::fs::write(&file, serde_json::to_string_pretty(&computed).unwrap() + "\n").unwrap();
        let doc = std::fs::read_to_string(&page).unwrap();
        let (s, e) = doc_block(&doc).expect("the vectors block's markers in docs/channel.md");
        std::fs::write(&page, format!("{}{block}{}", &doc[..s], &doc[e..])).unwrap();
        return;
    }
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        committed == computed,
        "docs/channel-vectors.json differs from what the channel computes (NUCLEIC_UPDATE_FIXTURES=1 after an intended change)"
    );
    let doc = std::fs::read_to_string(&page).unwrap();
    let (s, e) = doc_block(&doc).expect("the vectors block's markers in docs/channel.md");
    assert_eq!(
        &doc[s..e],
        block,
        "docs/channel.md's vectors differ from docs/channel-vectors.json"
    );

    // The examples in the page's prose: every hex string and every percent-encoded text in
    // backticks is part of a vector (the prologue's prefix, the link's encodings).
    let mut strings = Vec::new();
    collect_strings(&computed, &mut strings);
    let prose = format!("{}{}", &doc[..s], &doc[e..]);
    let mut checked = 0;
    for span in prose.split('`').skip(1).step_by(2) {
        // Bytes written apart (`00 01 11 31`) are checked together.
        let bytes = span.split(' ').all(|b| b.len() == 2) && span.contains(' ');
        let span = &if bytes { span.replace(' ', "") } else { span.to_owned() };
        let hex_like = span.len() >= 8 && span.bytes().all(|b| b.is_ascii_hexdigit());
        let percent = span.contains('%')
            && !span.contains(' ')
            && span
                .split('%')
                .skip(1)
                .all(|p| p.len() >= 2 && p[..2].bytes().all(|b| b.is_ascii_hexdigit()));
        if hex_like || percent {
            assert!(
                strings.iter().any(|v| v.contains(span)),
                "docs/channel.md's example `{span}` is in no vector"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} examples found in the page's prose");
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

/// The host's demultiplexer takes the vectors' first frames through the relay's wrapping:
/// pairing with the vector's secret, then a reconnect of the device it recorded.
#[test]
fn the_host_streams_accept_the_vectors_first_frames() {
    let v = compute();
    let unhex = |s: &Value| -> Vec<u8> {
        let s = s.as_str().unwrap();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    };
    let host = keypair([0x11; 32]);
    let mut streams = DeviceStreams::new(host, v["hostID"].as_str().unwrap(), 4);
    let mut registry = OneSecret(Some(PairingSecret([0x33; 32])), HashSet::new());
    streams.on_relay_frame(&unhex(&v["relay"][0]["bytes"]), &mut registry).unwrap();
    let step = streams.on_relay_frame(&unhex(&v["relay"][1]["bytes"]), &mut registry).unwrap();
    assert_eq!(step.to_relay.len(), 1, "message 2 answered");
    match RelayFrame::parse(&step.to_relay[0]).unwrap() {
        // The host's message 2 has a fresh ephemeral: its length is the vector's.
        RelayFrame::Data { stream, payload } => {
            assert_eq!(stream, STREAM);
            assert_eq!(payload.len(), unhex(&v["pairing"]["message2"]).len());
        }
        other => panic!("expected DATA, got {other:?}"),
    }
    // A reconnect of a device the host never paired is closed; of the paired one, answered.
    let ik = data_frame(7, &unhex(&v["reconnect"]["firstFrame"]));
    streams.on_relay_frame(&[0x11, 0, 0, 0, 7], &mut registry).unwrap();
    let refused = streams.on_relay_frame(&ik, &mut registry).unwrap();
    assert_eq!(refused.to_relay, vec![close_frame(7)]);
    registry.1.insert(keypair([0x22; 32]).public());
    streams.on_relay_frame(&[0x11, 0, 0, 0, 8], &mut registry).unwrap();
    let answered = streams.on_relay_frame(&data_frame(8, &ik[5..]), &mut registry).unwrap();
    assert_eq!(answered.events.len(), 1, "{:?}", answered.events);
    answered_payload(&answered.to_relay[0]);
}

fn answered_payload(frame: &[u8]) -> Vec<u8> {
    match RelayFrame::parse(frame).unwrap() {
        RelayFrame::Data { payload, .. } => {
            assert_eq!(payload.len(), 48, "IK message 2: ephemeral and an empty payload's tag");
            payload
        }
        other => panic!("expected DATA, got {other:?}"),
    }
}
