//! A hand-written HTTP/1.1 client for the mock servers' integration tests.
// Test code: a malformed response should fail the test loudly.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Chunked body ended with the zero-size chunk (always true when not chunked).
    pub complete: bool,
}

impl RawResponse {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    /// `(event, data)` pairs of an SSE body; every `data.type` names its event.
    pub fn events(&self) -> Vec<(String, Value)> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|frame| {
                let mut lines = frame.lines();
                let event = lines.next().unwrap().strip_prefix("event: ").unwrap();
                let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
                assert!(lines.next().is_none(), "one data line per frame: {frame:?}");
                let data: Value = serde_json::from_str(data).unwrap();
                assert_eq!(data["type"], event, "data.type names the event");
                (event.to_owned(), data)
            })
            .collect()
    }
    /// The event names of an SSE body.
    pub fn names(&self) -> Vec<String> {
        self.events().into_iter().map(|(e, _)| e).collect()
    }
}

/// Connect to `addr` and write one request with `headers` (`name: value\r\n` lines) and a JSON
/// `body`; the connection closes after the response.
pub async fn send(
    addr: &str,
    headers: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{headers}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Read and parse the whole response on `stream`, failing after 10 s.
pub async fn receive(stream: &mut TcpStream) -> RawResponse {
    let raw = tokio::time::timeout(Duration::from_secs(10), read_all(stream)).await.unwrap();
    parse(&raw)
}

/// Read until EOF or a connection error, keeping whatever arrived.
pub async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Split a raw response into status, headers and (de-chunked) body.
pub fn parse(raw: &[u8]) -> RawResponse {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    if !chunked {
        return RawResponse { status, headers, body: rest.to_vec(), complete: true };
    }
    let mut body = Vec::new();
    let mut complete = false;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_text = std::str::from_utf8(&rest[..eol]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            complete = true;
            break;
        }
        let start = eol + 2;
        if rest.len() < start + size + 2 {
            body.extend_from_slice(&rest[start.min(rest.len())..]);
            break;
        }
        body.extend_from_slice(&rest[start..start + size]);
        rest = &rest[start + size + 2..];
    }
    RawResponse { status, headers, body, complete }
}
