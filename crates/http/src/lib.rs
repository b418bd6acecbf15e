//! A small HTTP/1.1 client for the services the host talks to (push services, chat services):
//! one request on a fresh connection (TLS on rustls, the Mozilla roots compiled in, or a test's
//! own), the whole exchange under one deadline that says what timed out, the response body
//! read up to a cap.
//!
//! [`dial`]: a WebSocket to a relay or a host's LAN listener (TCP, TLS for `wss://`, the
//! upgrade), for the host's relay connection and for Rust devices alike.

pub mod dial;

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use thiserror::Error;

pub use hyper::Method;

/// Why a request got no response.
#[derive(Debug, Error)]
pub enum HttpError {
    #[error("not an http(s) URL: {0}")]
    BadUrl(String),
    #[error("cannot connect to {address}: {source}")]
    Connect { address: String, source: std::io::Error },
    #[error("TLS with {address}: {source}")]
    Tls { address: String, source: std::io::Error },
    #[error("{address}: {what}")]
    Protocol { address: String, what: String },
    #[error("{address}: no response within {} ms", .after.as_millis())]
    Timeout { address: String, after: Duration },
    #[error("{address}: the response body is over {limit} bytes")]
    TooLarge { address: String, limit: usize },
}

/// A request: method, absolute URL, headers, body.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: hyper::Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn new(method: hyper::Method, url: impl Into<String>) -> Request {
        Request { method, url: url.into(), headers: Vec::new(), body: Vec::new() }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }
}

/// A response: status, headers (lower-case names), body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The default cap on a response body.
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;

/// A client: the TLS roots it trusts for `https`.
#[derive(Clone)]
pub struct Client {
    tls: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// The public Web PKI (Mozilla's roots, compiled in).
    pub fn public() -> Client {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        Client::with_roots(roots)
    }

    /// Trusting only `roots` (tests with their own certificate authority).
    pub fn with_roots(roots: rustls::RootCertStore) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = match rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
        {
            Ok(builder) => builder.with_root_certificates(roots).with_no_client_auth(),
            // The ring provider supports the default versions; this cannot fail in practice.
            Err(_) => {
                rustls::ClientConfig::builder_with_protocol_versions(&[&rustls::version::TLS13])
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            }
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Client { tls: tokio_rustls::TlsConnector::from(Arc::new(config)) }
    }

    /// Sends `request` and reads its response (body up to `body_limit`), all within `deadline`.
    pub async fn send(
        &self,
        request: &Request,
        deadline: Duration,
        body_limit: usize,
    ) -> Result<Response, HttpError> {
        let target = Target::parse(&request.url)?;
        let address = target.address();
        match tokio::time::timeout(deadline, self.exchange(request, &target, body_limit)).await {
            Ok(result) => result,
            Err(_) => Err(HttpError::Timeout { address, after: deadline }),
        }
    }

    async fn exchange(
        &self,
        request: &Request,
        target: &Target,
        body_limit: usize,
    ) -> Result<Response, HttpError> {
        let address = target.address();
        let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|source| HttpError::Connect { address: address.clone(), source })?;
        let mut builder = hyper::Request::builder()
            .method(request.method.clone())
            .uri(&target.path)
            .header("host", &target.authority);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let http = builder
            .body(Full::new(Bytes::from(request.body.clone())))
            .map_err(|e| HttpError::BadUrl(format!("{}: {e}", request.url)))?;
        if target.tls {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|_| HttpError::BadUrl(request.url.clone()))?;
            let stream = self
                .tls
                .connect(name, stream)
                .await
                .map_err(|source| HttpError::Tls { address: address.clone(), source })?;
            exchange_on(TokioIo::new(stream), http, &address, body_limit).await
        } else {
            exchange_on(TokioIo::new(stream), http, &address, body_limit).await
        }
    }
}

/// One request over an open connection, its response read whole.
async fn exchange_on<T>(
    io: T,
    http: hyper::Request<Full<Bytes>>,
    address: &str,
    body_limit: usize,
) -> Result<Response, HttpError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let protocol = |what: String| HttpError::Protocol { address: address.to_owned(), what };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| protocol(format!("HTTP handshake: {e}")))?;
    let driver = tokio::spawn(connection);
    let result = async {
        let response =
            sender.send_request(http).await.map_err(|e| protocol(format!("sending: {e}")))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned())
            })
            .collect();
        let declared = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > body_limit) {
            return Err(HttpError::TooLarge { address: address.to_owned(), limit: body_limit });
        }
        let body = Limited::new(response.into_body(), body_limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                    HttpError::TooLarge { address: address.to_owned(), limit: body_limit }
                } else {
                    protocol(format!("reading the body: {e}"))
                }
            })?
            .to_bytes()
            .to_vec();
        Ok(Response { status, headers, body })
    }
    .await;
    driver.abort();
    result
}

/// Where a URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    tls: bool,
    authority: String,
    host: String,
    port: u16,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, HttpError> {
        let bad = || HttpError::BadUrl(url.to_owned());
        let (tls, rest) = match url.split_once("://") {
            Some(("http", rest)) => (false, rest),
            Some(("https", rest)) => (true, rest),
            _ => return Err(bad()),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = host_and_port(authority, tls).ok_or_else(bad)?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Target { tls, authority: authority.to_owned(), host, port, path: path.to_owned() })
    }

    fn address(&self) -> String {
        format!("{} (port {})", self.authority, self.port)
    }
}

/// The host and port of a URL's authority (`[v6]:port`, `name:port`, or the scheme's port).
fn host_and_port(authority: &str, tls: bool) -> Option<(String, u16)> {
    let default = if tls { 443 } else { 80 };
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, p)) => Some((host.to_owned(), p.parse().ok()?)),
        None => Some((authority.to_owned(), default)),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[test]
    fn urls_are_parsed_or_refused() {
        let t = Target::parse("https://api.telegram.org/bot1:x/getMe").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (true, "api.telegram.org", 443, "/bot1:x/getMe")
        );
        let t = Target::parse("http://[::1]:8008").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 8008, "/"));
        for bad in ["ftp://x/", "x", "http://:80/", "http://h:port/"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(host_and_port("push.example", true), Some(("push.example".into(), 443)));
        assert_eq!(host_and_port("push.example", false), Some(("push.example".into(), 80)));
        assert_eq!(host_and_port("127.0.0.1:8080", false), Some(("127.0.0.1".into(), 8080)));
        assert_eq!(host_and_port("[::1]:9", true), Some(("::1".into(), 9)));
        assert_eq!(host_and_port("[::1]", true), Some(("::1".into(), 443)));
        assert_eq!(host_and_port("h:port", true), None);
        assert_eq!(host_and_port("[::1]x", true), None);
    }

    /// A server on loopback that answers every connection with `reply` (or stays silent).
    async fn server(reply: Option<&'static [u8]>) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    match reply {
                        Some(reply) => {
                            let _ = s.write_all(reply).await;
                        }
                        None => tokio::time::sleep(Duration::from_secs(30)).await,
                    }
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn a_response_is_read_and_a_silent_server_times_out_saying_so() {
        let client = Client::public();
        let port =
            server(Some(b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\nno"))
                .await;
        let request =
            Request::new(hyper::Method::POST, format!("http://127.0.0.1:{port}/x")).body("{}");
        let response = client.send(&request, Duration::from_secs(5), 1024).await.unwrap();
        assert_eq!((response.status, response.body.as_slice()), (429, &b"no"[..]));
        assert_eq!(response.header("retry-after"), Some("3"));

        let silent = server(None).await;
        let request = Request::new(hyper::Method::GET, format!("http://127.0.0.1:{silent}/"));
        let e = client.send(&request, Duration::from_millis(300), 1024).await.unwrap_err();
        assert!(e.to_string().contains("no response within 300 ms"), "{e}");
    }

    #[tokio::test]
    async fn a_body_over_the_cap_is_refused() {
        let client = Client::public();
        // Declared too long, and (chunked, no length) sent too long.
        let declared = server(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 2048\r\n\r\n")).await;
        let chunked: &'static [u8] = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n{}\r\n0\r\n\r\n",
                "x".repeat(2048)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let sent = server(Some(chunked)).await;
        for port in [declared, sent] {
            let request = Request::new(hyper::Method::GET, format!("http://127.0.0.1:{port}/"));
            let e = client.send(&request, Duration::from_secs(5), 1024).await.unwrap_err();
            assert!(matches!(e, HttpError::TooLarge { limit: 1024, .. }), "{e}");
        }
    }
}
