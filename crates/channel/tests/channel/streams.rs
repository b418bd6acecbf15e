//! The host's demultiplexer of device streams over the relay: pairing once per secret,
//! reconnects of paired devices only, a failing stream closed alone, revocation.

use std::collections::HashSet;

use nucleic_channel::relay::{RelayFrame, data_frame};
use nucleic_channel::streams::{
    DeviceRegistry, DeviceStreams, MODE_CONNECT, MODE_PAIR, StreamEvent,
};
use nucleic_channel::{Handshake, PairingSecret, PublicKey, StaticKeypair, Transport, prologue};

const HOST_ID: &str = "streams-host";

#[derive(Default)]
struct Registry {
    secret: Option<PairingSecret>,
    paired: HashSet<PublicKey>,
}

impl DeviceRegistry for Registry {
    fn pairing_secret(&self) -> Option<PairingSecret> {
        self.secret.clone()
    }
    fn complete_pairing(&mut self, device: &PublicKey, _secret: &PairingSecret) -> bool {
        if self.secret.take().is_none() {
            return false;
        }
        self.paired.insert(*device);
        true
    }
    fn is_paired(&self, device: &PublicKey) -> bool {
        self.paired.contains(device)
    }
}

fn open(stream: u32) -> Vec<u8> {
    let mut f = vec![0x11];
    f.extend_from_slice(&stream.to_be_bytes());
    f
}

fn first(mode: u8, msg1: &[u8]) -> Vec<u8> {
    let mut p = vec![mode];
    p.extend_from_slice(msg1);
    p
}

/// The payload of the one DATA frame for `stream` among `frames`.
fn data_for(frames: &[Vec<u8>], stream: u32) -> Vec<u8> {
    let found: Vec<Vec<u8>> = frames
        .iter()
        .filter_map(|f| match RelayFrame::parse(f).unwrap() {
            RelayFrame::Data { stream: s, payload } if s == stream => Some(payload),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "expected one frame for stream {stream}, got {frames:?}");
    found.into_iter().next().unwrap()
}

fn closes(frames: &[Vec<u8>]) -> Vec<u32> {
    frames
        .iter()
        .filter_map(|f| match RelayFrame::parse(f).unwrap() {
            RelayFrame::Close(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn pair(
    host: &mut DeviceStreams,
    reg: &mut Registry,
    stream: u32,
    device: &StaticKeypair,
    host_key: &PublicKey,
) -> Transport {
    let secret = reg.secret.clone().unwrap();
    let p = prologue(HOST_ID);
    let mut d = Handshake::pair_initiator(device, &secret, host_key, &p).unwrap();
    assert!(host.on_relay_frame(&open(stream), reg).unwrap().to_relay.is_empty());
    let step = host
        .on_relay_frame(&data_frame(stream, &first(MODE_PAIR, &d.write_message(b"").unwrap())), reg)
        .unwrap();
    d.read_message(&data_for(&step.to_relay, stream)).unwrap();
    let step =
        host.on_relay_frame(&data_frame(stream, &d.write_message(b"").unwrap()), reg).unwrap();
    assert_eq!(step.events, vec![StreamEvent::Paired { stream, device: device.public() }]);
    d.into_transport().unwrap()
}

#[test]
fn pair_once_then_reconnect_exchange_and_revoke() {
    let host_keys = StaticKeypair::generate().unwrap();
    let host_key = host_keys.public();
    let mut host = DeviceStreams::new(host_keys, HOST_ID, 8);
    let mut reg =
        Registry { secret: Some(PairingSecret::generate().unwrap()), ..Registry::default() };
    let phone = StaticKeypair::generate().unwrap();

    let mut t = pair(&mut host, &mut reg, 7, &phone, &host_key);
    assert!(reg.is_paired(&phone.public()) && reg.secret.is_none(), "the secret is spent");
    let step = host
        .on_relay_frame(&data_frame(7, &t.seal(b"list sessions").unwrap()[0]), &mut reg)
        .unwrap();
    assert_eq!(
        step.events,
        vec![StreamEvent::Message {
            stream: 7,
            device: phone.public(),
            message: b"list sessions".to_vec()
        }]
    );
    let frames = host.send(7, b"3 sessions").unwrap();
    assert_eq!(t.open(&data_for(&frames, 7)).unwrap().as_deref(), Some(&b"3 sessions"[..]));

    // The link again (spent): refused, and only that stream closes.
    let thief = StaticKeypair::generate().unwrap();
    let stale = PairingSecret::generate().unwrap();
    let mut d = Handshake::pair_initiator(&thief, &stale, &host_key, &prologue(HOST_ID)).unwrap();
    host.on_relay_frame(&open(8), &mut reg).unwrap();
    let step = host
        .on_relay_frame(&data_frame(8, &first(MODE_PAIR, &d.write_message(b"").unwrap())), &mut reg)
        .unwrap();
    assert_eq!(closes(&step.to_relay), vec![8]);
    assert!(
        matches!(&step.events[..], [StreamEvent::Closed { stream: 8, reason }] if reason.contains("no pairing"))
    );

    // The paired phone reconnects with IK on another stream.
    let mut d = Handshake::connect_initiator(&phone, &host_key, &prologue(HOST_ID)).unwrap();
    host.on_relay_frame(&open(9), &mut reg).unwrap();
    let step = host
        .on_relay_frame(
            &data_frame(9, &first(MODE_CONNECT, &d.write_message(b"").unwrap())),
            &mut reg,
        )
        .unwrap();
    assert_eq!(step.events, vec![StreamEvent::Connected { stream: 9, device: phone.public() }]);
    d.read_message(&data_for(&step.to_relay, 9)).unwrap();
    let mut t9 = d.into_transport().unwrap();
    let step =
        host.on_relay_frame(&data_frame(9, &t9.seal(b"approve").unwrap()[0]), &mut reg).unwrap();
    assert!(matches!(&step.events[..], [StreamEvent::Message { stream: 9, .. }]));
    assert_eq!(host.open_streams(), 2);

    // An unpaired key cannot reconnect: no message 2, the stream closes.
    let mut d = Handshake::connect_initiator(&thief, &host_key, &prologue(HOST_ID)).unwrap();
    host.on_relay_frame(&open(10), &mut reg).unwrap();
    let step = host
        .on_relay_frame(
            &data_frame(10, &first(MODE_CONNECT, &d.write_message(b"").unwrap())),
            &mut reg,
        )
        .unwrap();
    assert_eq!(closes(&step.to_relay), vec![10]);
    assert_eq!(step.to_relay.len(), 1);

    // Garbage on one stream closes it alone.
    let step = host.on_relay_frame(&data_frame(9, b"garbage garbage garbage"), &mut reg).unwrap();
    assert_eq!(closes(&step.to_relay), vec![9]);
    assert!(host.send(7, b"still here").is_ok());

    // Revocation closes the device's streams.
    let mut d = Handshake::connect_initiator(&phone, &host_key, &prologue(HOST_ID)).unwrap();
    host.on_relay_frame(&open(11), &mut reg).unwrap();
    host.on_relay_frame(
        &data_frame(11, &first(MODE_CONNECT, &d.write_message(b"").unwrap())),
        &mut reg,
    )
    .unwrap();
    let mut closed = closes(&host.drop_device(&phone.public()));
    closed.sort_unstable();
    assert_eq!(closed, vec![7, 11]);
    assert_eq!(host.open_streams(), 0);
}

#[test]
fn bad_first_frames_and_too_many_streams_are_refused() {
    let mut host = DeviceStreams::new(StaticKeypair::generate().unwrap(), HOST_ID, 2);
    let mut reg = Registry::default();
    host.on_relay_frame(&open(1), &mut reg).unwrap();
    let step = host.on_relay_frame(&data_frame(1, &[0x09, 1, 2, 3]), &mut reg).unwrap();
    assert_eq!(closes(&step.to_relay), vec![1]);
    // Pairing while no link is open.
    host.on_relay_frame(&open(2), &mut reg).unwrap();
    let step = host.on_relay_frame(&data_frame(2, &[MODE_PAIR; 49]), &mut reg).unwrap();
    assert_eq!(closes(&step.to_relay), vec![2]);
    // Data for a stream the relay never opened.
    let step = host.on_relay_frame(&data_frame(5, b"x"), &mut reg).unwrap();
    assert_eq!(closes(&step.to_relay), vec![5]);
    // The cap on streams.
    for s in 10..12 {
        assert!(host.on_relay_frame(&open(s), &mut reg).unwrap().to_relay.is_empty());
    }
    assert_eq!(closes(&host.on_relay_frame(&open(12), &mut reg).unwrap().to_relay), vec![12]);
    // A malformed relay frame is the relay connection's error.
    assert!(host.on_relay_frame(&[0xff], &mut reg).is_err());
}
