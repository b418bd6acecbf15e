//! Devices instead of cookies: registration with a one-time link, proofs in hello, revocation
//! and token rotation closing connections at once, and the attacks each defence answers —
//! credential replay from another local port, a wrong or replayed proof, a forged approver.

use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::*;

fn token_of(link: &str) -> String {
    link.split("token=").nth(1).unwrap().to_owned()
}

#[tokio::test]
async fn a_login_link_registers_one_device_and_sets_no_cookie() {
    let s = start().await;
    let link = s.login_path();
    assert!(link.starts_with("/login?token="), "{link}");
    assert_eq!(link.len(), "/login?token=".len() + 64, "256 bits, hex");
    // The link itself is an app route: the page, no credential, never a cookie.
    let page = s.get(&link, "").await;
    assert_eq!(page.status, 200);
    assert!(page.header("set-cookie").is_none());
    let key = new_key();
    let ua = "User-Agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36\r\n";
    let body = registration(&token_of(&link), &key, None);
    let first = s.post_json("/api/devices", &body, ua).await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert!(first.header("set-cookie").is_none(), "no cookie: every local port would get it");
    assert_eq!(first.json()["name"], "Chrome on Linux");
    // The same link again, or a made-up one: refused, saying what to do.
    let again = s.post_json("/api/devices", &body, "").await;
    assert_eq!(again.status, 401);
    assert!(again.json()["error"].as_str().unwrap().contains("nucleic open"));
    let forged = registration(&"0".repeat(64), &key, None);
    assert_eq!(s.post_json("/api/devices", &forged, "").await.status, 401);
    // A key that is not P-256 SPKI is refused before the link is spent.
    let link = s.login_path();
    let bad = json!({"token": token_of(&link), "publicKey": "AAAA"});
    assert_eq!(s.post_json("/api/devices", &bad, "").await.status, 400);
    let good = registration(&token_of(&link), &new_key(), Some("  my phone\u{7}  "));
    let named = s.post_json("/api/devices", &good, "").await;
    assert_eq!((named.status, named.json()["name"].clone()), (200, json!("my phone")));
    assert_eq!(s.host.list_devices(None).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_device_proves_its_key_in_hello_and_is_the_recorded_approver() {
    let s = start().await;
    let device = s.sign_in("desk browser").await;
    let mut socket = browser_ws(&s).await;
    let welcome = device_hello(&mut socket, device.proof(&s.challenge().await)).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    send(&mut socket, json!({"type": "listDevices", "messageID": "d"})).await;
    let devices = recv(&mut socket).await;
    assert_eq!(devices["type"], "devices");
    assert_eq!(devices["devices"][0]["name"], "desk browser");
    assert_eq!(devices["devices"][0]["current"], true);
    assert!(devices["devices"][0]["lastSeenAt"].is_i64());
    // What it does is recorded as the device, not as the name its hello claimed.
    let session = crate::files::agentless_session(&s).await;
    send(
        &mut socket,
        json!({"type": "subscribe", "messageID": "s", "sessionID": session, "fromSeq": 1}),
    )
    .await;
    send(
        &mut socket,
        json!({"type": "intent", "messageID": "r", "intent": {"kind": "rename", "sessionID": session, "title": "t2"}}),
    )
    .await;
    let by = loop {
        let m = recv(&mut socket).await;
        let events = if m["type"] == "events" {
            m["events"].as_array().unwrap().clone()
        } else {
            vec![m["event"].clone()]
        };
        if let Some(e) = events.iter().find(|e| e["kind"]["type"] == "sessionUpdated") {
            break e["kind"]["by"].clone();
        }
    };
    assert_eq!(by, "desk browser");
}

#[tokio::test]
async fn wrong_replayed_foreign_and_missing_proofs_are_refused_and_closed() {
    let s = start().await;
    let device = s.sign_in("d").await;
    let refused = |reply: &serde_json::Value| {
        assert_eq!(
            (reply["type"].as_str(), reply["code"].as_str()),
            (Some("error"), Some("unauthorized")),
            "{reply}"
        );
    };
    // No credential at all.
    let mut socket = browser_ws(&s).await;
    refused(&device_hello(&mut socket, serde_json::Value::Null).await);
    assert_eq!(close_code(&mut socket).await, Some(4401));
    // A signature over another challenge.
    let (a, b) = (s.challenge().await, s.challenge().await);
    let mut wrong = device.proof(&a);
    wrong["nonce"] = json!(b);
    let mut socket = browser_ws(&s).await;
    refused(&device_hello(&mut socket, wrong).await);
    assert_eq!(close_code(&mut socket).await, Some(4401));
    // A valid hello, replayed (the challenge is spent).
    let proof = device.proof(&s.challenge().await);
    let mut socket = browser_ws(&s).await;
    assert_eq!(device_hello(&mut socket, proof.clone()).await["type"], "welcome");
    let mut replay = browser_ws(&s).await;
    refused(&device_hello(&mut replay, proof).await);
    // Another key claiming this device's id; a challenge never issued; an unknown device.
    let impostor = TestDevice { id: device.id.clone(), key: new_key() };
    let mut socket = browser_ws(&s).await;
    refused(&device_hello(&mut socket, impostor.proof(&s.challenge().await)).await);
    let mut socket = browser_ws(&s).await;
    refused(&device_hello(&mut socket, device.proof("made-up")).await);
    let stranger = TestDevice { id: "not-a-device".into(), key: new_key() };
    let mut socket = browser_ws(&s).await;
    refused(&device_hello(&mut socket, stranger.proof(&s.challenge().await)).await);
}

#[tokio::test]
async fn cookies_from_older_builds_open_nothing() {
    let s = start().await;
    // The old session cookie and the token as a cookie: browsers send them to every port.
    for cookie in
        [format!("nucleic_token={}", s.token), format!("nucleic_session={}", "a".repeat(64))]
    {
        let reply = s.get("/api/health", &format!("Cookie: {cookie}\r\n")).await;
        assert_eq!(reply.status, 401, "{cookie}");
        let mut request =
            format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
        request.headers_mut().insert("cookie", cookie.parse().unwrap());
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        send(
            &mut socket,
            json!({"type": "hello", "clientID": "c", "clientName": "x", "protocolVersion": 1}),
        )
        .await;
        assert_eq!(recv(&mut socket).await["code"], "unauthorized", "{cookie}");
    }
}

#[tokio::test]
async fn other_local_origins_cannot_fetch_challenges_register_or_connect() {
    let s = start().await;
    let other = format!("Origin: http://127.0.0.1:{}\r\n", s.addr.port() + 1);
    assert_eq!(s.post_json("/api/challenge", &json!({}), &other).await.status, 403);
    let link = s.login_path();
    let body = registration(&token_of(&link), &new_key(), None);
    assert_eq!(s.post_json("/api/devices", &body, &other).await.status, 403);
    // The refused attempt did not spend the link: the person's own page still can.
    assert_eq!(s.post_json("/api/devices", &body, "").await.status, 200);
    let mut request = format!("ws://127.0.0.1:{}/ws", s.addr.port()).into_client_request().unwrap();
    request
        .headers_mut()
        .insert("origin", format!("http://localhost:{}", s.addr.port() + 1).parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn revoking_a_device_closes_its_connection_at_once_and_refuses_it_after() {
    let s = start().await;
    let (phone, desk) = (s.sign_in("phone").await, s.sign_in("desk").await);
    let mut phone_socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut phone_socket, phone.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    let mut desk_socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut desk_socket, desk.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    // The desk revokes the phone.
    send(
        &mut desk_socket,
        json!({"type": "intent", "messageID": "r", "intent": {"kind": "revokeDevice", "deviceID": phone.id}}),
    )
    .await;
    let ack = recv(&mut desk_socket).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(close_code(&mut phone_socket).await, Some(4401));
    let mut socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut socket, phone.proof(&s.challenge().await)).await["code"],
        "unauthorized"
    );
    // The desk is still connected; signing out is revoking itself.
    send(&mut desk_socket, json!({"type": "listDevices", "messageID": "l"})).await;
    let list = recv(&mut desk_socket).await;
    let phone_row =
        list["devices"].as_array().unwrap().iter().find(|d| d["name"] == "phone").unwrap().clone();
    assert!(phone_row["revokedAt"].is_i64());
    send(
        &mut desk_socket,
        json!({"type": "intent", "messageID": "out", "intent": {"kind": "revokeDevice", "deviceID": desk.id}}),
    )
    .await;
    assert_eq!(close_code(&mut desk_socket).await, Some(4401));
    // Unknown devices: a clear not-found.
    let mut cli = ws(&s).await;
    hello(&mut cli).await;
    send(&mut cli, json!({"type": "intent", "messageID": "x", "intent": {"kind": "revokeDevice", "deviceID": "nope"}})).await;
    assert_eq!(recv(&mut cli).await["code"], "notFound");
}

#[tokio::test]
async fn rotating_the_token_revokes_every_device_and_the_old_token() {
    let s = start().await;
    let device = s.sign_in("laptop").await;
    let mut browser = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut browser, device.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    let mut cli = ws(&s).await;
    hello(&mut cli).await;
    send(
        &mut cli,
        json!({"type": "intent", "messageID": "rot", "intent": {"kind": "rotateToken"}}),
    )
    .await;
    let ack = recv(&mut cli).await;
    assert_eq!(ack["result"]["devicesRevoked"], 1, "{ack}");
    assert_eq!(close_code(&mut browser).await, Some(4401));
    assert_eq!(close_code(&mut cli).await, Some(4401), "the old token's connections close too");
    let new_token = std::fs::read_to_string(s.dir.path().join("home/token")).unwrap();
    assert_ne!(new_token.trim(), s.token);
    let old = s.get("/api/health", &format!("Authorization: Bearer {}\r\n", s.token)).await;
    assert_eq!(old.status, 401);
    let new =
        s.get("/api/health", &format!("Authorization: Bearer {}\r\n", new_token.trim())).await;
    assert_eq!(new.status, 200);
    let mut socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut socket, device.proof(&s.challenge().await)).await["code"],
        "unauthorized"
    );
}

#[tokio::test]
async fn a_device_stays_signed_in_across_a_host_restart_but_links_do_not() {
    let s = start().await;
    let device = s.sign_in("d").await;
    let link = s.login_path();
    let s = s.restart().await;
    let mut socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut socket, device.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    let body = registration(&token_of(&link), &new_key(), None);
    assert_eq!(
        s.post_json("/api/devices", &body, "").await.status,
        401,
        "links live in memory only"
    );
}

#[tokio::test]
async fn the_cli_mints_login_links_over_http() {
    let s = start().await;
    let host = s.host_header();
    let post = |auth: &str| {
        format!(
            "POST /api/login-link HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
    };
    assert_eq!(request(s.addr, post("")).await.status, 401);
    let minted = request(s.addr, post(&format!("Authorization: Bearer {}\r\n", s.token))).await;
    assert_eq!(minted.status, 200);
    let url = minted.json()["url"].as_str().unwrap().to_owned();
    let body = registration(&token_of(&url), &new_key(), None);
    assert_eq!(s.post_json("/api/devices", &body, "").await.status, 200);
}

#[tokio::test]
async fn an_expired_login_link_is_refused() {
    let s = start_with_login_ttl(std::time::Duration::from_millis(200)).await;
    let link = s.login_path();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let body = registration(&token_of(&link), &new_key(), None);
    assert_eq!(s.post_json("/api/devices", &body, "").await.status, 401);
    let fresh = registration(&token_of(&s.login_path()), &new_key(), None);
    assert_eq!(s.post_json("/api/devices", &fresh, "").await.status, 200);
}

#[tokio::test]
async fn a_revoked_device_waiting_for_a_request_slot_is_closed_at_once() {
    // No request slot ever frees up: the connection sits waiting for one.
    let limits = nucleic_server::ServerLimits { max_in_flight: 0, ..Default::default() };
    let s = start_with_limits(limits).await;
    let device = s.sign_in("busy").await;
    let mut socket = browser_ws(&s).await;
    assert_eq!(
        device_hello(&mut socket, device.proof(&s.challenge().await)).await["type"],
        "welcome"
    );
    send(&mut socket, json!({"type": "listProjects", "messageID": "stuck"})).await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    s.host.revoke_device(&device.id).await.unwrap();
    assert_eq!(close_code(&mut socket).await, Some(4401));
}

#[tokio::test]
async fn a_device_claiming_another_devices_client_id_never_gets_its_remembered_replies() {
    let s = start().await;
    let a = s.sign_in("phone a").await;
    let b = s.sign_in("phone b").await;
    let mut socket_a = browser_ws(&s).await;
    assert_eq!(device_hello(&mut socket_a, a.proof(&s.challenge().await)).await["type"], "welcome");
    let add = json!({"type": "intent", "messageID": "m1", "intent": {"kind": "addProject", "path": s.repo}});
    send(&mut socket_a, add.clone()).await;
    let first = recv(&mut socket_a).await;
    assert_eq!(first["type"], "ack", "{first}");
    // The same client id ("b1", as device_hello names every client) and message id from
    // another device: carried out as its own request, not answered from device a's memory.
    let mut socket_b = browser_ws(&s).await;
    assert_eq!(device_hello(&mut socket_b, b.proof(&s.challenge().await)).await["type"], "welcome");
    send(&mut socket_b, add.clone()).await;
    let second = recv(&mut socket_b).await;
    assert_eq!(second["type"], "error", "device b got device a's reply: {second}");
    assert!(second["message"].as_str().unwrap().contains("already"), "{second}");
    // Device a's own resend still gets its remembered reply.
    send(&mut socket_a, add).await;
    assert_eq!(recv(&mut socket_a).await, first);
}
