//! The pairing link `nucleic pair` prints, written by the host and read by a device:
//! `<app>/#pair&r=<relay>&h=<host id>&k=<host key>&s=<secret>&n=<name>[&l=<lan>…][&m=<machine>]`.
//! `k` and `s` are base64url without padding (32 bytes each); `h` is 64 lowercase hex digits;
//! `r`, `n`, `l` and `m` are percent-encoded. Everything is in the fragment, which a browser never
//! sends to a server. The browser's reader is `web/src/remote/link.ts`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::{KEY_LEN, PairingSecret, PublicKey};

/// Longest device or machine name a link carries, in characters.
pub const MAX_LINK_NAME: usize = 64;

/// What a device needs to pair, as carried by the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingLink {
    /// Where the cockpit is served (the link's base).
    pub app: String,
    /// The relay's WebSocket base URL (`ws://` or `wss://`).
    pub relay: String,
    pub host_id: String,
    pub host_key: PublicKey,
    pub secret: PairingSecret,
    /// The name the device is recorded under.
    pub name: String,
    /// Direct addresses of the host's LAN listener (`ws://host:port`), if it has one.
    pub lan: Vec<String>,
    /// The host's machine name, so that a device paired with several hosts can tell them apart.
    pub host_name: Option<String>,
}

/// Why a pairing link cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("not a pairing link (no `#pair&` fragment)")]
    NotALink,
    #[error("the pairing link's {0} is missing")]
    Missing(&'static str),
    #[error("the pairing link's {field} is malformed: {why}")]
    Malformed { field: &'static str, why: &'static str },
}

impl PairingLink {
    /// The link as text.
    pub fn url(&self) -> String {
        let app = self.app.trim_end_matches('/');
        let mut url = format!(
            "{app}/#pair&r={}&h={}&k={}&s={}&n={}",
            encode_component(&self.relay),
            self.host_id,
            URL_SAFE_NO_PAD.encode(self.host_key.as_bytes()),
            URL_SAFE_NO_PAD.encode(self.secret.0),
            encode_component(&self.name),
        );
        for lan in &self.lan {
            url.push_str("&l=");
            url.push_str(&encode_component(lan));
        }
        if let Some(machine) = &self.host_name {
            url.push_str("&m=");
            url.push_str(&encode_component(machine));
        }
        url
    }

    /// Reads a link, checking every field as a device must before trusting it: the relay a
    /// `ws(s)://` URL, the host id 64 hex digits, the key and the secret 32 bytes each, LAN
    /// addresses `ws(s)://host[:port]` (others dropped), names printable and bounded.
    pub fn parse(link: &str) -> Result<PairingLink, LinkError> {
        let link = link.trim();
        let (app, fragment) = link.split_once('#').ok_or(LinkError::NotALink)?;
        let fields = fragment.strip_prefix("pair&").ok_or(LinkError::NotALink)?;
        let (mut relay, mut host_id, mut key, mut secret, mut name) =
            (None, None, None, None, None);
        let (mut lan, mut host_name) = (Vec::new(), None);
        for pair in fields.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let malformed = |field, why| LinkError::Malformed { field, why };
            let text = |field| decode_component(v).ok_or(malformed(field, "bad percent-encoding"));
            match k {
                "r" => relay = Some(text("relay (r)")?),
                "h" => host_id = Some(v.to_owned()),
                "k" => key = Some(v.to_owned()),
                "s" => secret = Some(v.to_owned()),
                "n" => name = Some(text("device name (n)")?),
                "l" => lan.push(text("LAN address (l)")?),
                "m" => host_name = printable(&text("machine name (m)")?),
                _ => {}
            }
        }
        let relay = relay.ok_or(LinkError::Missing("relay (r)"))?;
        if !is_websocket_url(&relay, true) {
            return Err(LinkError::Malformed {
                field: "relay (r)",
                why: "not a ws:// or wss:// URL",
            });
        }
        let host_id = host_id.ok_or(LinkError::Missing("host id (h)"))?;
        if host_id.len() != 64 || !host_id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(LinkError::Malformed { field: "host id (h)", why: "not 64 hex digits" });
        }
        let key = key32(key, "host key (k)")?;
        let secret = key32(secret, "secret (s)")?;
        Ok(PairingLink {
            app: app.trim_end_matches('/').to_owned(),
            relay,
            host_id,
            host_key: PublicKey(key),
            secret: PairingSecret(secret),
            name: name.as_deref().and_then(printable).unwrap_or_else(|| "paired device".into()),
            lan: lan.into_iter().filter(|l| is_websocket_url(l, false)).collect(),
            host_name,
        })
    }
}

/// 32 bytes from base64url, or why not.
fn key32(text: Option<String>, field: &'static str) -> Result<[u8; KEY_LEN], LinkError> {
    let text = text.ok_or(LinkError::Missing(field))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| LinkError::Malformed { field, why: "not base64url" })?;
    bytes.try_into().map_err(|_| LinkError::Malformed { field, why: "not 32 bytes" })
}

/// `ws://` or `wss://` and a host with no white space (and, unless `path_ok`, nothing after
/// the authority).
fn is_websocket_url(url: &str, path_ok: bool) -> bool {
    let Some(rest) = url.strip_prefix("ws://").or_else(|| url.strip_prefix("wss://")) else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    !authority.is_empty()
        && !rest.contains(char::is_whitespace)
        && (path_ok || authority.len() == rest.len())
}

/// A name trimmed, at most [`MAX_LINK_NAME`] characters, without control characters; none when
/// empty.
pub fn printable(text: &str) -> Option<String> {
    let name: String =
        text.trim().chars().filter(|c| !c.is_control()).take(MAX_LINK_NAME).collect();
    (!name.is_empty()).then_some(name)
}

/// Percent-encodes everything but unreserved characters.
fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-decodes (a `+` is a space, as in a query string); `None` for a bad escape or bytes
/// that are not UTF-8.
fn decode_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> PairingLink {
        PairingLink {
            app: "https://relay.example".into(),
            relay: "wss://relay.example".into(),
            host_id: "ab".repeat(32),
            host_key: PublicKey([1; 32]),
            secret: PairingSecret([2; 32]),
            name: "my phone".into(),
            lan: vec!["ws://192.168.1.5:7879".into()],
            host_name: Some("studio box".into()),
        }
    }

    #[test]
    fn the_link_carries_everything_in_its_fragment_and_reads_back() {
        let url = link().url();
        assert!(url.starts_with("https://relay.example/#pair&r=wss%3A%2F%2Frelay.example&h=abab"));
        assert!(url.ends_with("&n=my%20phone&l=ws%3A%2F%2F192.168.1.5%3A7879&m=studio%20box"));
        assert!(url.contains(&URL_SAFE_NO_PAD.encode([2u8; 32])));
        assert_eq!(PairingLink::parse(&url), Ok(link()));
        let nameless = PairingLink { host_name: None, lan: vec![], ..link() };
        assert!(!nameless.url().contains("&m="));
        assert_eq!(PairingLink::parse(&nameless.url()), Ok(nameless));
    }

    #[test]
    fn a_bad_link_says_which_field_is_wrong() {
        let url = link().url();
        let cases = [
            ("https://x/#other".to_owned(), "not a pairing link"),
            (url.replace("&h=", "&x="), "host id (h) is missing"),
            (url.replace("&h=ab", "&h=zz"), "host id (h) is malformed"),
            (url.replace("r=wss", "r=http"), "relay (r) is malformed"),
            (url.replace("&k=", "&k=AAAA"), "host key (k) is malformed"),
            (url.replace("&s=", "&s=%%"), "secret (s) is malformed"),
            (url.replace("&n=my", "&n=%ZZ"), "device name (n) is malformed"),
        ];
        for (bad, says) in cases {
            let err = PairingLink::parse(&bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn hostile_names_and_addresses_are_tamed() {
        let url = format!(
            "{}&n=%1B%5B31m{}&l=ws%3A%2F%2Fa%2Fpath&l=http%3A%2F%2Fb&m=%07",
            link().url().split("&n=").next().unwrap(),
            "x".repeat(300)
        );
        let parsed = PairingLink::parse(&url).unwrap();
        assert_eq!(parsed.name, format!("[31m{}", "x".repeat(MAX_LINK_NAME - 4)));
        assert!(parsed.lan.is_empty(), "{:?}", parsed.lan);
        assert_eq!(parsed.host_name, None);
    }

    /// The link of the published vectors (`docs/channel-vectors.json`, `docs/channel.md`).
    #[test]
    fn the_published_vectors_link_is_what_the_host_makes() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/channel-vectors.json")).unwrap();
        let key = |name: &str| -> [u8; 32] {
            let s = v["keys"][name].as_str().unwrap();
            let b: Vec<u8> =
                (0..64).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect();
            b.try_into().unwrap()
        };
        let link = &v["link"];
        let made = PairingLink {
            app: link["app"].as_str().unwrap().into(),
            relay: link["relay"].as_str().unwrap().into(),
            host_id: v["hostID"].as_str().unwrap().into(),
            host_key: PublicKey(key("hostStaticPublic")),
            secret: PairingSecret(key("pairingSecret")),
            name: link["name"].as_str().unwrap().into(),
            lan: Vec::new(),
            host_name: Some(link["machine"].as_str().unwrap().into()),
        };
        assert_eq!(made.url(), link["url"].as_str().unwrap());
        assert_eq!(URL_SAFE_NO_PAD.encode(made.host_key.as_bytes()), link["hostKey"]);
        assert_eq!(URL_SAFE_NO_PAD.encode(made.secret.0), link["secret"]);
        // …and a device reads it back to the same fields.
        assert_eq!(PairingLink::parse(&made.url()), Ok(made));
    }
}
