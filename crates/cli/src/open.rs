//! `nucleic open`: a one-time sign-in link for a browser, minted by the running daemon (started
//! if needed) through `POST /api/login-link`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Prints a fresh sign-in URL of the daemon of `home` on stdout.
pub async fn open(home: &Path) -> anyhow::Result<ExitCode> {
    let port = crate::daemon::connect(home).await?.port();
    let token =
        std::fs::read_to_string(home.join(nucleic_server::TOKEN_FILE)).context("no token file")?;
    let url = mint(port, token.trim()).await?;
    eprintln!(
        "nucleic: open this link in a browser on this machine (it works once, for 10 minutes):"
    );
    println!("{url}");
    Ok(ExitCode::SUCCESS)
}

/// `POST /api/login-link` on the loopback port; returns the URL.
pub async fn mint(port: u16, token: &str) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot reach the daemon on port {port}"))?;
    let request = format!(
        "POST /api/login-link HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        bail!("the daemon refused to mint a sign-in link ({status}): {}", body.trim());
    }
    let value: serde_json::Value =
        serde_json::from_str(body).context("the daemon's reply is not JSON")?;
    match value.get("url").and_then(serde_json::Value::as_str) {
        Some(url) => Ok(url.to_owned()),
        None => bail!("the daemon's reply has no url: {body}"),
    }
}
