//! Dialling a relay (or a host's LAN listener): TCP, then TLS for `wss://` (rustls on ring, the
//! server checked against Mozilla's roots plus an optional extra CA for a self-hosted relay),
//! then the WebSocket upgrade. Plain `ws://` is accepted only for a loopback relay unless
//! explicitly allowed: a failed TLS check is an error, never a reason to try without TLS. The
//! host's relay connection (`nucleic-server`) and Rust devices (`nucleic-client`) both dial with it.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use tokio_tungstenite::tungstenite::http::Uri;

/// A refused relay setting.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    #[error("relay URL {0:?}: expected ws://, wss://, http:// or https:// and a host")]
    BadRelay(String),
    #[error(
        "relay URL {0:?} is plain ws:// to another machine: the room, frame sizes and timing would cross the network in the clear and anyone on the path could pose as the relay; use wss:// (or --allow-plain-relay to accept that)"
    )]
    PlainRelay(String),
    #[error("relay CA file {}: {why}", path.display())]
    RelayCa { path: std::path::PathBuf, why: String },
    #[error("cannot set up TLS for the relay: {0}")]
    Tls(String),
}

/// `http(s)://x` → `ws(s)://x`, trailing slashes dropped; anything else refused.
pub fn websocket_url(url: &str) -> Result<String, DialError> {
    let url = url.trim().trim_end_matches('/');
    let rest = ["ws://", "wss://", "http://", "https://"]
        .iter()
        .find_map(|p| url.strip_prefix(p).map(|r| (*p, r)));
    match rest {
        Some((scheme, host)) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            let scheme = match scheme {
                "http://" | "ws://" => "ws://",
                _ => "wss://",
            };
            Ok(format!("{scheme}{host}"))
        }
        _ => Err(DialError::BadRelay(url.to_owned())),
    }
}

/// The byte stream under the relay's WebSocket: plain TCP (loopback) or TLS over TCP.
#[derive(Debug)]
pub enum RelayStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for RelayStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RelayStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            RelayStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for RelayStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            RelayStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            RelayStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RelayStream::Plain(s) => Pin::new(s).poll_flush(cx),
            RelayStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RelayStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            RelayStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The relay's WebSocket, as dialled.
pub type RelaySocket = tokio_tungstenite::WebSocketStream<RelayStream>;

/// Where the relay is and how it is reached (checked once, when the daemon starts).
#[derive(Clone)]
pub struct Dialer {
    /// The host name or address (IPv6 without brackets).
    host: String,
    port: u16,
    /// `None` for a plain `ws://` relay.
    tls: Option<tokio_rustls::TlsConnector>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Whether `host` (as in a URL, IPv6 in brackets or not) is this machine's loopback.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Dialer {
    /// Checks the (normalised `ws://` / `wss://`) relay URL against the transport policy and
    /// builds the TLS client: `ws://` only to loopback unless `allow_plain`; `extra_ca` (a PEM
    /// file) is trusted besides Mozilla's roots, for `wss://` only.
    pub fn new(url: &str, extra_ca: Option<&Path>, allow_plain: bool) -> Result<Dialer, DialError> {
        let bad = || DialError::BadRelay(url.to_owned());
        let uri: Uri = url.parse().map_err(|_| bad())?;
        let tls = match uri.scheme_str() {
            Some("wss") => true,
            Some("ws") => false,
            _ => return Err(bad()),
        };
        let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(bad)?;
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        if !tls && !allow_plain && !is_loopback(host) {
            return Err(DialError::PlainRelay(url.to_owned()));
        }
        let tls = match (tls, extra_ca) {
            (true, ca) => {
                let mut roots =
                    rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
                if let Some(path) = ca {
                    for cert in read_ca(path)? {
                        roots.add(cert).map_err(|e| DialError::RelayCa {
                            path: path.to_owned(),
                            why: format!("not a usable CA certificate: {e}"),
                        })?;
                    }
                }
                Some(connector(roots)?)
            }
            (false, Some(path)) => {
                return Err(DialError::RelayCa {
                    path: path.to_owned(),
                    why: format!("a CA applies to a wss:// relay only, and {url} is plain ws://"),
                });
            }
            (false, None) => None,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        Ok(Dialer { host, port, tls })
    }

    /// Opens the WebSocket at `url` (a path under the relay's URL): TCP, TLS, upgrade. The
    /// error says which step failed and why (a refused certificate names its fault).
    pub async fn connect(&self, url: &str) -> Result<RelaySocket, String> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("cannot reach the relay at {url}: {e}"))?;
        // Frames are small and latency-bound (agent output to a phone).
        let _ = tcp.set_nodelay(true);
        let stream = match &self.tls {
            None => RelayStream::Plain(tcp),
            Some(connector) => {
                let name = ServerName::try_from(self.host.clone())
                    .map_err(|e| format!("TLS: {:?} is not a valid server name: {e}", self.host))?;
                let tls = connector.connect(name, tcp).await.map_err(|e| {
                    format!("TLS with the relay at {url} failed: {}", tls_reason(&e, &self.host))
                })?;
                RelayStream::Tls(Box::new(tls))
            }
        };
        let (socket, _) = tokio_tungstenite::client_async(url, stream)
            .await
            .map_err(|e| format!("the relay at {url} refused the WebSocket upgrade: {e}"))?;
        Ok(socket)
    }
}

/// The certificates of a PEM file: at least one, or why not.
fn read_ca(path: &Path) -> Result<Vec<CertificateDer<'static>>, DialError> {
    let err = |why: String| DialError::RelayCa { path: path.to_owned(), why };
    let pem = std::fs::read(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(err("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_owned()));
    }
    Ok(certs)
}

/// A TLS client on ring (the provider the push crate uses: no aws-lc, no OpenSSL) trusting
/// `roots`, speaking HTTP/1.1 for the upgrade.
fn connector(roots: rustls::RootCertStore) -> Result<tokio_rustls::TlsConnector, DialError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DialError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A TLS handshake failure in words, with what to do about a refused certificate.
fn tls_reason(e: &io::Error, host: &str) -> String {
    use rustls::CertificateError as C;
    let Some(rustls::Error::InvalidCertificate(cert)) =
        e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return e.to_string();
    };
    match cert {
        C::NotValidForName | C::NotValidForNameContext { .. } => format!(
            "the relay's certificate is not valid for {host:?} ({cert}); refusing it (no plaintext fallback)"
        ),
        C::UnknownIssuer => format!(
            "the relay's certificate is not signed by a trusted CA ({cert}); refusing it (no plaintext fallback). A self-hosted relay's CA goes in --relay-ca FILE"
        ),
        other => format!(
            "the relay's certificate was refused: {other}; refusing it (no plaintext fallback)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_urls_are_normalised_or_refused() {
        assert_eq!(websocket_url("http://127.0.0.1:8787/").unwrap(), "ws://127.0.0.1:8787");
        assert_eq!(websocket_url("https://relay.example").unwrap(), "wss://relay.example");
        assert_eq!(websocket_url("wss://r.example/x").unwrap(), "wss://r.example/x");
        assert!(websocket_url("relay.example").is_err());
        assert!(websocket_url("ftp://x").is_err());
        assert!(websocket_url("ws://").is_err());
    }

    #[test]
    fn plain_relays_only_on_loopback_unless_allowed() {
        for ok in [
            "ws://127.0.0.1:8787",
            "ws://127.3.4.5",
            "ws://[::1]:9",
            "ws://localhost:1",
            "ws://a.localhost",
        ] {
            assert!(Dialer::new(ok, None, false).is_ok(), "{ok}");
        }
        for refused in [
            "ws://relay.example",
            "ws://10.0.0.2:8787",
            "ws://[fe80::1]:1",
            "ws://localhost.evil.example",
        ] {
            match Dialer::new(refused, None, false) {
                Err(DialError::PlainRelay(u)) => assert_eq!(u, refused),
                other => panic!("{refused}: {other:?}"),
            }
            assert!(Dialer::new(refused, None, true).is_ok(), "{refused} with the opt-in");
        }
        assert!(Dialer::new("wss://relay.example", None, false).is_ok());
        let d = Dialer::new("wss://[::1]:8443/base", None, false).unwrap();
        assert_eq!((d.host.as_str(), d.port, d.tls.is_some()), ("::1", 8443, true));
        assert_eq!(Dialer::new("wss://relay.example", None, false).unwrap().port, 443);
        assert!(matches!(Dialer::new("ftp://x", None, false), Err(DialError::BadRelay(_))));
    }

    #[test]
    fn an_extra_ca_must_be_a_readable_pem_certificate_for_a_wss_relay() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let err = Dialer::new("wss://r.example", Some(&missing), false).unwrap_err().to_string();
        assert!(err.contains("missing.pem") && err.contains("cannot read"), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let err = Dialer::new("wss://r.example", Some(&empty), false).unwrap_err().to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
            .unwrap();
        let err = Dialer::new("wss://r.example", Some(&junk), false).unwrap_err().to_string();
        assert!(err.contains("junk.pem"), "{err}");
        let err = Dialer::new("ws://127.0.0.1:1", Some(&junk), false).unwrap_err().to_string();
        assert!(err.contains("wss:// relay only"), "{err}");
    }

    /// `openssl req -x509` in `dir`: `name`.pem and `name`.key, self-signed or signed by `ca`.
    fn cert(dir: &Path, name: &str, subject_alt: &str, ca: Option<&str>) {
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        let san = format!("subjectAltName={subject_alt}");
        let mut args = vec!["req", "-x509", "-newkey", "ec", "-pkeyopt"];
        let subject = format!("/CN=nucleic test {name}");
        args.extend(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", &subject]);
        args.extend(["-keyout", &key, "-out", &pem, "-addext", &san]);
        let (ca_pem, ca_key) = ca.map(|c| (format!("{c}.pem"), format!("{c}.key"))).unzip();
        if let (Some(p), Some(k)) = (&ca_pem, &ca_key) {
            args.extend(["-CA", p, "-CAkey", k, "-addext", "basicConstraints=CA:FALSE"]);
        }
        let out =
            std::process::Command::new("openssl").args(&args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A WebSocket server over TLS on loopback serving `name`'s certificate; its port.
    async fn wss_server(dir: &Path, name: &str) -> u16 {
        use rustls::pki_types::PrivateKeyDer;
        let chain = CertificateDer::pem_file_iter(dir.join(format!("{name}.pem")))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let _ = tokio_tungstenite::accept_async(tls).await;
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn wss_relays_are_checked_against_the_roots_and_the_name_with_no_plaintext_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        cert(d, "ca", "DNS:unused.example", None);
        cert(d, "good", "DNS:localhost", Some("ca"));
        cert(d, "other", "DNS:other.example", Some("ca"));
        cert(d, "rogue-ca", "DNS:unused.example", None);
        cert(d, "rogue", "DNS:localhost", Some("rogue-ca"));
        let ca = d.join("ca.pem");
        let dial = |port: u16, ca: Option<&Path>| {
            let url = format!("wss://localhost:{port}");
            let dialer = Dialer::new(&url, ca, false).unwrap();
            async move { dialer.connect(&format!("{url}/v1/rooms/x/host")).await.map(|_| ()) }
        };
        // The test CA and the right name: the WebSocket opens.
        dial(wss_server(d, "good").await, Some(&ca)).await.unwrap();
        // The same server without the extra CA (Mozilla's roots only): refused.
        let err = dial(wss_server(d, "good").await, None).await.unwrap_err();
        assert!(err.contains("not signed by a trusted CA") && err.contains("--relay-ca"), "{err}");
        // A trusted CA's certificate for another name: refused.
        let err = dial(wss_server(d, "other").await, Some(&ca)).await.unwrap_err();
        assert!(err.contains("not valid for \"localhost\""), "{err}");
        // Another CA's certificate for the right name: refused.
        let err = dial(wss_server(d, "rogue").await, Some(&ca)).await.unwrap_err();
        assert!(err.contains("not signed by a trusted CA"), "{err}");
        assert!(err.contains("no plaintext fallback"), "{err}");
    }
}
