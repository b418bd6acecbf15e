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

/// The `nucleic_session=…` pair of a `Set-Cookie` header in `head`.
pub fn session_cookie(head: &str) -> String {
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no Set-Cookie in {head}"));
    let value = line.split_once(':').unwrap().1.trim();
    value.split(';').next().unwrap().to_owned()
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
async fn nucleic_open_prints_a_one_time_sign_in_link_of_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _stop = StopDaemon(home.clone());
    let url = open(&home).await;
    {
        assert!(url.starts_with("http://127.0.0.1:") && url.contains("/login?token="), "{url}");
        let (status, head, _) = get(&url, "").await;
        assert_eq!(status, 303, "{head}");
        let cookie = session_cookie(&head);
        let base = url.split("/login").next().unwrap();
        let (status, _, body) =
            get(&format!("{base}/api/session"), &format!("Cookie: {cookie}\r\n")).await;
        assert_eq!((status, body.as_str()), (200, r#"{"signedIn":true}"#));
        let (again, _, page) = get(&url, "").await;
        assert_eq!(again, 401);
        assert!(page.contains("nucleic open"), "{page}");
        // A second `open` talks to the same daemon and mints a new link.
        let second = open(&home).await;
        assert_ne!(second, url);
        assert!(second.starts_with(base), "{second} vs {base}");
        assert_eq!(get(&second, "").await.0, 303);
    }
}
