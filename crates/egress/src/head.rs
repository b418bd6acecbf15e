//! A proxy request's head: read up to its blank line within size and count bounds, then parsed
//! into what it asks for (a CONNECT tunnel or a plain-HTTP request in absolute form).

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::allow::Destination;

/// The most a request head may take.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header lines a request head may have.
pub const MAX_HEADERS: usize = 100;

/// Why a head was not accepted, with the status the client is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// 431: over [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`].
    TooLarge(String),
    /// 400: not an HTTP proxy request this proxy understands.
    Malformed(String),
    /// The client closed (or failed) before the head was complete: nothing to answer.
    Closed,
}

impl HeadError {
    /// The status line and reason to answer with, if any.
    pub fn status(&self) -> Option<(&'static str, &str)> {
        match self {
            HeadError::TooLarge(why) => Some(("431 Request Header Fields Too Large", why)),
            HeadError::Malformed(why) => Some(("400 Bad Request", why)),
            HeadError::Closed => None,
        }
    }
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub dest: Destination,
    /// For plain HTTP: the head to send upstream (origin form, `Connection: close`, no
    /// `Proxy-*` headers). Empty for CONNECT.
    pub upstream_head: Vec<u8>,
}

impl Request {
    /// Whether it asks for a tunnel.
    pub fn is_connect(&self) -> bool {
        self.method == "CONNECT"
    }
}

/// Reads a head from `reader`: its bytes up to and including the blank line, and whatever came
/// after it in the same reads (the start of a body or of tunnelled bytes).
pub async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = reader.read(&mut chunk).await.map_err(|_| HeadError::Closed)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_blank_line(&buf[searched_from..]).map(|i| i + searched_from) {
            if end > MAX_HEAD_BYTES {
                return Err(too_large());
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(too_large());
        }
    }
}

fn too_large() -> HeadError {
    HeadError::TooLarge(format!("the request head is over {MAX_HEAD_BYTES} bytes"))
}

/// The end (exclusive) of the first `\r\n\r\n` in `bytes`.
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Refuses a header line that could be read two ways: folded, without a name, a name with
/// spaces, or a bare CR, LF or NUL inside.
fn check_header(line: &str) -> Result<(), HeadError> {
    let bad = |why: &str| Err(HeadError::Malformed(format!("{why}: {line:.80}")));
    let Some((name, value)) = line.split_once(':') else {
        return bad("a header line without a colon");
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return bad("a header name that is empty or has spaces");
    }
    if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return bad("a control character in a header value");
    }
    Ok(())
}

/// Parses a head read by [`read_head`].
pub fn parse(head: &[u8]) -> Result<Request, HeadError> {
    let text = std::str::from_utf8(head)
        .map_err(|_| HeadError::Malformed("the request head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if !m.is_empty() && !t.is_empty() => (m, t, v),
        _ => return Err(HeadError::Malformed(format!("not a request line: {request_line:.80}"))),
    };
    if !version.starts_with("HTTP/1.") || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(HeadError::Malformed(format!("not an HTTP/1 request: {request_line:.80}")));
    }
    if request_line.bytes().any(|b| b.is_ascii_control()) {
        return Err(HeadError::Malformed("a control character in the request line".into()));
    }
    let headers: Vec<&str> = lines.take_while(|l| !l.is_empty()).collect();
    if headers.len() > MAX_HEADERS {
        return Err(HeadError::TooLarge(format!("more than {MAX_HEADERS} header lines")));
    }
    for header in &headers {
        check_header(header)?;
    }
    let malformed = |e: crate::EgressError| HeadError::Malformed(e.to_string());
    if method == "CONNECT" {
        let dest = Destination::parse(target, None).map_err(malformed)?;
        return Ok(Request { method: method.to_owned(), dest, upstream_head: Vec::new() });
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return Err(HeadError::Malformed(format!(
            "{method} {target:.80}: only CONNECT and plain HTTP in absolute form (http://…) are proxied"
        )));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let dest = Destination::parse(authority, Some(80)).map_err(malformed)?;
    let path = if path.starts_with('?') { format!("/{path}") } else { path.to_owned() };
    // The upstream is told the authority it was reached by, whatever `Host` the client sent
    // (RFC 9112 §3.2.2): one server, one name.
    let host = match dest.port {
        80 => dest.to_string().trim_end_matches(":80").to_owned(),
        _ => dest.to_string(),
    };
    let mut upstream = format!("{method} {path} {version}\r\nHost: {host}\r\n");
    for header in &headers {
        let name = header.split(':').next().unwrap_or_default().to_ascii_lowercase();
        if name.starts_with("proxy-") || ["connection", "keep-alive", "host"].contains(&&*name) {
            continue;
        }
        upstream.push_str(header);
        upstream.push_str("\r\n");
    }
    upstream.push_str("Connection: close\r\n\r\n");
    Ok(Request { method: method.to_owned(), dest, upstream_head: upstream.into_bytes() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_names_its_destination() {
        let r = parse(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(r.is_connect());
        assert_eq!(r.dest.to_string(), "api.example.com:443");
        assert!(r.upstream_head.is_empty());
    }

    #[test]
    fn a_plain_request_is_rewritten_to_origin_form_without_proxy_headers() {
        let head = b"GET http://h.test:8080/a?b=1 HTTP/1.1\r\nHost: h.test:8080\r\nProxy-Authorization: x\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
        let r = parse(head).unwrap();
        assert_eq!(r.dest.to_string(), "h.test:8080");
        assert_eq!(
            String::from_utf8(r.upstream_head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: h.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let r = parse(b"GET http://h.test HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(r.dest.port, 80);
        assert!(String::from_utf8(r.upstream_head).unwrap().starts_with("GET / HTTP/1.1\r\n"));
    }

    #[test]
    fn the_upstream_is_told_the_authority_it_was_reached_by() {
        let upstream = |head: &[u8]| String::from_utf8(parse(head).unwrap().upstream_head).unwrap();
        assert_eq!(
            upstream(b"GET http://a.test/ HTTP/1.1\r\nHost: other.test\r\nHOST: x\r\n\r\n"),
            "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        );
        assert!(
            upstream(b"GET http://[::1]:81/ HTTP/1.1\r\n\r\n").contains("\r\nHost: [::1]:81\r\n")
        );
        assert!(
            upstream(b"GET http://u@b.test:80/ HTTP/1.1\r\n\r\n").contains("\r\nHost: b.test\r\n")
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_malformed() {
        for head in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET https://h.test/ HTTP/1.1\r\n\r\n",
            b"hello\r\n\r\n",
            b"CONNECT h.test HTTP/1.1\r\n\r\n",
            b"CONNECT h.test:443 SPDY/3\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET http://h\xff/ HTTP/1.1\r\n\r\n",
            b"GET http://h.test/a\nb HTTP/1.1\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\nX: a\nHost: b\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\nX: a\r\n folded: b\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\nX : a\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\n: a\r\n\r\n",
            b"GET http://h.test/ HTTP/1.1\r\nX: a\0b\r\n\r\n",
        ] {
            assert!(matches!(parse(head), Err(HeadError::Malformed(_))), "{head:?}");
        }
    }

    #[test]
    fn too_many_headers_are_too_large() {
        let mut head = b"GET http://h.test/ HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            head.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        assert!(matches!(parse(&head), Err(HeadError::TooLarge(_))));
    }

    #[tokio::test]
    async fn a_head_is_read_to_its_blank_line_and_what_follows_is_kept() {
        let mut input: &[u8] = b"CONNECT h:1 HTTP/1.1\r\n\r\nearly bytes";
        let (head, rest) = read_head(&mut input).await.unwrap();
        assert_eq!(head, b"CONNECT h:1 HTTP/1.1\r\n\r\n");
        assert_eq!(rest, b"early bytes");
        let big = vec![b'a'; MAX_HEAD_BYTES + 10];
        assert!(matches!(read_head(&mut &big[..]).await, Err(HeadError::TooLarge(_))));
        assert_eq!(read_head(&mut &b"CONNECT h:1 HTTP/1.1\r\n"[..]).await, Err(HeadError::Closed));
    }
}
