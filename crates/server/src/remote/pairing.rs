//! The one-time pairing a person opens with `nucleic pair` (or the cockpit on the host's own
//! machine): a fresh 256-bit secret, valid for [`PAIRING_TTL`] and for one device only, and the
//! link that carries it with everything a device needs to pair: the relay, the host id and the
//! host's static key. The secret travels in the link's fragment, which browsers never send to
//! a server (the relay or whoever serves the app never sees it).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use nucleic_channel::{PairingSecret, PublicKey};

/// How long a pairing link can be used.
pub const PAIRING_TTL: Duration = Duration::from_secs(600);

/// An open pairing.
#[derive(Debug)]
struct Open {
    secret: PairingSecret,
    name: String,
    expires: Instant,
}

/// The daemon's pairing: at most one open at a time (a new one replaces the old link).
#[derive(Debug, Default)]
pub struct Pairing {
    open: Mutex<Option<Open>>,
}

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
    /// Direct addresses of the host's LAN listener (`ws://…`), if it has one.
    pub lan: Vec<String>,
    /// The host's machine name, so that a device paired with several hosts can tell them apart.
    pub host_name: Option<String>,
}

impl PairingLink {
    /// `<app>/#pair&r=<relay>&h=<host id>&k=<host key>&s=<secret>&n=<name>[&l=<lan>…][&m=<machine>]`
    /// (keys base64url).
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
}

/// Longest machine name a link carries.
const MAX_MACHINE_NAME: usize = 64;

/// This machine's name (the kernel's host name), if it has a printable one.
pub(crate) fn machine_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| printable_name(&text))
}

/// A name trimmed, at most [`MAX_MACHINE_NAME`] characters, with no control characters; none
/// when empty.
fn printable_name(text: &str) -> Option<String> {
    let name: String =
        text.trim().chars().filter(|c| !c.is_control()).take(MAX_MACHINE_NAME).collect();
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

impl Pairing {
    /// Opens a pairing (replacing one still open): its secret, valid for `ttl`.
    pub fn open(
        &self,
        name: &str,
        ttl: Duration,
    ) -> Result<PairingSecret, nucleic_channel::ChannelError> {
        let secret = PairingSecret::generate()?;
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *open = Some(Open {
            secret: secret.clone(),
            name: name.to_owned(),
            expires: Instant::now() + ttl,
        });
        Ok(secret)
    }

    /// The secret on offer, if a pairing is open and unexpired.
    pub fn secret(&self) -> Option<PairingSecret> {
        let open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.as_ref().filter(|o| Instant::now() < o.expires).map(|o| o.secret.clone())
    }

    /// Spends the pairing if `secret` is still the one on offer and unexpired: the name to
    /// record the device under. Single use: a second device gets `None`.
    pub fn spend(&self, secret: &PairingSecret) -> Option<String> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match open.take() {
            Some(o) if o.secret == *secret && Instant::now() < o.expires => Some(o.name),
            other => {
                *open = other.filter(|o| Instant::now() < o.expires);
                None
            }
        }
    }
}

/// The link as a QR code for a terminal (two rows of modules per line).
pub fn qr_terminal(text: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::L).ok()?;
    Some(code.render::<qrcode::render::unicode::Dense1x2>().quiet_zone(true).build())
}

/// The link as a QR code in SVG (for the cockpit's pairing sheet).
pub fn qr_svg(text: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::L).ok()?;
    Some(code.render::<qrcode::render::svg::Color<'_>>().min_dimensions(240, 240).build())
}

/// The reply to `pairDevice`: the link, with a QR code, or why not. Never remembered (it
/// carries the secret); refused through the relay (a stolen phone must not mint links).
pub fn answer(
    state: &crate::AppState,
    message_id: &str,
    name: Option<String>,
    ttl_secs: Option<u32>,
    through_channel: bool,
) -> nucleic_protocol::HostMessage {
    use nucleic_protocol::{HostMessage, IntentResult, Pairing, ProtocolErrorCode};
    let refuse = |code: ProtocolErrorCode, why: &str| {
        crate::dispatch::error(Some(message_id.to_owned()), code, why)
    };
    if through_channel {
        return refuse(
            ProtocolErrorCode::Unauthorized,
            "pairing links are opened on the host's own machine, not through the relay",
        );
    }
    let Some(remote) = state.remote() else {
        return refuse(
            ProtocolErrorCode::InvalidRequest,
            "remote access is off: start the daemon with `nucleic serve --relay URL` to pair a device",
        );
    };
    let name = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    let name = name.unwrap_or_else(|| "paired device".to_owned());
    if name.chars().count() > 64 {
        return refuse(ProtocolErrorCode::InvalidRequest, "a device name is at most 64 characters");
    }
    let ttl = ttl_secs.map_or(PAIRING_TTL, |s| Duration::from_secs(u64::from(s)).min(PAIRING_TTL));
    match remote.open_pairing(&name, ttl) {
        Ok(link) => {
            let url = link.url();
            let expires_at = std::time::SystemTime::now()
                .checked_add(ttl)
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis());
            HostMessage::Ack {
                message_id: message_id.to_owned(),
                result: Some(IntentResult::Pairing(Pairing {
                    qr_svg: qr_svg(&url),
                    link: url,
                    host_id: link.host_id,
                    host_key: URL_SAFE_NO_PAD.encode(link.host_key.as_bytes()),
                    relay: link.relay,
                    lan: link.lan,
                    expires_at: u64::try_from(expires_at).unwrap_or(u64::MAX),
                })),
            }
        }
        Err(e) => refuse(ProtocolErrorCode::Internal, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pairing_is_spent_once_and_expires() {
        let p = Pairing::default();
        assert!(p.secret().is_none());
        let s = p.open("phone", PAIRING_TTL).unwrap();
        assert_eq!(p.secret(), Some(s.clone()));
        assert_eq!(p.spend(&s).as_deref(), Some("phone"));
        assert_eq!(p.spend(&s), None, "single use");
        assert!(p.secret().is_none());
        let old = p.open("a", PAIRING_TTL).unwrap();
        let new = p.open("b", PAIRING_TTL).unwrap();
        assert_eq!(p.spend(&old), None, "a replaced link is dead");
        assert_eq!(p.spend(&new).as_deref(), Some("b"));
        let s = p.open("c", Duration::from_millis(0)).unwrap();
        assert!(p.secret().is_none(), "expired");
        assert_eq!(p.spend(&s), None);
    }

    #[test]
    fn a_machine_name_is_trimmed_bounded_and_printable() {
        assert_eq!(printable_name("studio\n").as_deref(), Some("studio"));
        assert_eq!(printable_name("a\u{1b}[31mb").as_deref(), Some("a[31mb"));
        assert_eq!(printable_name(&"x".repeat(300)).map(|n| n.len()), Some(MAX_MACHINE_NAME));
        assert_eq!(printable_name(" \n"), None);
        assert!(machine_name().is_some_and(|n| !n.is_empty()));
    }

    #[test]
    fn the_link_carries_everything_in_its_fragment() {
        let link = PairingLink {
            app: "https://relay.example/".into(),
            relay: "wss://relay.example".into(),
            host_id: "ab".repeat(32),
            host_key: PublicKey([1; 32]),
            secret: PairingSecret([2; 32]),
            name: "my phone".into(),
            lan: vec!["ws://192.168.1.5:7879".into()],
            host_name: Some("studio box".into()),
        };
        let url = link.url();
        assert!(url.starts_with("https://relay.example/#pair&r=wss%3A%2F%2Frelay.example&h=abab"));
        assert!(url.ends_with("&n=my%20phone&l=ws%3A%2F%2F192.168.1.5%3A7879&m=studio%20box"));
        let nameless = PairingLink { host_name: None, ..link }.url();
        assert!(!nameless.contains("&m="), "{nameless}");
        assert!(url.contains(&URL_SAFE_NO_PAD.encode([2u8; 32])));
        assert!(qr_terminal(&url).unwrap().lines().count() > 20);
        assert!(qr_svg(&url).unwrap().starts_with("<?xml"));
    }

    /// The link of the published vectors (`docs/channel-vectors.json`, `docs/channel.md`).
    #[test]
    fn the_published_vectors_link_is_what_the_host_makes() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../../docs/channel-vectors.json")).unwrap();
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
    }
}
