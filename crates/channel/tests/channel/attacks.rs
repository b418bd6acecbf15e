//! The handshakes and the transport refuse what an attacker in the middle (the relay, the
//! network) or a holder of stale material can send.

use nucleic_channel::{ChannelError, Handshake, MAX_FRAME, PairingSecret, StaticKeypair, prologue};

use super::support::{HOST_ID, keypair, paired};

#[test]
fn pairing_exchanges_both_static_keys_and_a_working_channel() {
    let (device, host) = (keypair(), keypair());
    let (mut d, mut h) = paired(&device, &host);
    assert_eq!(h.remote_static(), device.public());
    assert_eq!(d.remote_static(), host.public());
    assert_eq!(d.handshake_hash(), h.handshake_hash());
    for frame in d.seal(b"hello host").unwrap() {
        assert_eq!(h.open(&frame).unwrap().as_deref(), Some(&b"hello host"[..]));
    }
    for frame in h.seal(b"hello device").unwrap() {
        assert_eq!(d.open(&frame).unwrap().as_deref(), Some(&b"hello device"[..]));
    }
}

#[test]
fn a_wrong_pairing_secret_is_refused_by_the_host() {
    let (device, host) = (keypair(), keypair());
    let p = prologue(HOST_ID);
    let mut d =
        Handshake::pair_initiator(&device, &PairingSecret::generate().unwrap(), &host.public(), &p)
            .unwrap();
    let mut h = Handshake::pair_responder(&host, &PairingSecret::generate().unwrap(), &p).unwrap();
    h.read_message(&d.write_message(b"").unwrap()).unwrap();
    d.read_message(&h.write_message(b"").unwrap()).unwrap();
    let msg3 = d.write_message(b"").unwrap();
    assert!(matches!(h.read_message(&msg3), Err(ChannelError::Noise { .. })));
    assert!(h.remote_static().is_none() || !h.is_finished());
    assert_eq!(h.into_transport().unwrap_err(), ChannelError::Poisoned);
}

#[test]
fn a_host_that_is_not_the_one_in_the_link_is_refused_by_the_device() {
    let (device, host, impostor) = (keypair(), keypair(), keypair());
    let secret = PairingSecret::generate().unwrap();
    let p = prologue(HOST_ID);
    // The impostor even knows the secret: the device still insists on the link's host key.
    let mut d = Handshake::pair_initiator(&device, &secret, &host.public(), &p).unwrap();
    let mut h = Handshake::pair_responder(&impostor, &secret, &p).unwrap();
    h.read_message(&d.write_message(b"").unwrap()).unwrap();
    let msg2 = h.write_message(b"").unwrap();
    assert_eq!(d.read_message(&msg2).unwrap_err(), ChannelError::HostKeyMismatch);
    assert_eq!(d.write_message(b"").unwrap_err(), ChannelError::Poisoned);
}

#[test]
fn another_hosts_prologue_does_not_complete() {
    let (device, host) = (keypair(), keypair());
    let secret = PairingSecret::generate().unwrap();
    let mut d =
        Handshake::pair_initiator(&device, &secret, &host.public(), &prologue("host-a")).unwrap();
    let mut h = Handshake::pair_responder(&host, &secret, &prologue("host-b")).unwrap();
    // With a PSK, message 1's payload is already encrypted with the prologue as associated data.
    assert!(h.read_message(&d.write_message(b"").unwrap()).is_err());
}

#[test]
fn reconnect_needs_the_host_to_accept_the_device_key() {
    let (device, host) = (keypair(), keypair());
    let p = prologue(HOST_ID);
    let mut d = Handshake::connect_initiator(&device, &host.public(), &p).unwrap();
    let mut h = Handshake::connect_responder(&host, &p).unwrap();
    h.read_message(&d.write_message(b"").unwrap()).unwrap();
    assert_eq!(h.remote_static(), Some(device.public()));
    // Answering before vouching for the device is refused (a revoked device must not get in).
    assert_eq!(h.write_message(b"").unwrap_err(), ChannelError::RemoteNotAccepted);

    let mut h = Handshake::connect_responder(&host, &p).unwrap();
    let mut d = Handshake::connect_initiator(&device, &host.public(), &p).unwrap();
    h.read_message(&d.write_message(b"").unwrap()).unwrap();
    h.accept_remote().unwrap();
    d.read_message(&h.write_message(b"").unwrap()).unwrap();
    let (mut dt, mut ht) = (d.into_transport().unwrap(), h.into_transport().unwrap());
    let frames = dt.seal(b"resume from seq 41").unwrap();
    assert_eq!(ht.open(&frames[0]).unwrap().as_deref(), Some(&b"resume from seq 41"[..]));
}

#[test]
fn a_device_with_a_stale_host_key_cannot_reconnect() {
    let (device, host, old_host) = (keypair(), keypair(), keypair());
    let p = prologue(HOST_ID);
    let mut d = Handshake::connect_initiator(&device, &old_host.public(), &p).unwrap();
    let mut h = Handshake::connect_responder(&host, &p).unwrap();
    assert!(h.read_message(&d.write_message(b"").unwrap()).is_err());
}

#[test]
fn a_replayed_or_reordered_frame_is_refused_and_the_transport_closes() {
    let (device, host) = (keypair(), keypair());
    let (mut d, mut h) = paired(&device, &host);
    let one = d.seal(b"approve 1").unwrap().remove(0);
    let two = d.seal(b"approve 2").unwrap().remove(0);
    assert!(h.open(&one).unwrap().is_some());
    // Replay of a frame already accepted.
    assert!(matches!(h.open(&one), Err(ChannelError::Noise { .. })));
    // Even the genuine next frame is refused now: the channel is closed for good.
    assert_eq!(h.open(&two).unwrap_err(), ChannelError::Poisoned);

    let (mut d, mut h) = paired(&device, &host);
    let one = d.seal(b"first").unwrap().remove(0);
    let two = d.seal(b"second").unwrap().remove(0);
    // Reordered: the second frame first.
    assert!(h.open(&two).is_err());
    assert!(h.open(&one).is_err());
}

#[test]
fn a_flipped_bit_is_refused() {
    let (device, host) = (keypair(), keypair());
    let (mut d, mut h) = paired(&device, &host);
    let mut frame = d.seal(b"merge").unwrap().remove(0);
    frame[3] ^= 1;
    assert!(h.open(&frame).is_err());
}

#[test]
fn a_replayed_handshake_yields_no_working_channel() {
    let (device, host) = (keypair(), keypair());
    let p = prologue(HOST_ID);
    // A genuine reconnect, recorded by the relay.
    let mut d = Handshake::connect_initiator(&device, &host.public(), &p).unwrap();
    let mut h = Handshake::connect_responder(&host, &p).unwrap();
    let msg1 = d.write_message(b"").unwrap();
    h.read_message(&msg1).unwrap();
    h.accept_remote().unwrap();
    d.read_message(&h.write_message(b"").unwrap()).unwrap();
    let mut dt = d.into_transport().unwrap();
    let recorded = dt.seal(b"approve").unwrap().remove(0);

    // Replayed later: the host answers with a fresh ephemeral, so the recorded frame is garbage.
    let mut h2 = Handshake::connect_responder(&host, &p).unwrap();
    h2.read_message(&msg1).unwrap();
    h2.accept_remote().unwrap();
    h2.write_message(b"").unwrap();
    let mut ht2 = h2.into_transport().unwrap();
    assert!(ht2.open(&recorded).is_err());

    // Pairing: a recorded message 3 replayed into a new pairing attempt fails too.
    let secret = PairingSecret::generate().unwrap();
    let mut d = Handshake::pair_initiator(&device, &secret, &host.public(), &p).unwrap();
    let mut h = Handshake::pair_responder(&host, &secret, &p).unwrap();
    let m1 = d.write_message(b"").unwrap();
    h.read_message(&m1).unwrap();
    d.read_message(&h.write_message(b"").unwrap()).unwrap();
    let m3 = d.write_message(b"").unwrap();
    let mut h2 = Handshake::pair_responder(&host, &secret, &p).unwrap();
    h2.read_message(&m1).unwrap();
    h2.write_message(b"").unwrap();
    assert!(h2.read_message(&m3).is_err());
}

#[test]
fn large_messages_are_framed_and_capped() {
    let (device, host) = (keypair(), keypair());
    let (mut d, mut h) = paired(&device, &host);
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let frames = d.seal(&big).unwrap();
    assert_eq!(frames.len(), 4);
    assert!(frames.iter().all(|f| f.len() <= MAX_FRAME));
    let mut got = None;
    for f in &frames {
        got = h.open(f).unwrap();
    }
    assert_eq!(got.as_deref(), Some(big.as_slice()));
    assert_eq!(d.seal(b"").unwrap().len(), 1, "an empty message is one frame");

    // The receiver's cap holds even if the sender ignores its own.
    let (mut d, h) = paired(&device, &host);
    let mut h = h.with_max_message(100_000);
    let frames = d.seal(&big).unwrap();
    assert!(h.open(&frames[0]).unwrap().is_none());
    assert_eq!(h.open(&frames[1]).unwrap_err(), ChannelError::MessageTooLarge { max: 100_000 });
    let mut d = d.with_max_message(1000);
    assert_eq!(d.seal(&big).unwrap_err(), ChannelError::MessageTooLarge { max: 1000 });

    let (_, mut h) = paired(&device, &host);
    let oversized = vec![0u8; MAX_FRAME + 1];
    assert!(matches!(h.open(&oversized), Err(ChannelError::FrameTooLarge { .. })));
    let (_, mut h) = paired(&device, &host);
    assert!(matches!(h.open(b"short"), Err(ChannelError::Malformed(_))));
}

#[test]
fn keys_of_the_wrong_length_are_refused() {
    assert!(StaticKeypair::from_keys(&[0; 31], &[0; 32]).is_err());
    assert!(PairingSecret::from_slice(&[0; 16]).is_err());
}
