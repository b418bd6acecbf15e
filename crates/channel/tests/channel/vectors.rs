//! The published Noise test vectors (a committed subset of cacophony's and snow's, see
//! `testdata/noise-vectors.json`) reproduced by snow built with this workspace's lean features.

use serde_json::Value;

fn hex(v: &Value) -> Vec<u8> {
    let s = v.as_str().unwrap();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn snow_with_our_features_reproduces_the_vectors() {
    let doc: Value =
        serde_json::from_str(include_str!("../../testdata/noise-vectors.json")).unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    let mut checked = 0;
    for v in vectors {
        let name = v["protocol_name"].as_str().unwrap();
        let params: snow::params::NoiseParams = name.parse().unwrap();
        let mut psks: Vec<(u8, Vec<u8>)> = Vec::new();
        if let Some(list) = v.get("init_psks").and_then(Value::as_array) {
            let locations: Vec<u8> = name
                .split('_')
                .nth(1)
                .unwrap()
                .split("psk")
                .skip(1)
                .map(|n| n.trim_start_matches('+').parse().unwrap())
                .collect();
            for (loc, key) in locations.iter().zip(list) {
                psks.push((*loc, hex(key)));
            }
        }
        let (ie, re) = (hex(&v["init_ephemeral"]), hex(&v["resp_ephemeral"]));
        let (ip, rp) = (hex(&v["init_prologue"]), hex(&v["resp_prologue"]));
        let is = v.get("init_static").map(hex);
        let rs = v.get("resp_static").map(hex);
        let irs = v.get("init_remote_static").map(hex);
        let psk_arrays: Vec<(u8, [u8; 32])> =
            psks.iter().map(|(l, k)| (*l, k.as_slice().try_into().unwrap())).collect();

        let mut b = snow::Builder::new(params.clone())
            .prologue(&ip)
            .unwrap()
            .fixed_ephemeral_key_for_testing_only(&ie);
        if let Some(k) = &is {
            b = b.local_private_key(k).unwrap();
        }
        if let Some(k) = &irs {
            b = b.remote_public_key(k).unwrap();
        }
        for (l, k) in &psk_arrays {
            b = b.psk(*l, k).unwrap();
        }
        let mut init = b.build_initiator().unwrap();
        let mut b = snow::Builder::new(params)
            .prologue(&rp)
            .unwrap()
            .fixed_ephemeral_key_for_testing_only(&re);
        if let Some(k) = &rs {
            b = b.local_private_key(k).unwrap();
        }
        for (l, k) in &psk_arrays {
            b = b.psk(*l, k).unwrap();
        }
        let mut resp = b.build_responder().unwrap();

        let mut buf = vec![0u8; 65_535];
        let mut payload = vec![0u8; 65_535];
        let mut transports: Option<(snow::TransportState, snow::TransportState)> = None;
        for (i, m) in v["messages"].as_array().unwrap().iter().enumerate() {
            let (p, c) = (hex(&m["payload"]), hex(&m["ciphertext"]));
            let from_initiator = i % 2 == 0;
            if transports.is_none() && init.is_handshake_finished() && resp.is_handshake_finished()
            {
                if let Some(h) = v.get("handshake_hash") {
                    assert_eq!(
                        init.get_handshake_hash(),
                        hex(h).as_slice(),
                        "{name}: handshake hash"
                    );
                }
                let i2 = std::mem::replace(
                    &mut init,
                    snow::Builder::new("Noise_NN_25519_ChaChaPoly_SHA256".parse().unwrap())
                        .build_initiator()
                        .unwrap(),
                );
                let r2 = std::mem::replace(
                    &mut resp,
                    snow::Builder::new("Noise_NN_25519_ChaChaPoly_SHA256".parse().unwrap())
                        .build_responder()
                        .unwrap(),
                );
                transports =
                    Some((i2.into_transport_mode().unwrap(), r2.into_transport_mode().unwrap()));
            }
            let n = match (&mut transports, from_initiator) {
                (None, true) => {
                    let n = init.write_message(&p, &mut buf).unwrap();
                    resp.read_message(&buf[..n], &mut payload).unwrap();
                    n
                }
                (None, false) => {
                    let n = resp.write_message(&p, &mut buf).unwrap();
                    init.read_message(&buf[..n], &mut payload).unwrap();
                    n
                }
                (Some((ti, tr)), true) => {
                    let n = ti.write_message(&p, &mut buf).unwrap();
                    tr.read_message(&buf[..n], &mut payload).unwrap();
                    n
                }
                (Some((ti, tr)), false) => {
                    let n = tr.write_message(&p, &mut buf).unwrap();
                    ti.read_message(&buf[..n], &mut payload).unwrap();
                    n
                }
            };
            assert_eq!(&buf[..n], c.as_slice(), "{name} ({}) message {i}", v["source"]);
            checked += 1;
        }
    }
    assert!(checked >= 45, "checked only {checked} messages");
}
