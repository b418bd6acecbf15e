//! Delivering one encrypted push message to a push service: an HTTP/1.1 `POST` to the
//! subscription's endpoint (TLS on rustls with the Mozilla roots for `https`), retried a bounded
//! number of times within a deadline when the service is down or busy, never when it says the
//! subscription is gone.

use std::time::{Duration, Instant};

use crate::PushError;

/// How hard to try one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries at most (the first included).
    pub attempts: u32,
    /// Wait before the second try; doubled before each later one.
    pub first_delay: Duration,
    /// One try's bound (connect, send, status line).
    pub attempt_timeout: Duration,
    /// No try starts after this much time since the first.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            attempts: 4,
            first_delay: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
        }
    }
}

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The service took it (2xx).
    Delivered,
    /// The subscription expired or was unsubscribed (404, 410): drop it, never retry.
    Gone,
    /// The service refused the message for good (another 4xx): not retried.
    Refused(u16),
    /// The service stayed down, busy or unreachable through every try: the last reason.
    GaveUp { tries: u32, last: String },
}

/// A message ready to send: the encrypted body and its headers.
#[derive(Debug, Clone)]
pub struct PushRequest {
    pub endpoint: String,
    /// `vapid t=…, k=…`.
    pub authorization: String,
    /// The encrypted body (`aes128gcm`).
    pub body: Vec<u8>,
    /// How long the service may hold it for an offline device (seconds).
    pub ttl_secs: u32,
}

/// How push services are reached: the TLS roots trusted for `https` endpoints
/// (`Transport::public()`, or a test's `Transport::with_roots`).
pub use nucleic_http::Client as Transport;

/// Sends `request`, retrying per `policy` on connection errors, 429 and 5xx.
pub async fn deliver(
    request: &PushRequest,
    policy: RetryPolicy,
    transport: &Transport,
) -> Delivery {
    let started = Instant::now();
    let mut delay = policy.first_delay;
    let mut tries = 0;
    let mut last = String::from("not tried");
    while tries < policy.attempts.max(1) {
        if tries > 0 {
            if started.elapsed() + delay >= policy.deadline {
                break;
            }
            tokio::time::sleep(delay).await;
            delay = delay.saturating_mul(2);
        }
        tries += 1;
        match tokio::time::timeout(policy.attempt_timeout, post(request, transport)).await {
            Ok(Ok(status)) => match status {
                200..=299 => return Delivery::Delivered,
                404 | 410 => return Delivery::Gone,
                429 | 500..=599 => last = format!("the push service answered {status}"),
                other => return Delivery::Refused(other),
            },
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => {
                last = format!(
                    "no answer from the push service within {} ms",
                    policy.attempt_timeout.as_millis()
                );
            }
        }
    }
    Delivery::GaveUp { tries, last }
}

/// One `POST`: the response's status code.
async fn post(request: &PushRequest, transport: &Transport) -> Result<u16, PushError> {
    let http = nucleic_http::Request::new(hyper::Method::POST, request.endpoint.clone())
        .header("authorization", request.authorization.clone())
        .header("content-encoding", "aes128gcm")
        .header("content-type", "application/octet-stream")
        .header("ttl", request.ttl_secs.to_string())
        .header("urgency", "high")
        .body(request.body.clone());
    match transport.send(&http, ONE_EXCHANGE, RESPONSE_LIMIT).await {
        Ok(response) => Ok(response.status),
        Err(nucleic_http::HttpError::BadUrl(_)) => {
            Err(PushError::BadEndpoint(request.endpoint.clone()))
        }
        Err(e) => Err(PushError::Unreachable(e.to_string())),
    }
}

/// One exchange's own bound (the caller's `attempt_timeout` is usually shorter).
const ONE_EXCHANGE: std::time::Duration = std::time::Duration::from_secs(60);
/// What a push service's answer body may be (it is not read for anything).
const RESPONSE_LIMIT: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn openssl(dir: &Path, args: &[&str]) {
        let out = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A test CA and a `localhost` certificate it signed (openssl CLI): `(ca, leaf, key)`.
    fn certificates(
        dir: &Path,
    ) -> (CertificateDer<'static>, CertificateDer<'static>, PrivateKeyDer<'static>) {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        openssl(
            dir,
            &[
                &["req", "-x509"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=test push CA", "-days", "1"],
            ]
            .concat(),
        );
        openssl(
            dir,
            &[
                &["req"][..],
                &ec,
                &["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "1",
                "-extfile",
                "ext",
            ],
        );
        (
            CertificateDer::from_pem_file(dir.join("ca.pem")).unwrap(),
            CertificateDer::from_pem_file(dir.join("leaf.pem")).unwrap(),
            PrivateKeyDer::from_pem_file(dir.join("leaf.key")).unwrap(),
        )
    }

    /// A TLS push service on loopback answering every request `201`; returns its port and the
    /// requests' heads.
    async fn tls_service(
        leaf: CertificateDer<'static>,
        key: PrivateKeyDer<'static>,
    ) -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log) = (acceptor.clone(), Arc::clone(&log));
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !String::from_utf8_lossy(&buf).contains("\r\n\r\n") {
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf)
                        .split("\r\n\r\n")
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    log.lock().unwrap().push(head);
                    let _ =
                        tls.write_all(b"HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n").await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        (port, seen)
    }

    fn request(endpoint: String) -> PushRequest {
        PushRequest {
            endpoint,
            authorization: "vapid t=x, k=y".into(),
            body: vec![1, 2, 3],
            ttl_secs: 60,
        }
    }

    const ONCE: RetryPolicy = RetryPolicy {
        attempts: 1,
        first_delay: Duration::from_millis(10),
        attempt_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(5),
    };

    #[tokio::test]
    async fn https_push_services_are_reached_over_tls_checked_against_the_trusted_roots() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, leaf, key) = certificates(dir.path());
        let (port, seen) = tls_service(leaf, key).await;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).unwrap();
        let trusted = Transport::with_roots(roots);
        let endpoint = format!("https://localhost:{port}/push/abc");
        assert_eq!(deliver(&request(endpoint.clone()), ONCE, &trusted).await, Delivery::Delivered);
        let head = seen.lock().unwrap()[0].clone();
        assert!(head.starts_with("POST /push/abc HTTP/1.1"), "{head}");
        assert!(head.contains("content-encoding: aes128gcm"), "{head}");
        // The public roots do not know the test CA: the certificate is refused, nothing sent.
        match deliver(&request(endpoint), ONCE, &Transport::public()).await {
            Delivery::GaveUp { tries: 1, last } => assert!(last.contains("TLS"), "{last}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(seen.lock().unwrap().len(), 1);
    }
}
