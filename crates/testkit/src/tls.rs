//! TLS for the mocks that speak it: a self-signed certificate made with the `openssl` CLI, the
//! rustls acceptor for it, and a listener that hands axum only connections whose handshake
//! completed.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// `openssl req -x509` (P-256, one day) for `names` (`subjectAltName` entries: `IP:127.0.0.1`,
/// `DNS:docs.test`), the first one's value as the common name.
pub fn self_signed(cert: &Path, key: &Path, names: &[&str]) -> io::Result<()> {
    let common = names.first().and_then(|n| n.split_once(':')).map_or("mock", |(_, v)| v);
    let output = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
        .args(["-nodes", "-days", "1", "-subj", &format!("/CN={common}")])
        .args(["-addext", &format!("subjectAltName={}", names.join(","))])
        .arg("-keyout")
        .arg(key)
        .arg("-out")
        .arg(cert)
        .output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "openssl req failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// A rustls acceptor serving the PEM certificate `cert` with its key `key`.
pub fn acceptor(cert: &Path, key: &Path) -> io::Result<TlsAcceptor> {
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(io::Error::other)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io::Error::other)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(io::Error::other)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(io::Error::other)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accepts TCP connections and completes their TLS handshake (5 s each at most).
#[allow(missing_debug_implementations)] // rustls' acceptor has none
pub struct TlsListener {
    pub tcp: TcpListener,
    pub acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let handshake = self.acceptor.accept(tcp);
            if let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(5), handshake).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
