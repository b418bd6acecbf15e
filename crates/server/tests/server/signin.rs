//! Browser sign-in: one-time login links, the session cookie (flags, restarts), `/api/session`,
//! `/api/login-link`, and the cookie on the API and the WebSocket (same origin only).

use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::*;

const INVALID: &str = "This sign-in link is invalid, expired or already used. Run <code>nucleic open</code> for a new one.";

#[tokio::test]
async fn a_login_link_signs_in_once_with_a_strict_http_only_cookie() {
    let s = start().await;
    let link = s.login_path();
    assert!(link.starts_with("/login?token="), "{link}");
    assert_eq!(link.len(), "/login?token=".len() + 64, "256 bits, hex");
    let first = s.get(&link, "User-Agent: test-browser/1\r\n").await;
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/"));
    let cookie = first.header("set-cookie").unwrap();
    let attrs: Vec<&str> = cookie.split(';').map(str::trim).collect();
    assert!(attrs[0].starts_with("nucleic_session=") && attrs[0].len() == 16 + 64, "{cookie}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(attrs.contains(&flag), "{flag} missing in {cookie}");
    }
    assert!(!attrs.iter().any(|a| a.eq_ignore_ascii_case("secure")), "plain http on loopback");
    // The same link again: refused with a page that says what to do.
    let again = s.get(&link, "").await;
    assert_eq!(again.status, 401);
    assert!(again.header("content-type").unwrap().starts_with("text/html"));
    assert!(again.text().contains(INVALID), "{}", again.text());
    assert!(again.header("set-cookie").is_none());
    // Wrong and missing tokens.
    for bad in [
        "/login?token=nope",
        &format!("/login?token={}", "0".repeat(64)),
        "/login",
        "/login?token=",
    ] {
        let reply = s.get(bad, "").await;
        assert_eq!(reply.status, 401, "{bad}");
        assert!(reply.text().contains(INVALID));
    }
    // The catalog keeps a hash of the secret, never the secret.
    let secret = attrs[0].strip_prefix("nucleic_session=").unwrap();
    let home = s.dir.path().join("home");
    for file in ["catalog.sqlite", "catalog.sqlite-wal"] {
        let bytes = std::fs::read(home.join(file)).unwrap_or_default();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{file}");
    }
    let devices = s.host.list_devices().await.unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0].name, "browser (test-browser/1)");
}

#[tokio::test]
async fn api_session_says_whether_the_request_is_signed_in() {
    let s = start().await;
    let none = s.get("/api/session", "").await;
    assert_eq!((none.status, none.json()), (401, json!({"signedIn": false})));
    let bogus =
        s.get("/api/session", &format!("Cookie: nucleic_session={}\r\n", "a".repeat(64))).await;
    assert_eq!(bogus.status, 401);
    let cookie = s.sign_in().await;
    let yes = s.get("/api/session", &format!("Cookie: theme=dark; {cookie}\r\n")).await;
    assert_eq!((yes.status, yes.json()), (200, json!({"signedIn": true})));
    let bearer = s.get("/api/session", &format!("Authorization: Bearer {}\r\n", s.token)).await;
    assert_eq!(bearer.status, 200);
    // The cookie opens the API too; without it the API refuses.
    assert_eq!(s.get("/api/health", &format!("Cookie: {cookie}\r\n")).await.status, 200);
    assert_eq!(s.get("/api/health", "").await.status, 401);
    // The Host check still applies to signed-in requests.
    let rebinding = request(
        s.addr,
        format!("GET /api/session HTTP/1.1\r\nHost: evil.example\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(rebinding.status, 403);
}

#[tokio::test]
async fn a_browser_stays_signed_in_across_a_host_restart() {
    let s = start().await;
    let cookie = s.sign_in().await;
    let link = s.login_path();
    let s = s.restart().await;
    let reply = s.get("/api/session", &format!("Cookie: {cookie}\r\n")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // Unused login links do not survive a restart (they live in memory only).
    assert_eq!(s.get(&link, "").await.status, 401);
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
    let path = url.strip_prefix(&format!("http://{host}")).unwrap();
    assert_eq!(s.get(path, "").await.status, 303);
    assert_eq!(s.get(path, "").await.status, 401);
}

#[tokio::test]
async fn the_websocket_takes_the_cookie_from_its_own_origin_only() {
    let s = start().await;
    let cookie = s.sign_in().await;
    let url = format!("ws://127.0.0.1:{}/ws", s.addr.port());
    let with = |origin: &str, cookie: &str| {
        let mut r = url.as_str().into_client_request().unwrap();
        r.headers_mut().insert("cookie", cookie.parse().unwrap());
        r.headers_mut().insert("origin", origin.parse().unwrap());
        r
    };
    let same = format!("http://127.0.0.1:{}", s.addr.port());
    let (mut socket, _) = tokio_tungstenite::connect_async(with(&same, &cookie)).await.unwrap();
    hello(&mut socket).await;
    send(&mut socket, json!({"type": "listProjects", "messageID": "p"})).await;
    assert_eq!(recv(&mut socket).await["type"], "projects");
    for (origin, cookie, status) in [
        ("http://evil.example", cookie.as_str(), 403),
        (&format!("http://localhost:{}", s.addr.port() + 1), cookie.as_str(), 403),
        (same.as_str(), "nucleic_session=forged", 401),
        (same.as_str(), "other=1", 401),
    ] {
        match tokio_tungstenite::connect_async(with(origin, cookie)).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), status, "{origin} {cookie}");
            }
            other => panic!("{origin} {cookie}: expected a refusal, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_expired_login_link_is_refused() {
    let s = start_with_login_ttl(std::time::Duration::from_millis(200)).await;
    let link = s.login_path();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reply = s.get(&link, "").await;
    assert_eq!(reply.status, 401);
    assert!(reply.text().contains(INVALID));
    // A fresh one, used in time, works.
    assert_eq!(s.get(&s.login_path(), "").await.status, 303);
}
