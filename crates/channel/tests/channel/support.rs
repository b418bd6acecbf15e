//! Helpers shared by the channel tests.

use nucleic_channel::{Handshake, PairingSecret, StaticKeypair, Transport, prologue};

pub const HOST_ID: &str = "host-under-test";

pub fn keypair() -> StaticKeypair {
    StaticKeypair::generate().unwrap()
}

/// Runs a handshake to the end, device (initiator) first, and returns both transports.
pub fn finish(mut device: Handshake, mut host: Handshake) -> (Transport, Transport) {
    let mut to_host = true;
    while !(device.is_finished() && host.is_finished()) {
        let (from, to) = if to_host { (&mut device, &mut host) } else { (&mut host, &mut device) };
        let msg = from.write_message(b"").unwrap();
        to.read_message(&msg).unwrap();
        if to_host
            && host.kind() == nucleic_channel::HandshakeKind::Connect
            && host.remote_static().is_some()
        {
            let _ = host.accept_remote();
        }
        to_host = !to_host;
    }
    (device.into_transport().unwrap(), host.into_transport().unwrap())
}

pub fn paired(device: &StaticKeypair, host: &StaticKeypair) -> (Transport, Transport) {
    let secret = PairingSecret::generate().unwrap();
    let p = prologue(HOST_ID);
    finish(
        Handshake::pair_initiator(device, &secret, &host.public(), &p).unwrap(),
        Handshake::pair_responder(host, &secret, &p).unwrap(),
    )
}
