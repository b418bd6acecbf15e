//! A web site over TLS, for egress tests: serves a short page at every path and records each
//! request's line and `Host` (what reached "the outside"). Its certificate is self-signed for the
//! names it is started with ([`MockWeb::ca_file`]: trust it with `NODE_EXTRA_CA_CERTS` or
//! `SSL_CERT_FILE`).

use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::tls::{TlsListener, acceptor, self_signed};

/// The page every path serves.
pub const PAGE: &str = "<html><body><p>The guide says: MOCK-WEB-PAGE.</p></body></html>";

/// The running site; stopped when dropped.
#[derive(Debug)]
pub struct MockWeb {
    port: u16,
    heard: Arc<Mutex<Vec<String>>>,
    ca_file: PathBuf,
    task: JoinHandle<()>,
}

impl Drop for MockWeb {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockWeb {
    /// Serves on `ip` (a free port) with a certificate for `names`, made in `dir`.
    pub async fn start(dir: &Path, ip: IpAddr, names: &[&str]) -> io::Result<MockWeb> {
        let (cert, key) = (dir.join("mock-web-cert.pem"), dir.join("mock-web-key.pem"));
        let alt: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
        let alt: Vec<&str> = alt.iter().map(String::as_str).collect();
        self_signed(&cert, &key, &alt)?;
        let acceptor = acceptor(&cert, &key)?;
        let tcp = TcpListener::bind((ip, 0)).await?;
        let port = tcp.local_addr()?.port();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().fallback(page).with_state(heard.clone());
        let listener = TlsListener { tcp, acceptor };
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockWeb { port, heard, ca_file: cert, task })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The certificate to trust.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The requests so far whose line or `Host` contains `needle`: `GET /guide docs.test:443`.
    pub fn heard(&self, needle: &str) -> Vec<String> {
        let heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        heard.iter().filter(|h| h.contains(needle)).cloned().collect()
    }
}

async fn page(
    State(heard): State<Arc<Mutex<Vec<String>>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> axum::response::Html<&'static str> {
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default();
    let line = format!("{method} {} {host}", uri.path());
    heard.lock().unwrap_or_else(PoisonError::into_inner).push(line);
    axum::response::Html(PAGE)
}
