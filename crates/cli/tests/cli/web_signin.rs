//! `nucleic open` against an auto-started daemon: a one-time sign-in link for the web app.

use std::path::Path;

use crate::support::nucleic;

/// `GET url` on loopback; returns (status, headers block, body).
pub async fn get(url: &str, extra: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut s = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n{extra}Connection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

/// `POST url` with a JSON body on loopback; returns (status, body).
pub async fn post_json(url: &str, body: &serde_json::Value) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = body.to_string();
    let mut s = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), body.to_owned())
}

/// Registers a new P-256 device key with the one-time link `url`, as the web app does.
pub async fn register_device(url: &str, name: &str) -> (u16, String) {
    use base64::Engine;
    let key = loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).unwrap();
        if let Ok(key) = p256::ecdsa::SigningKey::from_slice(&bytes) {
            break key;
        }
    };
    // SubjectPublicKeyInfo of an uncompressed P-256 point: the fixed DER header, then 04‖X‖Y.
    let mut der = vec![
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    der.extend_from_slice(key.verifying_key().to_encoded_point(false).as_bytes());
    let (base, token) = url.split_once("/login?token=").unwrap();
    let body = serde_json::json!({
        "token": token,
        "publicKey": base64::engine::general_purpose::STANDARD.encode(&der),
        "name": name,
    });
    post_json(&format!("{base}/api/devices"), &body).await
}

async fn cli(home: &Path, args: &[&str]) -> String {
    let out = tokio::process::Command::new(nucleic())
        .args(args)
        .env("NUCLEIC_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn open(home: &Path) -> String {
    let out = tokio::process::Command::new(nucleic())
        .arg("open")
        .env("NUCLEIC_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Stops the daemon of a home when dropped (also when the test fails).
struct StopDaemon(std::path::PathBuf);

impl Drop for StopDaemon {
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(self.0.join("daemon.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(pid) = v["pid"].as_i64().and_then(|p| i32::try_from(p).ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn nucleic_open_signs_a_device_in_once_and_the_cli_lists_revokes_and_rotates() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _stop = StopDaemon(home.clone());
    let url = open(&home).await;
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("/login?token="), "{url}");
    // The link is the app's page (no cookie), and registers one device key, once.
    let (status, head, _) = get(&url, "").await;
    assert_eq!(status, 200, "{head}");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "{head}");
    let (status, body) = register_device(&url, "laptop").await;
    assert_eq!(status, 200, "{body}");
    let device: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = device["deviceID"].as_str().unwrap().to_owned();
    let (again, body) = register_device(&url, "laptop").await;
    assert_eq!(again, 401, "{body}");
    assert!(body.contains("nucleic open"), "{body}");
    // A second `open` talks to the same daemon and mints a new link.
    let second = open(&home).await;
    assert_ne!(second, url);
    assert_eq!(register_device(&second, "phone").await.0, 200);
    let list = cli(&home, &["device", "list"]).await;
    assert!(list.contains(&id) && list.contains("laptop") && list.contains("phone"), "{list}");
    assert!(!list.contains("revoked"), "{list}");
    let revoked = cli(&home, &["device", "revoke", &id]).await;
    assert!(revoked.contains(&id), "{revoked}");
    let list = cli(&home, &["device", "list"]).await;
    let laptop = list.lines().find(|l| l.contains("laptop")).unwrap();
    assert!(laptop.contains("revoked"), "{list}");
    // Rotating: a new token file, every device out, and the CLI keeps working with the new one.
    let before = std::fs::read_to_string(home.join("token")).unwrap();
    let rotated = cli(&home, &["token", "rotate"]).await;
    assert!(rotated.contains("1 device(s) signed out"), "{rotated}");
    assert_ne!(std::fs::read_to_string(home.join("token")).unwrap(), before);
    let list = cli(&home, &["device", "list"]).await;
    assert_eq!(list.lines().filter(|l| l.contains("revoked")).count(), 2, "{list}");
}
