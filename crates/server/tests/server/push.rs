//! Push settings over the WebSocket: per device, checked, dropped with the device; the service
//! worker script's headers.

use nucleic_push::{BrowserKeys, b64};
use serde_json::{Value, json};

use crate::support::{browser_ws, device_hello, hello, recv, send, start, ws};

fn subscription(keys: &BrowserKeys, endpoint: &str) -> Value {
    json!({
        "endpoint": endpoint,
        "keys": { "p256dh": b64::encode(&keys.keys.p256dh), "auth": b64::encode(&keys.keys.auth) },
    })
}

#[tokio::test]
async fn a_device_subscribes_with_quiet_hours_and_revoking_it_drops_the_subscription() {
    let s = start().await;
    let phone = s.sign_in("phone").await;
    let mut socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut socket, phone.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    send(&mut socket, json!({"type": "getPush", "messageID": "g"})).await;
    let settings = recv(&mut socket).await;
    assert_eq!(settings["type"], "push", "{settings}");
    assert_eq!(settings["push"]["subscribed"], false);
    let vapid = settings["push"]["vapidPublicKey"].as_str().unwrap().to_owned();
    assert_eq!(b64::decode(&vapid).unwrap().len(), 65);
    // Made once, private.
    let key_file = s.dir.path().join("home").join(nucleic_push::VAPID_KEY_FILE);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);

    let keys = BrowserKeys::generate().unwrap();
    let quiet = json!({"fromMinute": 1320, "toMinute": 420, "timeZone": "Europe/Berlin"});
    send(
        &mut socket,
        json!({"type": "setPush", "messageID": "s1", "subscription": subscription(&keys, "https://push.example/abc"), "quietHours": quiet}),
    )
    .await;
    let set = recv(&mut socket).await;
    assert_eq!(
        (set["push"]["subscribed"].clone(), set["push"]["quietHours"].clone()),
        (json!(true), quiet),
        "{set}"
    );
    assert_eq!(set["push"]["vapidPublicKey"], vapid, "the key stays the same");

    // Bad input: a clear error each, nothing stored.
    let bad = [
        (subscription(&keys, "javascript:alert(1)"), "not an http(s) URL"),
        (
            json!({"endpoint": "https://p/x", "keys": {"p256dh": b64::encode(&[4; 65]), "auth": b64::encode(&keys.keys.auth)}}),
            "not a P-256 public key",
        ),
        (
            json!({"endpoint": "https://p/x", "keys": {"p256dh": b64::encode(&keys.keys.p256dh), "auth": "AAAA"}}),
            "16 bytes",
        ),
        (subscription(&keys, &format!("https://p/{}", "x".repeat(3000))), "over 2048 bytes"),
    ];
    for (i, (sub, why)) in bad.into_iter().enumerate() {
        send(
            &mut socket,
            json!({"type": "setPush", "messageID": format!("b{i}"), "subscription": sub}),
        )
        .await;
        let reply = recv(&mut socket).await;
        assert_eq!(reply["code"], "invalidRequest", "{reply}");
        assert!(reply["message"].as_str().unwrap().contains(why), "{reply}");
    }
    let bad_hours = [
        (json!({"fromMinute": 1440, "toMinute": 0, "timeZone": "UTC"}), "0 to 1439"),
        (
            json!({"fromMinute": 60, "toMinute": 120, "timeZone": "Mars/Olympus_Mons"}),
            "unknown time zone \"Mars/Olympus_Mons\"",
        ),
        (
            json!({"fromMinute": 60, "toMinute": 120, "timeZone": "../../etc/passwd"}),
            "not an IANA time zone name",
        ),
    ];
    for (i, (hours, why)) in bad_hours.into_iter().enumerate() {
        send(
            &mut socket,
            json!({"type": "setPush", "messageID": format!("q{i}"), "subscription": subscription(&keys, "https://p/x"), "quietHours": hours}),
        )
        .await;
        let reply = recv(&mut socket).await;
        assert_eq!(reply["code"], "invalidRequest", "{reply}");
        assert!(reply["message"].as_str().unwrap().contains(why), "{reply}");
    }
    assert_eq!(
        s.host.push_settings(&phone.id).await.unwrap().quiet_hours.map(|q| q.from_minute),
        Some(1320)
    );

    // The token is no device: nothing to subscribe.
    let mut cli = ws(&s).await;
    hello(&mut cli).await;
    send(&mut cli, json!({"type": "getPush", "messageID": "t"})).await;
    let refused = recv(&mut cli).await;
    assert!(refused["message"].as_str().unwrap().contains("per device"), "{refused}");

    // Revoking the device drops its subscription.
    send(&mut cli, json!({"type": "intent", "messageID": "r", "intent": {"kind": "revokeDevice", "deviceID": phone.id}})).await;
    assert_eq!(recv(&mut cli).await["type"], "ack");
    assert!(!s.host.push_settings(&phone.id).await.unwrap().subscribed);

    // Unsubscribing (a second device): subscription null.
    let desk = s.sign_in("desk").await;
    let mut desk_socket = browser_ws(&s).await;
    device_hello(&mut desk_socket, desk.proof(&s.challenge().await)).await;
    send(&mut desk_socket, json!({"type": "setPush", "messageID": "1", "subscription": subscription(&keys, "https://p/d")})).await;
    assert_eq!(recv(&mut desk_socket).await["push"]["subscribed"], true);
    send(&mut desk_socket, json!({"type": "setPush", "messageID": "2", "subscription": null}))
        .await;
    assert_eq!(recv(&mut desk_socket).await["push"]["subscribed"], false);
}

#[tokio::test]
async fn the_service_worker_script_is_served_uncached_with_its_scope() {
    let s = start().await;
    let sw = s.get("/sw.js", "").await;
    if !nucleic_server::app_is_built() {
        // Without the built app there is no service worker: a plain 404, never index.html.
        assert_eq!(sw.status, 404);
        return;
    }
    assert_eq!(sw.status, 200, "{}", sw.text());
    assert!(sw.header("content-type").unwrap().contains("javascript"));
    assert_eq!(sw.header("cache-control"), Some("no-cache"));
    assert_eq!(sw.header("service-worker-allowed"), Some("/"));
    assert!(sw.header("content-security-policy").unwrap().contains("script-src 'self'"));
    let manifest = s.get("/manifest.webmanifest", "").await;
    assert_eq!(manifest.status, 200);
    assert!(manifest.header("content-type").unwrap().contains("manifest+json"));
    let m = manifest.json();
    assert_eq!(m["display"], "standalone");
    assert!(m["icons"].as_array().unwrap().iter().any(|i| i["sizes"] == "192x192"));
    assert!(m["icons"].as_array().unwrap().iter().any(|i| i["sizes"] == "512x512"));
}
